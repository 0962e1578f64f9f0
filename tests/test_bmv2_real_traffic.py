"""IWA on real traffic, on BMv2 against the reference model packet for packet (issue 32): flow state that
cannot go stale, closes from either side, the window retracted after a response and the next one a new
start, TCP Fast Open, IPv6 (link by prefix, window rewrite and checksum), and the standing-queue control for
datagrams. Every sequence runs through ``test_bmv2_pipeline.run_mixed`` (BMv2's records and both directions'
frames must be the model's); each test also checks, on the model, that its sequence exercises what it is
about. Skipped, with the reason shown, where the P4 toolchain is missing.
"""

from __future__ import annotations

import dataclasses

import pytest
from frames import LINUX_SYN, MSS, audio, client_ack, client_syn, syn_ack, tcp, tcp_fields
from scapy.all import IP, UDP, Ether, IPv6, Raw, raw
from test_bmv2_pipeline import REASON, ROUTES, compiled, run_differential, run_mixed, sw  # noqa: F401

from refmodel import Pipeline, Reason, TrafficClass
from refmodel.constants import TrackFlag
from refmodel.params import pipeline_params

pytestmark = [pytest.mark.bmv2, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

SERVER6, CLIENT6 = "fd00::1", "fd00:0:0:1::1"
LINK6 = "fd00:0:0:1::/64"  # the IPv6 client's delegated prefix
MSS6 = MSS - 20  # a full segment over IPv6 (its header is 20 B longer)


def handshake(port: int, isn: int = 1000, server_rtt: float = 0.0, **addr) -> list:
    """A client's SYN, the server's SYN-ACK ``server_rtt`` later, the client's first ACK and a request."""
    down = {"src": addr["server"], "dst": addr["client"]} if addr else {}
    up = {"src": addr["client"], "dst": addr["server"]} if addr else {}
    items = [(2, client_syn(options=LINUX_SYN, sport=port, **up))]
    items += [("sleep", server_rtt)] if server_rtt else []
    items += [(1, syn_ack(isn, dport=port, ack=5001, options=[("MSS", 1460), ("WScale", 9)], **down)),
              (2, client_ack(isn + 1, window=502, sport=port, **up)),
              (2, client_ack(isn + 1, window=502, seq=5001, payload=120, flags="PA", sport=port, **up))]
    return items


class ModelDriver:
    """The model paced as ``run_mixed`` paces BMv2: a frame every ``step_ns``, ``("sleep", s)`` lets time pass,
    ``("link", (link, params))`` writes a link's parameters at run time. Fed in parts, so that a test's servers
    can send what the windows the model gave them allow: ``edges`` holds, per client port, the window edge the
    last ACK of it that the model tracked left upstream; ``items`` is everything fed, to replay on BMv2."""

    def __init__(self, params, step_ns: int = 2_000_000, **kw) -> None:
        self.pipeline, self.step_ns, self.t = Pipeline(ROUTES, params, **kw), step_ns, 0
        self.edges: dict[int, int] = {}
        self.items: list = []

    def feed(self, items: list) -> list:
        """The model's results of ``items``' frames, in order."""
        out = []
        for port, f in items:
            if port == "link":
                self.pipeline.configure_link(*f)
                continue
            self.t += round(f * 1e9) if port == "sleep" else self.step_ns
            if port == "sleep":
                continue
            r = self.pipeline.process(self.t, f, port)
            if port == 2 and r.record is not None:
                self.edges[tcp_fields(f).sport] = r.record.s1 & 0xFFFFFFFF
            out.append(r)
        self.items += items
        return out


def replay(params, items, step_ns: int = 2_000_000, **kw) -> list:
    """The model's results of ``items`` at ``step_ns`` spacing (``sleep`` items let time pass)."""
    return ModelDriver(params, step_ns, **kw).feed(items)


def shown_on_bmv2(sw, params, items, measure, holds, tries: int = 5, **kw):
    """``measure`` of BMv2's records of ``items`` once ``holds`` it. BMv2 runs in real time: a sequence that needs
    a queue the host keeps above the target is only as well timed as the host sends it, and under a loaded host
    (the whole suite) its queue can drain where the model's at the ideal spacing did not. Every run must agree
    with the model at BMv2's own times, packet for packet (``run_mixed``); a run whose timing did not build the
    scenario is repeated on a fresh switch, up to ``tries`` runs, and the property must hold on one of them. (Five:
    on 2026-11-28 a fresh-clone CI, with the hypervisor taking up to 10 % of the CPU, missed the floor-limit
    sequence's scenario in three runs, each agreeing with the model; run alone it was shown.)"""
    seen = []
    for k in range(tries):
        if k:
            sw.restart(down_s=0.1)
        records, _ = run_mixed(sw, params, items, **kw)
        seen.append(measure(records))
        if holds(seen[-1]):
            return seen[-1]
    raise AssertionError(f"not shown on BMv2 in {tries} runs (each agreeing with the model at its own times): {seen}")


# --------------------------------------------------------------------------- nothing goes stale

STALE = pipeline_params(2e6, "iwa", limit_pkts=48, iwa=dict(hold_s=0.1, age_s=0.3))
CLOSES = ("client FIN", "server FIN", "client RST", "server RST", None)  # None: just silent


def stale_history(n: int = 40) -> list:
    """n keep-alive connections that each get one segment, go silent past two epochs and the slots' age, and
    then close, each a fifth of them one of the four ways (or never)."""
    items = []
    for k in range(n):
        port = 41000 + k
        items += handshake(port, isn=100_000 * (k + 1))
        items += [(1, tcp(100_000 * (k + 1) + 1, payload=1000, dport=port)),
                  (2, client_ack(100_000 * (k + 1) + 1001, window=502, seq=5121, sport=port))]
    items.append(("sleep", 0.5))
    for k in range(n):
        how, port, ack = CLOSES[k % len(CLOSES)], 41000 + k, 100_000 * (k + 1) + 1001
        if how is None:
            continue
        who, flag = how.split()
        f = "FA" if flag == "FIN" else "R"
        items.append((2, client_ack(ack, seq=5121, flags=f, sport=port)) if who == "client"
                     else (1, tcp(ack, 0, f, dport=port, ack=5121)))
    return items + [("sleep", 0.05)]


def lone_flow(port: int = 60000, rounds: int = 5, params=STALE) -> list:
    """A lone flow whose server fills the window a clean switch gives it, round after round (the model, at
    2 ms spacing, says which): each round's ACK comes 0.1 s after its segments."""
    clean, seq = ModelDriver(params), 7_000_001
    clean.feed(handshake(port, isn=7_000_000, server_rtt=0.02))
    for _ in range(rounds):
        n = max(1, (clean.edges[port] - seq) // MSS)
        new = [(1, tcp(seq + i * MSS, dport=port)) for i in range(n)] + [("sleep", 0.1)]
        seq += n * MSS
        new.append((2, client_ack(seq, window=502, seq=5121, sport=port)))
        clean.feed(new)
    return clean.items


def test_the_stale_sequence_keeps_counts_on_the_model():
    """The sequence exercises the count: after it the model counts the lone flow alone (IWA 2 counted the
    silent ones for ever), and a model that never forgets (epochs that never end) writes other windows."""
    import refmodel.shaper as shaper
    items = stale_history() + lone_flow()
    lived = ModelDriver(STALE)
    lived.feed(items)
    assert lived.pipeline.shaper.nflows == 1
    orig = shaper.LinkShaping.roll
    shaper.LinkShaping.roll = lambda self, hold, now: None  # counts never expire
    try:
        stuck = [r.frame for r in replay(STALE, items)]
    finally:
        shaper.LinkShaping.roll = orig
    assert stuck != [r.frame for r in replay(STALE, items)]


def test_stale_history_leaves_a_new_flow_the_windows_of_a_clean_switch(sw):
    """Issue 32's sequence on BMv2: 40 connections, one segment each, silent, then closed four ways (or not
    at all); then a lone flow. BMv2 agrees with the model packet for packet, and every window the lone flow
    gets is the one a clean switch gives it at the same instants."""
    history, lone = stale_history(), lone_flow()
    records, _ = run_mixed(sw, STALE, history + lone)
    frames = [it for it in history + lone if it[0] != "sleep"]
    # every frame of the lone flow has a record (its SYN and ACKs: IWA's upstream records): replay them at those
    # instants on a clean model and on one that lived the history, with the times BMv2 gave them
    stale, clean = Pipeline(ROUTES, STALE), Pipeline(ROUTES, STALE)
    k, got = 0, []
    for i, (port, f) in enumerate(frames):
        rec = records[min(k, len(records) - 1)]
        r = stale.process(rec.ts_ns, f, port, rand=rec.rand if port == 1 else None)
        k += r.record is not None
        if i >= len(frames) - sum(1 for it in lone if it[0] != "sleep"):
            c = clean.process(rec.ts_ns, f, port, rand=rec.rand if port == 1 else None)
            got.append((r.frame, c.frame))
    ups = [(s, c) for (s, c) in got if tcp_fields(s).sport == 60000]
    assert len(ups) == 3 + 5 and all(s == c for s, c in ups)  # SYN, first ACK, request, one ACK a round
    assert stale.shaper.nflows == clean.shaper.nflows == 1


# --------------------------------------------------------------------------- a response ends; the next starts

IDLE = pipeline_params(2e6, "iwa", limit_pkts=48)


def restart_items(port: int = 40000) -> list:
    """A response of two segments that leaves most of its first window unused; the client's ACK of both, after
    more than two server RTTs; a think time; the next request on the same connection; its first segments."""
    items = handshake(port, server_rtt=0.011)
    items += [(1, tcp(1001, dport=port)), (1, tcp(1001 + MSS, dport=port)), ("sleep", 0.15)]
    items += [(2, client_ack(1001 + 2 * MSS, window=502, seq=5121, sport=port)), ("sleep", 0.3)]
    items += [(2, client_ack(1001 + 2 * MSS, window=502, seq=5121, payload=120, flags="PA", sport=port))]
    items += [(1, tcp(1001 + (2 + j) * MSS, dport=port)) for j in range(3)]
    return items


def test_the_restart_sequence_retracts_and_restarts_on_the_model():
    res = replay(IDLE, restart_items())
    ups = [r for r in res if r.record is not None and r.record.decision == 3 and r.record.tflags & 1]
    edges = [r.record.s1 & 0xFFFFFFFF for r in ups]
    retracted = [i for i in range(1, len(edges)) if edges[i] < edges[i - 1]]
    assert len(retracted) == 1  # the ACK of all the server sent: one MSS (rounded up to the scale) beyond it
    i = retracted[0]
    assert edges[i] - (1001 + 2 * MSS) < MSS + 512
    assert edges[i + 1] == edges[i]  # the next request: the one-MSS window the retraction left, as a new start
    data = [r for r in res if r.record is not None and r.record.decision != 3 and r.cls != TrafficClass.TCP_CTRL]
    assert [r.cls for r in data[-3:]] == [TrafficClass.TCP_START] * 3  # a new start phase


def test_a_response_after_idle_is_a_new_start_like_the_model(sw):
    records, model = run_mixed(sw, IDLE, restart_items())
    assert any(Reason(r.reason) == Reason.IWA_WINDOW for r in records)


# --------------------------------------------------------------------------- a request after an end unseen

def request_items() -> list:
    """Flow B opens; flow A opens and its server sends four segments, up to its first checkpoint; the client's
    ACK of two (the checkpoint reached: the next one's clock starts) and 2 ms later of all four (within two
    server RTTs of it, full segments: an end the switch cannot see); A's next request; 20 ms later an ACK of B's,
    whose room shows the virtual queue (without the rule it has drained to 12 ms by then, with it 44 ms)."""
    items = handshake(40001, isn=7000, server_rtt=0.011) + handshake(40000, server_rtt=0.011)
    items += [(1, tcp(1001 + k * MSS, dport=40000)) for k in range(4)] + [("sleep", 0.15)]
    items += [(2, client_ack(1001 + 2 * MSS, window=502, seq=5121, sport=40000)),
              (2, client_ack(1001 + 4 * MSS, window=502, seq=5121, sport=40000)),
              (2, client_ack(1001 + 4 * MSS, window=502, seq=5121, payload=120, flags="PA", sport=40000)),
              ("sleep", 0.02), (2, client_ack(7001, window=502, seq=5121, sport=40001))]
    return items


def test_a_request_after_an_unseen_end_joins_the_virtual_queue_on_the_model(monkeypatch):
    """The request puts A's window (edge - ACK) in the link's virtual queue: B's ACK after it finds that much less
    room than with the rule taken out."""
    import refmodel.shaper as shaper

    def b_room() -> int:
        res = replay(IDLE, request_items())
        return res[-1].record.s2 & 0xFFFFFFFF
    with_rule = b_room()
    monkeypatch.setattr(shaper, "asks", lambda *a: False)
    assert with_rule < b_room()


def test_a_request_after_an_unseen_end_joins_the_virtual_queue_like_the_model(sw):
    records, model = run_mixed(sw, IDLE, request_items())
    assert sum(r.reason in (Reason.IWA_WINDOW, Reason.UPSTREAM) for r in records) >= 6

# --------------------------------------------------------------------------- closes, TFO

def test_closes_from_either_side_uncount_like_the_model(sw):
    """Four shaped flows closed one way each, then a fifth flow's ACKs: BMv2 uncounts as the model does (a
    flow counted too many, or too few, would change the fifth flow's share and windows)."""
    items = []
    for k in range(4):
        items += handshake(40000 + k)
    items += [(1, tcp(1001, dport=40000 + k)) for k in range(4)] + [("sleep", 0.05)]
    items += [(2, client_ack(1001, seq=5121, flags="FA", sport=40000)), (1, tcp(1001 + MSS, 0, "FA", dport=40001)),
              (2, client_ack(1001, seq=5121, flags="R", sport=40002)), (1, tcp(1001 + MSS, 0, "R", dport=40003))]
    items += lone_flow(40004, rounds=3, params=IDLE)
    records, model = run_mixed(sw, IDLE, items)
    assert model.shaper.nflows == 1


def coarse_items() -> list:
    """Two flows, each its handshake, its request, and its server's first four segments: one with Linux's window
    scale (7), one with a scale of 12, whose smallest window above zero (4096 B) exceeds one MSS."""
    items = handshake(40000)
    items += [(2, client_syn(options=[("MSS", 1460), ("WScale", 12)], sport=40001)),
              (1, syn_ack(2000, dport=40001, ack=5001, options=[("MSS", 1460), ("WScale", 9)])),
              (2, client_ack(2001, window=502, sport=40001)),
              (2, client_ack(2001, window=502, seq=5001, payload=120, flags="PA", sport=40001))]
    return items + [(1, tcp(isn + 1 + j * MSS, dport=port)) for port, isn in ((40000, 1000), (40001, 2000))
                    for j in range(4)]


def test_a_scale_too_coarse_for_a_floor_is_left_to_the_standing_queue_control_like_the_model(sw):
    """A client whose window scale makes every window a multiple of 4 kB (shift 12) cannot be held at a one-MSS
    floor: IWA leaves its ACKs as the client wrote them and its data is the standing-queue control's (TCP_EST),
    while the flow beside it with Linux's scale is shaped; on BMv2 as in the model."""
    items = coarse_items()
    res = replay(IDLE, items)
    frames = [f for port, f in items if port != "sleep"]
    acks = [(f, r) for f, r in zip(frames, res) if tcp_fields(f).dport == 80 and r.record is not None]
    assert {tcp_fields(f).sport for f, r in acks if r.frame != f} == {40000}  # rewritten: the shaped flow's only
    assert any(tcp_fields(f).sport == 40001 for f, _ in acks)
    classes = {tcp_fields(f).dport: r.cls for f, r in zip(frames, res) if tcp_fields(f).dport in (40000, 40001)
               and len(tcp_fields(f).payload)}
    assert classes == {40000: TrafficClass.TCP_START, 40001: TrafficClass.TCP_EST}
    run_mixed(sw, IDLE, items)


def test_tcp_fast_open_data_before_the_first_ack_is_not_surplus_like_the_model(sw):
    """A server's data right after its SYN-ACK (TFO: the request came in the SYN), above target: not beyond an
    edge IWA gave, so not dropped as surplus."""
    items = [(2, client_syn(options=LINUX_SYN, sport=40000)),
             (1, syn_ack(1000, dport=40000, ack=5001 + 100, options=[("MSS", 1460), ("WScale", 9)]))]
    items += [(1, tcp(1 + k * MSS, dport=50000)) for k in range(8)]  # a queue above target
    items += [(1, tcp(1001 + k * MSS, dport=40000)) for k in range(10)]
    records, _ = run_mixed(sw, IDLE, items)
    tfo = records[-10:]
    assert all(r.decision == 0 and not r.tflags & TrackFlag.BEYOND for r in tfo)


# --------------------------------------------------------------------------- IPv6

def ipv6_items() -> list:
    addr = dict(server=SERVER6, client=CLIENT6)
    items = handshake(40000, **addr) + handshake(40001, **addr)
    for j in range(3):
        items += [(1, tcp(1001 + j * MSS6, MSS6, dport=p, src=SERVER6, dst=CLIENT6)) for p in (40000, 40001)]
        items += [("sleep", 0.03)]
        items += [(2, client_ack(1001 + (j + 1) * MSS6, window=502, seq=5121, sport=p, src=CLIENT6, dst=SERVER6))
                  for p in (40000, 40001)]
    items += [(1, audio(src=SERVER6, dst=CLIENT6))]
    return items


def test_ipv6_flows_are_shaped_on_their_prefixs_link_like_the_model(sw):
    """TCP over IPv6 shaped as over IPv4 (window rewritten, TCP checksum patched), on the link its client's
    prefix maps to (link_of6), which has a rate of its own; BMv2 agrees packet for packet, and the checksums of
    the rewritten ACKs are what Scapy computes from scratch."""
    links = {1: pipeline_params(1e6, "iwa", limit_pkts=24)}
    records, _ = run_mixed(sw, IDLE, ipv6_items(), links=links, clients={LINK6: 1})
    assert {r.link for r in records} == {1} and {r.ipver for r in records} == {6}
    assert any(Reason(r.reason) == Reason.IWA_WINDOW for r in records)
    rewritten = [r.frame for r in replay(IDLE, ipv6_items(), links={LINK6: 1}, link_params=links)
                 if r.reason == Reason.IWA_WINDOW]
    assert rewritten
    for f in rewritten:
        pkt = Ether(f)
        sent = pkt[IPv6].payload.chksum
        del pkt[IPv6].payload.chksum
        assert Ether(raw(pkt))[IPv6].payload.chksum == sent


# --------------------------------------------------------------------------- datagrams: the standing-queue control

def test_datagrams_no_window_holds_never_exceed_the_target_like_the_model(sw):
    """A UDP flood at twice the link rate (QUIC-like; over IPv6, then over IPv4) with the audio among it, under
    IWA: no window holds the flood, and alone it would queue beyond IWA's target, so its frames beyond it are
    dropped, never the audio's small frames, as the model says."""
    big4 = raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=9, dport=9) / Raw(b"x" * 1472))
    big6 = raw(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02") / IPv6(src=SERVER6, dst=CLIENT6)
               / UDP(sport=9, dport=9) / Raw(b"x" * 1452))
    small = audio()
    frames = [small if k % 5 == 4 else big6 if k < 100 else big4 for k in range(200)]
    records, _ = run_differential(sw, IDLE, frames, gap_s=0.003)
    assert {r.ipver for r in records if Reason(r.reason) == Reason.IWA_UNHELD} == {0, 6}
    assert not any(r.decision == 1 for r in records if r.length == len(small))  # never a small one
    # one flow alone: never beyond the target and its frame (and the audio's small ones among them); the next
    # flood adds its own up to the target
    assert max(r.sojourn_ns for r in records[:100] if r.decision == 0) <= IDLE.iwa.target_ns + 2 * IDLE.queue.mtu_ns


# --------------------------------------------------------------------------- the floor limit: flows pause

PAUSE = pipeline_params(2e6, "iwa", limit_pkts=200)
PAUSE_STEP_NS = 500_000  # the sequence's spacing: its small datagrams come faster than the link drains them


def standing_queue(n: int = 150) -> list:
    """``n`` datagrams of under a quarter of a frame (only the buffer limit drops those), sent at the sequence's
    spacing: 2.5 times as fast as the link drains them, so their queue stays more than a frame above target
    (docs/iwa.md) through what follows, even if the host sends them late."""
    small = raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=9, dport=9) / Raw(b"x" * 320))
    return [(1, small)] * n


BIG4 = raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=9, dport=9) / Raw(b"x" * 1472))


def unheld_items(nflows: int) -> list:
    """``nflows`` shaped flows opened (each counted at its first ACK), a queue of small datagrams far above the
    target, then 20 full-size datagrams 7.5 ms apart: four fifths of the link, more than the share left them
    beside three flows (a quarter), less than the link."""
    flows = [it for k in range(nflows) for it in handshake(40000 + k, isn=1_000_000 * (k + 1))]
    return flows + standing_queue() + [it for _ in range(20) for it in (("sleep", 0.007), (1, BIG4))]


def test_what_no_window_holds_gets_its_share_beside_shaped_flows_like_the_model(sw):
    """Datagrams (QUIC, a WebRTC flow) beside three active shaped flows count as one flow more: while the queue is
    above the target they keep a quarter of the link, and IWA drops the rest of their full-size frames
    (IWA_UNHELD); alone on the link, coming slower than it, none (the model). On BMv2 as in the model, with the
    share read from the link's counts (start_shaper.p4) and the 64-bit virtual queue (aqm_iwa.p4)."""
    def unheld_drops(results) -> int:
        return sum(r.decision == 1 and r.reason == Reason.IWA_UNHELD for r in results)

    alone = replay(PAUSE, unheld_items(0), step_ns=PAUSE_STEP_NS)
    beside = replay(PAUSE, unheld_items(3), step_ns=PAUSE_STEP_NS)
    assert unheld_drops(alone) == 0 and unheld_drops(beside) >= 5
    shown_on_bmv2(sw, PAUSE, unheld_items(3), lambda records: sum(Reason(r.reason) == Reason.IWA_UNHELD
                                                                   for r in records), lambda n: n >= 5,
                  gap_s=PAUSE_STEP_NS / 1e9)


def pause_items(nflows: int) -> list:
    """``nflows`` shaped flows whose servers each fill the first window the model gives them, a standing queue,
    each flow's ACK of all its server sent, then two ACKs of the second flow that acknowledge nothing (answers
    to its server's zero-window probes), one segment and its ACK."""
    model = ModelDriver(PAUSE, PAUSE_STEP_NS)
    for k in range(nflows):
        model.feed(handshake(40000 + k, isn=1_000_000 * (k + 1)))
    sent = {}
    for k in range(nflows):
        port, isn = 40000 + k, 1_000_000 * (k + 1)
        n = max(1, (model.edges[port] - isn - 1) // MSS)
        model.feed([(1, tcp(isn + 1 + j * MSS, dport=port)) for j in range(n)])
        sent[port] = isn + 1 + n * MSS
    model.feed(standing_queue())
    model.feed([(2, client_ack(sent[40000 + k], seq=5121, sport=40000 + k)) for k in range(nflows)])
    probe = sent[40001]
    model.feed([(2, client_ack(probe, seq=5121, sport=40001)), (2, client_ack(probe, seq=5121, sport=40001)),
                (1, tcp(probe, dport=40001)), (2, client_ack(probe + MSS, seq=5121, sport=40001))])
    return model.items


def upstream_windows(items: list, res: list, sport: int) -> list[tuple[int, int]]:
    """(ACK number, scaled window) of each of ``sport``'s ACKs the model tracked, as they left the switch."""
    scale = dict(LINUX_SYN)["WScale"]
    return [(tcp_fields(f).ack, tcp_fields(r.frame).window << scale) for (port, f), r in
            zip([it for it in items if it[0] != "sleep"], res) if port == 2 and tcp_fields(f).sport == sport
            and r.record is not None]


def edges_of(records, ports) -> list[tuple[int, int]]:
    """(client port, window edge) of each tracked upstream ACK of ``ports`` in BMv2's records."""
    return [(r.sport, r.s1 & 0xFFFFFFFF) for r in records if r.decision == 3 and r.sport in ports]


@pytest.mark.parametrize("nflows", [3, 6])
def test_flows_at_their_floor_pause_above_target_like_the_model(sw, nflows):
    """With the queue more than a frame above target, an ACK of all a floored flow sent shuts its window (zero).
    A probe's answer reopens one MSS (rounded up to the scale), but beyond the floor limit (six flows here: their
    shares of path and budget below one MSS; three: not) the first answer keeps it shut while there is no room,
    and the second reopens it; a second pause in the same epoch only beyond the floor limit; on BMv2 as in the
    model."""
    items = pause_items(nflows)
    res = replay(PAUSE, items, step_ns=PAUSE_STEP_NS)
    scale = dict(LINUX_SYN)["WScale"]
    (probe, shut), (_, first), (_, reopened), last = upstream_windows(items, res, 40001)[-4:]
    assert shut == 0 and PAUSE.iwa.mss_bytes <= reopened < PAUSE.iwa.mss_bytes + (1 << scale)
    assert first == (0 if nflows == 6 else reopened)
    assert last == (probe + MSS, 0 if nflows == 6 else reopened)
    want = [probe, probe + first, probe + reopened, probe + MSS + (0 if nflows == 6 else reopened)]
    shown_on_bmv2(sw, PAUSE, items, lambda records: [r.s1 & 0xFFFFFFFF for r in records
                                                     if r.decision == 3 and r.sport == 40001][-4:],
                  lambda edges: edges == want, gap_s=PAUSE_STEP_NS / 1e9)


def test_first_windows_beyond_the_floor_limit_wait_for_their_probe_like_the_model(sw):
    """Eight connections open behind a standing queue. The first ones get their one-MSS floor; once each flow's
    share of path and budget is below one MSS (the floor limit) a first window finds no room and is shut (zero),
    its request's ACK keeps it shut, the answer to its server's first zero-window probe too (still no room),
    and the second answer reopens one MSS; on BMv2 as in the model."""
    ports = [40100 + k for k in range(8)]
    items = standing_queue() + [it for k, port in enumerate(ports) for it in handshake(port, isn=1_000_000 * (k + 1))]
    last_isn = 1_000_000 * len(ports)
    items += [(2, client_ack(last_isn + 1, seq=5121, sport=ports[-1]))] * 2
    res = replay(PAUSE, items, step_ns=PAUSE_STEP_NS)
    scale = dict(LINUX_SYN)["WScale"]
    firsts = [upstream_windows(items, res, port)[1][1] for port in ports]  # (after its SYN) its first ACK's
    assert firsts[0] >= PAUSE.iwa.mss_bytes and 0 in firsts
    k = firsts.index(0)
    assert all(w >= PAUSE.iwa.mss_bytes for w in firsts[:k]) and not any(firsts[k:]), firsts  # shut from there on
    windows = [w for _, w in upstream_windows(items, res, ports[-1])[1:]]  # first ACK, request, two answers
    assert windows[:3] == [0, 0, 0] and PAUSE.iwa.mss_bytes <= windows[3] < PAUSE.iwa.mss_bytes + (1 << scale)
    want = [(tcp_fields(f).sport, r.record.s1 & 0xFFFFFFFF) for (port, f), r in zip(items, res)
            if port == 2 and tcp_fields(f).sport in ports and r.record is not None]
    shown_on_bmv2(sw, PAUSE, items, lambda records: edges_of(records, ports), lambda got: got == want,
                  gap_s=PAUSE_STEP_NS / 1e9)


CAPPED = pipeline_params(2e6, "iwa", limit_bytes=20_000)  # 80 ms of buffer: floors may join 40 ms of queue


def test_first_windows_that_would_overflow_the_buffer_wait_below_the_floor_limit_like_the_model(sw):
    """Two connections open behind a standing queue that fills a 20 kB buffer (80 ms): below the floor limit,
    but their floors would join more queue than the floors' share of the buffer (the floor cap, half of it:
    docs/iwa.md, "At the floor"), so both first windows are shut, and a probe's answer keeps a window shut,
    the second too (the cap overrides the hold-once) until the queue has drained; then the next reopens one
    MSS; on BMv2 as in the model."""
    assert CAPPED.iwa.floor_cap_ns == CAPPED.queue.limit_ns // 2
    ports = [40200, 40201]
    items = standing_queue() + [it for k, port in enumerate(ports) for it in handshake(port, isn=1_000_000 * (k + 1))]
    probe = [(2, client_ack(1_000_000 * len(ports) + 1, seq=5121, sport=ports[-1]))]
    items += probe * 2 + [("sleep", 0.3)] + probe
    res = replay(CAPPED, items, step_ns=PAUSE_STEP_NS)
    scale = dict(LINUX_SYN)["WScale"]
    windows = [w for _, w in upstream_windows(items, res, ports[-1])[1:]]  # first ACK, request, three answers
    assert windows[:4] == [0, 0, 0, 0], windows
    assert CAPPED.iwa.mss_bytes <= windows[4] < CAPPED.iwa.mss_bytes + (1 << scale), windows
    assert upstream_windows(items, res, ports[0])[1][1] == 0  # the first one's first window too
    want = [(tcp_fields(f).sport, r.record.s1 & 0xFFFFFFFF) for (port, f), r in
            zip([it for it in items if it[0] != "sleep"], res) if port == 2 and tcp_fields(f).sport in ports
            and r.record is not None]
    shown_on_bmv2(sw, CAPPED, items, lambda records: edges_of(records, ports), lambda got: got == want,
                  gap_s=PAUSE_STEP_NS / 1e9)


# --------------------------------------------------------------------------- a rate that rises under the flows

SLOW, FAST = (pipeline_params(r, "iwa", limit_pkts=48) for r in (0.5e6, 2e6))
RISE_PORTS = tuple(range(40000, 40006))


def rising_items(rounds: int = 4, server_rtt: float = 0.15) -> list:
    """Six flows start on a link at 0.5 Mbit/s (their servers ``server_rtt`` away: an RTT at the switch of about
    that), then the link's rate rises fourfold (its own parameters written at run time) and they go on: each
    round every server sends what its window allows (at most 8 segments; the model, at 2 ms spacing, says
    which, the rise included), each client ACKs each segment 0.1 s later."""
    isn = {port: 1_000_000 * (k + 1) for k, port in enumerate(RISE_PORTS)}
    items = [(2, client_syn(options=LINUX_SYN, sport=port)) for port in RISE_PORTS] + [("sleep", server_rtt)]
    for port in RISE_PORTS:
        items += [(1, syn_ack(isn[port], dport=port, ack=5001, options=[("MSS", 1460), ("WScale", 9)])),
                  (2, client_ack(isn[port] + 1, window=502, sport=port)),
                  (2, client_ack(isn[port] + 1, window=502, seq=5001, payload=120, flags="PA", sport=port))]
    drive, seqs = ModelDriver(SLOW), {port: isn[port] + 1 for port in RISE_PORTS}
    windows = []  # (after the rise, the window each ACK left its server with)

    def run(new: list, risen: bool) -> None:
        frames = [(port, f) for port, f in new if port not in ("sleep", "link")]
        for (port, f), r in zip(frames, drive.feed(new)):
            if port == 2 and r.record is not None:
                windows.append((risen, (r.record.s1 - tcp_fields(f).ack) & 0xFFFFFFFF))

    run(items, False)
    for k in range(2 * rounds):
        new = [("link", (0, FAST))] if k == rounds else []
        sent = {}
        for port in RISE_PORTS:
            n = max(1, min(8, (drive.edges[port] - seqs[port]) // MSS))
            new += [(1, tcp(seqs[port] + i * MSS, dport=port)) for i in range(n)]
            sent[port] = n
        new.append(("sleep", 0.1))
        for i in range(max(sent.values())):  # one ACK a segment, the flows' interleaved as their data was
            for port in RISE_PORTS:
                if i < sent[port]:
                    new.append((2, client_ack(seqs[port] + (i + 1) * MSS, window=502, seq=5121, sport=port)))
        for port in RISE_PORTS:
            seqs[port] += sent[port] * MSS
        run(new, k >= rounds)
    return drive.items, windows


def test_a_rate_rise_widens_the_flows_share_like_the_model(sw):
    """After a fourfold rise a flow's share of the path and budget is the new rate's (its RTT converted at each
    ACK), not the one of its first ACK. By hand: an RTT of about 150 ms and the slow link's target (one frame,
    24 ms) make a span of 62.5 kB/s x 0.174 s = 10.9 kB and a share among six flows (>> 3) of 1.36 kB, below
    one MSS: held to it, no window after the rise passes two MSS (the floor, rounded up to the scale); at
    2 Mbit/s the share is about 5.5 kB. On the model, windows after the rise pass 3 MSS; on BMv2 the same,
    packet for packet."""
    items, windows = rising_items()
    before = max(w for risen, w in windows if not risen)
    after = max(w for risen, w in windows if risen)
    assert before <= 2 * MSS + 512 < 3 * MSS < after, (before, after)
    run_mixed(sw, SLOW, items)


# --------------------------------------------------------------------------- the budget cap (a changing rate)

def budget_capped(cap_ns: int):
    p = pipeline_params(2e6, "iwa", limit_pkts=48)
    return dataclasses.replace(p, iwa=dataclasses.replace(p.iwa, budget_cap_ns=cap_ns))


def cap_items() -> list:
    """A server's segments of a flow the switch never saw open (no window holds them) and the audio among them,
    sent as one burst: the queue passes 15 ms after three frames."""
    items = []
    for k in range(12):
        items.append((1, tcp(1000 + k * MSS, dport=50000)))
        if k % 3 == 2:
            items.append((1, audio(k)))
    return items


def test_the_budget_cap_drops_full_size_new_data_beyond_it_like_the_model(sw):
    """With the budget cap armed (15 ms here, below the target so that the cap decides first), every full-size
    frame that would leave more queue than the cap behind it is dropped (IWA_CAP) and the audio's frames pass;
    with no cap none is (the model). On BMv2 as in the model."""
    def caps(results) -> int:
        return sum(r.decision == 1 and r.reason == Reason.IWA_CAP for r in results)

    capped = replay(budget_capped(15_000_000), cap_items(), step_ns=100_000)
    assert caps(capped) >= 6 and caps(replay(budget_capped(0), cap_items(), step_ns=100_000)) == 0
    assert all(r.decision == 0 for r in capped if r.cls == TrafficClass.UDP)
    shown_on_bmv2(sw, budget_capped(15_000_000), cap_items(),
                  lambda records: sum(Reason(r.reason) == Reason.IWA_CAP for r in records), lambda n: n >= 6,
                  gap_s=0.0001)
