"""Fuzz: 10,000 malformed and random frames (truncated headers, bad lengths, IP options, TCP option soup,
fragments, VLAN tags, non-IP, random bytes) in both directions, mixed with real handshakes so the flow
tracker and IWA's window rewriting are exercised, through the reference model with every AQM and through
BMv2 (skipped, with the reason, without the toolchain): no crash, counters consistent, frames keep their
length, and BMv2 and the model agree on every record and every forwarded frame, byte for byte."""

from __future__ import annotations

import random
import struct

import pytest
from frames import CLIENT, MSS, SERVER, audio, client_ack, client_syn, syn_ack, tcp
from scapy.all import IP, TCP, UDP, Dot1Q, Ether, Raw, raw

from accessnet.bmv2_veth import ROUTES, missing_toolchain
from refmodel import Decision, Pipeline
from refmodel.params import pipeline_params

N = 10_000
MAX_FRAME = 1514  # what a 1500-byte MTU link carries (VLAN tags and IP options lengthen full-size frames)
SEED = 20261123
RED_HSPA = dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)
AQMS = {"fifo": {}, "red": {"red": RED_HSPA}, "codel": {}, "pie": {}, "iwa": {}}


def _tcp_frame(rng: random.Random, down: bool) -> bytes:
    port = 40000 + rng.randrange(8)
    flags = rng.choice(["S", "SA", "A", "PA", "FA", "R", "SAE", "AU", ""])
    opts = bytes(rng.randrange(256) for _ in range(rng.choice([0, 4, 8, 12, 20, 40])))
    l4 = TCP(sport=80 if down else port, dport=port if down else 80, flags=flags, seq=rng.getrandbits(32),
             ack=rng.getrandbits(32), window=rng.getrandbits(16), dataofs=5 + len(opts) // 4, options=[])
    ip = IP(src=SERVER if down else CLIENT, dst=CLIENT if down else SERVER, tos=rng.choice([0, 1, 2, 3]))
    return raw(Ether() / ip / l4 / Raw(opts) / Raw(b"x" * rng.choice([0, 1, 100, MSS])))


def _with_ip_options(frame: bytes, rng: random.Random) -> bytes:
    """Random option bytes after the IPv4 header, IHL and total length adjusted (the options themselves
    may be nonsense: the switch must not care)."""
    n = 4 * rng.randrange(1, 11)
    opts = bytes(rng.randrange(256) for _ in range(n))
    ip = bytearray(frame[14:34])
    ip[0] = 0x40 | (5 + n // 4)
    struct.pack_into("!H", ip, 2, len(frame) - 14 + n)
    return frame[:14] + bytes(ip) + opts + frame[34:]


def _patch(frame: bytes, at: int, data: bytes) -> bytes:
    return frame[:at] + data + frame[at + len(data):] if len(frame) >= at + len(data) else frame


def fuzz_frame(rng: random.Random) -> tuple[int, bytes]:
    down = rng.random() < 0.6
    port = 1 if down else 2
    base = _tcp_frame(rng, down) if rng.random() < 0.7 else audio(rng.randrange(1000))
    kind = rng.randrange(12)
    if kind == 0:  # truncated anywhere after the Ethernet header
        f = base[:rng.randrange(14, len(base))]
    elif kind == 1:  # IPv4 total length anything
        f = _patch(base, 16, struct.pack("!H", rng.getrandbits(16)))
    elif kind == 2:  # IHL anything, version anything
        f = _patch(base, 14, bytes([rng.getrandbits(8)]))
    elif kind == 3:
        f = _with_ip_options(base, rng)
    elif kind == 4:  # fragments: first, middle, last, offsets anywhere
        f = _patch(base, 20, struct.pack("!H", rng.choice([0x2000, 0x2000 | rng.getrandbits(13), rng.getrandbits(13)])))
    elif kind == 5:  # VLAN tags, single and double
        inner = base[12:]
        tags = b"\x81\x00" + struct.pack("!H", rng.getrandbits(12))
        if rng.random() < 0.5:
            tags = b"\x88\xa8" + struct.pack("!H", rng.getrandbits(12)) + tags
        f = base[:12] + tags + inner
    elif kind == 6:  # non-IP ethertypes with random payload
        f = base[:12] + struct.pack("!H", rng.choice([0x0806, 0x86DD, 0x88CC, 0x8847, rng.getrandbits(16)])) \
            + bytes(rng.randrange(256) for _ in range(rng.randrange(0, 120)))
    elif kind == 7:  # random bytes
        f = bytes(rng.randrange(256) for _ in range(rng.randrange(14, 200)))
    elif kind == 8:  # TCP data offset anything
        f = _patch(base, 46, bytes([rng.getrandbits(8)])) if base[23] == 6 else base
    elif kind == 9:  # UDP length anything
        f = _patch(base, 38, struct.pack("!H", rng.getrandbits(16))) if base[23] == 17 else base
    elif kind == 10:  # VLAN-tagged TCP built properly
        f = raw(Ether() / Dot1Q(vlan=rng.getrandbits(12)) / IP(base[14:]))
    else:  # the base frame itself (TCP option soup, odd flags)
        f = base
    return port, f[:MAX_FRAME]  # a tag or options on a full segment would not fit the link: cut (one more truncation)


def fuzz_items(n: int = N, seed: int = SEED) -> list[tuple[int, bytes]]:
    """n frames; every 50th slot a real handshake or data segment, so that tracked flows exist."""
    rng = random.Random(seed)
    items: list[tuple[int, bytes]] = []
    while len(items) < n:
        k = len(items) // 50
        if len(items) % 50 == 0:
            sport = 41000 + k % 64
            items += [(2, client_syn(sport=sport, options=[("MSS", 1460), ("WScale", rng.randrange(15))])),
                      (1, syn_ack(1000, dport=sport, ack=5001, options=[("WScale", rng.randrange(15))])),
                      (2, client_ack(1001, window=rng.getrandbits(16), seq=5001, sport=sport)),
                      (1, tcp(1001, dport=sport)),
                      (1, raw(Ether() / IP(src=SERVER, dst=CLIENT) / UDP(sport=5004, dport=5004) / Raw(b"a" * 52)))]
        else:
            items.append(fuzz_frame(rng))
    return items[:n]


@pytest.fixture(scope="module")
def items():
    return fuzz_items()


@pytest.mark.parametrize("aqm", sorted(AQMS))
def test_the_model_survives_fuzz_with_consistent_counters(items, aqm):
    params = pipeline_params(2e6, aqm, limit_pkts=48, **AQMS[aqm])
    p = Pipeline(ROUTES, params, seed=1)
    rng = random.Random(aqm)
    now = 0
    dropped = 0
    for port, f in items:
        now += int(rng.expovariate(1 / 400_000))  # mean 0.4 ms apart: the queue fills and drains
        r = p.process(now, f, port)
        if r.egress is None:
            assert r.decision == Decision.DROP
            dropped += 1
        else:
            assert r.egress == (2 if port == 1 else 1) and len(r.frame) == len(f)  # rewrites keep the length
            if r.frame != f:  # only IWA rewrites (a window), ECN marks (off here) would be the other
                assert aqm == "iwa" and port == 2
    c = p.counters
    assert sum(c.packets) == len(items)  # every frame counted exactly once
    drop_rows = [i for i in range(len(c.packets)) if i % 4 == Decision.DROP]
    assert sum(c.packets[i] for i in drop_rows) == dropped
    down = sum(1 for port, _ in items if port == 1)  # one record per downstream frame; IWA adds tracked ACKs
    assert p.telemetry_seq == down if aqm != "iwa" else p.telemetry_seq > down


def test_fuzz_frames_cover_every_kind():
    it = fuzz_items(2000)
    assert any(len(f) < 34 for _, f in it)  # truncated inside IPv4
    assert any(f[12:14] == b"\x81\x00" for _, f in it) and any(f[12:14] == b"\x88\xa8" for _, f in it)
    assert any(f[12:14] == b"\x08\x00" and f[14] >> 4 == 4 and f[14] & 15 > 5 for _, f in it)  # IP options
    assert any(f[12:14] == b"\x08\x00" and len(f) > 21 and f[20] & 0x3F | f[21] for _, f in it)  # fragments
    assert {p for p, _ in it} == {1, 2}


REASON = missing_toolchain()


@pytest.mark.bmv2
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
@pytest.mark.parametrize("aqm", ["iwa", "fifo"])
def test_bmv2_and_the_model_agree_on_fuzz(items, aqm):
    from accessnet.bmv2_veth import Bmv2, build_p4
    from test_bmv2_pipeline import run_mixed
    build_p4()
    sw = Bmv2(k=0).start()
    try:
        params = pipeline_params(2e6, aqm, limit_pkts=48, **AQMS[aqm])
        records, model = run_mixed(sw, params, items, gap_s=0.001)
        assert sw.alive(), "BMv2 crashed"
        counters = sw.counters()
        for i, n in enumerate(model.counters.packets):
            assert counters.get(i, (0, 0))[0] == n, f"counter {i}"
    finally:
        sw.close()
