"""End to end: the quic1 scenario (one QUIC connection of 6 streams, 372 kB, HSPA, 2 x BDP) for one short
replication with FIFO and the reference model as the switch, in the lab's own namespaces (the main job,
``accessnet.run``, which leases its slot and cleans up after itself). The captures are the witness: QUIC
crossed the bottleneck, its first flight after the handshake is aioquic's initial window of 10 datagrams,
arriving back to back at the link's rate, and the server's count of lost packets is what the bottleneck
dropped; flows.csv has the page completed and the analysis reads it as a burst."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from accessnet import scenario as scen
from accessnet.addresses import V4
from accessnet.workloads import QUIC_PORT
from experiments.metrics import read_flows, summarize_rep

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")

IW_DATAGRAMS, DATAGRAM = 10, 1200  # aioquic's initial window and max_datagram_size (RFC 9002, RFC 9000 14)
HSPA_BPS = 2e6
FRAME = DATAGRAM + 8 + 20 + 14  # UDP, IPv4 and Ethernet headers: a full datagram on the wire
FLIGHT_GAP_S = 0.06  # well above the link's 5 ms per frame and aioquic's pacing, well below the 162 ms RTT


def toml_text(data: dict) -> str:
    """The scenario's tables back as TOML (strings, numbers and lists of them are all it holds)."""
    def value(v) -> str:
        return json.dumps(v) if not isinstance(v, list) else "[" + ", ".join(value(x) for x in v) + "]"
    out = [f"description = {json.dumps(data['description'])}"]
    for table, keys in data.items():
        if isinstance(keys, dict):
            out += [f"\n[{table}]"] + [f"{k} = {value(v)}" for k, v in keys.items()]
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def rep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("quic1")
    data = tomllib.loads((scen.SCENARIO_DIR / "quic1.toml").read_text())
    data["run"].update(aqms=["fifo"], reps=1, duration_s=15, tail_s=1)
    data["quic"]["start_s"] = [2.5, 3]
    (tmp / "quic1.toml").write_text(toml_text(data))
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", str(tmp / "quic1.toml"), "--switch",
                        "model", "--out", str(tmp)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0, r.stderr[-2000:]
    reps = sorted(tmp.glob("*/quic1-hspa-48p-fifo-iw10/rep0"))
    assert len(reps) == 1, reps
    meta = json.loads((reps[0] / "meta.json").read_text())
    assert meta["status"] == "ok", meta.get("error")
    return reps[0]


def quic_datagrams(pcap: Path) -> list[tuple[float, bool, int, bool]]:
    """(time s, downstream, UDP payload bytes, short header) of every QUIC datagram between the lab's
    server and client in a capture."""
    import dpkt
    out = []
    with open(pcap, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if not isinstance(ip, dpkt.ip.IP) or not isinstance(ip.data, dpkt.udp.UDP):
                continue
            u = ip.data
            down = (u.sport, ip.src, ip.dst) == (QUIC_PORT, *map(_ip, (V4.server, V4.client)))
            up = (u.dport, ip.src, ip.dst) == (QUIC_PORT, *map(_ip, (V4.client, V4.server)))
            if down or up:
                first = bytes(u.data[:1])  # the capture keeps 128 B of a frame: the header is there
                out.append((float(ts), down, u.ulen - 8, bool(first) and not first[0] & 0x80))
    return out


def _ip(addr: str) -> bytes:
    import socket
    return socket.inet_aton(addr)


def first_flight(dgrams: list[tuple[float, bool, int, bool]]) -> list[tuple[float, int]]:
    """The downstream short-header (1-RTT) datagrams from the first one on, up to the first silence of
    FLIGHT_GAP_S: what the server sent after the handshake before an acknowledgement could come back."""
    down = [(t, n) for t, d, n, short in dgrams if d and short]
    flight = down[:1]
    for t, n in down[1:]:
        if t - flight[-1][0] >= FLIGHT_GAP_S:
            break
        flight.append((t, n))
    return flight


def test_the_page_completed_and_reads_as_a_burst(rep):
    flows = read_flows(rep)
    assert flows["completed"].tolist() == [1] and flows["bytes"].tolist() == [372_000]
    s = summarize_rep(rep)
    burst = s["tcp"]["bursts"][0]
    assert burst["flows"] == 1 and burst["completion_s"] and burst["completion_s"] > 372_000 * 8 / HSPA_BPS
    assert 0 < s["audio"]["sent"] < s["audio_whole_run"]["sent"]  # the overlap filter kept the page's time
    meta = json.loads((rep / "meta.json").read_text())
    assert meta["plan"]["bursts"][0]["quic"] and meta["n_flows"] == 1 and meta["switch"] == "model"


def test_quic_crossed_the_bottleneck_and_its_losses_are_what_the_bottleneck_dropped(rep):
    at_server, at_client = quic_datagrams(rep / "server.pcap"), quic_datagrams(rep / "client.pcap")
    down_client = [n for _, d, n, _ in at_client if d]
    assert sum(down_client) > 372_000  # every byte of the page (and QUIC's own) reached the phone
    missing = sum(d for _, d, _, _ in at_server) - len(down_client)
    (srv,) = [json.loads(x) for x in (rep / "server_quic.jsonl").read_text().splitlines()]
    print(f"{missing} downstream datagrams did not reach the phone; aioquic declared {srv['lost']} lost, "
          f"rescheduled {srv['rescheduled']}, PTOs {srv['pto']}")
    assert missing >= 0 and abs(srv["retrans"] - missing) <= max(3, missing // 5)
    assert int(read_flows(rep)["retrans"][0]) == srv["retrans"] and int(read_flows(rep)["rtos"][0]) == srv["pto"]


def test_the_first_flight_is_ten_datagrams_back_to_back(rep):
    flight = first_flight(quic_datagrams(rep / "client.pcap"))
    sizes = [n for _, n in flight]
    gaps_ms = np.diff([t for t, _ in flight]) * 1e3
    frame_ms = FRAME * 8 / HSPA_BPS * 1e3
    print(f"first flight at the phone: {len(flight)} datagrams {sizes}, gaps ms {np.round(gaps_ms, 2).tolist()}; "
          f"one full frame takes {frame_ms:.2f} ms at 2 Mbit/s")
    iw = IW_DATAGRAMS * DATAGRAM
    assert 8 <= sum(n == DATAGRAM for n in sizes) <= 12
    assert iw - DATAGRAM <= sum(sizes) <= iw + 2 * DATAGRAM  # the window, grown by the handshake's acked bytes
    assert 0.8 * frame_ms <= float(np.median(gaps_ms)) <= 1.25 * frame_ms  # back to back at the link's rate
