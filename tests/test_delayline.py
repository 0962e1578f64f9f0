"""The userspace delay line: accurate to 0.5 ms at the 99th percentile at 1,000 packets/s, no reordering.

On a VM the hypervisor may stop a CPU for ms at a time (steal time, printed beside the percentiles): the
0.5 ms is asserted in the quietest half second of the run, the median (within 0.2 ms) over all of it; when
the host took CPU time in every half second, the 0.5 ms cannot be judged and the test says so (xfail).

Three namespaces of our own: a -- [m: delayline] -- b. 1,000 audio-format
packets/s flow a->b (70 ms) and b->a (11 ms) at once for 3 s. The element is
measured at the wire: tcpdump on the outer veth ends (iwtdla, iwtdlb) stamps
each packet in the kernel when it enters and when it leaves the line, so the
error is the line's own, not the Python sender's scheduling (a sender stamps
its packet in user space before sendto; that noise is printed beside, as the
application-level OWD error, but not asserted at 0.5 ms). A short TCP transfer
checks that segments cross intact (checksums, offloads off), and an IPv6 exchange
(the outer ends are dual-stack, as the lab's hosts) that the line passes IPv6
frames byte for byte.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
import pytest
from nslab import three_namespaces

from accessnet.addresses import ipv6_missing
from accessnet.audio import parse
from experiments.iplayer import PROTO_TCP, PROTO_UDP, ip_layer
from accessnet.keepawake import KeepAwake, StealLog, steal_ms
from accessnet.workloads import REALTIME, wait_for_line

ROOT = Path(__file__).resolve().parent.parent
DELAYLINE = ROOT / "build" / "delayline"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
# named per test process: a second test run on the host (another terminal) never deletes these
NS = tuple(f"iwt-dl-{x}-{os.getpid()}" for x in "amb")
V6 = ("fd00:77::1", "fd00:77::2")


@pytest.fixture(scope="module")
def line():
    with KeepAwake():  # as in the lab: see accessnet/keepawake.py
        yield from _line()


def _line():
    subprocess.run(["bash", str(ROOT / "mininet/accessnet/build_native.sh")], check=True)
    with three_namespaces(NS, ("iwtdla", "iwtdlm0", "iwtdlm1", "iwtdlb"), ("10.77.0.1", "10.77.0.2"),
                          None if ipv6_missing() else V6):
        log = open(ROOT / "build" / "test-delayline.log", "w")
        proc = subprocess.Popen(["ip", "netns", "exec", NS[1], str(DELAYLINE), "iwtdlm0", "iwtdlm1", "70000",
                                 "11000"], stderr=log)
        time.sleep(0.3)
        yield proc
        proc.terminate()
        proc.wait(timeout=5)


def run_in(ns, *args, realtime=False, **kw):
    prio = REALTIME if realtime else []  # the audio sender's priority in the lab
    return subprocess.Popen(["ip", "netns", "exec", ns, *prio, sys.executable, "-m", *args], cwd=ROOT, **kw)


def capture(ns: str, ifname: str, path: Path, snaplen: int = 96, expr: str = "udp") -> subprocess.Popen:
    """tcpdump on ``ifname`` into ``path``, returned once it listens (on a loaded host starting it takes more than a
    second: a fixed sleep lost the first frames in CI), with an 8 MB kernel buffer so that no burst overruns it, in
    immediate mode: otherwise libpcap's TPACKET_V3 ring hands frames over a block at a time, a block is retired after
    tcpdump's 1 s timeout, and the frames of the block still open when tcpdump is stopped are lost without being
    counted as dropped (CI: 69 of 200 audio frames at the sender, all 200 received)."""
    out = path.with_suffix(".tcpdump.out")
    with open(out, "w") as err:
        proc = subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", ifname, "-s", str(snaplen), "-B", "8192",
                                 "--immediate-mode", "-U", "-n", "--time-stamp-precision=nano", "-w", str(path), expr],
                                stdout=subprocess.DEVNULL, stderr=err)
    wait_for_line(out, "listening on", proc, 30)
    return proc


def stop_capture(proc: subprocess.Popen, path: Path) -> None:
    """Stops a capture and fails if the kernel dropped any frame (tcpdump's own count): a lost frame is the
    capture's, not the line's."""
    proc.terminate()
    proc.wait(timeout=10)
    out = path.with_suffix(".tcpdump.out").read_text()
    dropped = re.search(r"(\d+) packets? dropped by kernel", out)
    assert dropped is None or dropped.group(1) == "0", f"the capture lost frames: {out!r}"


def wire_times(path: Path, port: int) -> dict[int, int]:
    """seq -> kernel capture time (ns) of every audio packet to ``port`` in a pcap (first sighting), either family."""
    out: dict[int, int] = {}
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = ip_layer(buf)
            if ip is None or ip.proto != PROTO_UDP or int.from_bytes(buf[ip.l4 + 2:ip.l4 + 4], "big") != port:
                continue
            seq, _ = parse(bytes(buf[ip.l4 + 8:]))
            out.setdefault(seq, int(Decimal(ts) * 1_000_000_000))  # dpkt gives nano captures as Decimal
    return out


def test_delay_accuracy_at_1000_pps(line, tmp_path):
    a, _, b = NS
    caps = {"a": tmp_path / "a.pcap", "b": tmp_path / "b.pcap"}
    dumps = [capture(a, "iwtdla", caps["a"]), capture(b, "iwtdlb", caps["b"])]
    start = time.time_ns() + 1_000_000_000
    procs = [
        run_in(b, "accessnet.audio", "recv", "--port", "6000", "--duration", "6", "--log", str(tmp_path / "ab_rx.csv")),
        run_in(a, "accessnet.audio", "recv", "--port", "6001", "--duration", "6", "--log", str(tmp_path / "ba_rx.csv")),
    ]
    time.sleep(0.3)
    procs += [
        run_in(a, "accessnet.audio", "send", "--dst", "10.77.0.2", "--port", "6000", "--interval-ms", "1",
               "--duration", "3", "--start-at", str(start), "--log", str(tmp_path / "ab_tx.csv"), realtime=True),
        run_in(b, "accessnet.audio", "send", "--dst", "10.77.0.1", "--port", "6001", "--interval-ms", "1",
               "--duration", "3", "--start-at", str(start), "--log", str(tmp_path / "ba_tx.csv"), realtime=True),
    ]
    time.sleep(max(0.0, (start - time.time_ns()) / 1e9 - 0.05))
    with StealLog() as steal:  # the host's share of the send window, from just before it opens until it closes
        for p in procs[2:]:  # the senders: the window closes
            p.wait(timeout=30)
        stolen = steal_ms() - steal.steal[0]
        time.sleep(0.1)  # the last packets leave the 70 ms line
    for p in procs[:2]:
        p.wait(timeout=30)
    time.sleep(0.2)
    for d, side in zip(dumps, "ab"):
        stop_capture(d, caps[side])
    stalled: list[str] = []
    for name, delay_ms, port, src, dst in (("ab", 70.0, 6000, "a", "b"), ("ba", 11.0, 6001, "b", "a")):
        tx = pd.read_csv(tmp_path / f"{name}_tx.csv")
        rx = pd.read_csv(tmp_path / f"{name}_rx.csv")
        assert len(tx) == 3000 and len(rx) == len(tx), f"{name}: {len(rx)} of {len(tx)} arrived"
        assert rx["seq"].is_monotonic_increasing, f"{name}: reordered"
        app_err = np.abs((rx["recv_ns"] - rx["send_ns"]) / 1e6 - delay_ms)
        t_in, t_out = wire_times(caps[src], port), wire_times(caps[dst], port)
        assert len(t_in) == len(t_out) == 3000, f"{name}: captured {len(t_in)} in, {len(t_out)} out of 3000"
        seqs = sorted(t_in)
        assert [t_out[q] for q in seqs] == sorted(t_out[q] for q in seqs), f"{name}: reordered on the wire"
        err_ms = np.abs(np.array([t_out[q] - t_in[q] for q in seqs]) / 1e6 - delay_ms)
        p50, p99, mx = np.percentile(err_ms, 50), np.percentile(err_ms, 99), err_ms.max()
        print(f"delay line {name} {delay_ms} ms at 1000 pps, at the wire: |error| p50 {p50:.3f} ms, "
              f"p99 {p99:.3f} ms, max {mx:.3f} ms; application OWD |error| p50 {np.median(app_err):.3f} ms, "
              f"p99 {np.percentile(app_err, 99):.3f} ms; {(err_ms > 0.5).sum()} over 0.5 ms, "
              f"host steal {stolen:.0f} ms")
        # The host's stalls (the hypervisor stops a CPU for ms: steal time) make packets late that no program
        # in the VM could have sent on time, and they come any time: the line is judged in the quietest half
        # second (500 packets), where 99 % must be within 0.5 ms, and on the median of all. A line with a
        # coarse timer or a queue of its own fails both in every window. When the host took CPU time in every
        # half second, no window can judge the line: xfail, with the numbers (the median is still asserted).
        parts = np.array_split(np.arange(len(seqs)), len(seqs) // 500)
        windows = [np.percentile(err_ms[i], 99) for i in parts]
        stole = [steal.between(t_in[seqs[i[0]]], t_out[seqs[i[-1]]]) for i in parts]
        print(f"  p99 per half second: {' '.join(f'{w:.3f}' for w in windows)} ms; host steal in each: "
              f"{' '.join(f'{x:.0f}' if x is not None else '?' for x in stole)} ms")
        assert p50 <= 0.2, f"{name}: the delay line's median error {p50:.3f} ms is over 0.2 ms"
        assert np.median(app_err) <= 0.5, f"{name}: application-level median OWD error {np.median(app_err):.3f} ms"
        if min(windows) > 0.5 and all(x for x in stole):
            stalled.append(f"{name}: the best half second's p99 error was {min(windows):.3f} ms")
            continue
        assert min(windows) <= 0.5, f"{name}: the delay line's p99 error is over 0.5 ms in every half second"
    if stalled:
        pytest.xfail(f"the host took CPU time from this VM in every half second ({stolen:.0f} ms in all); "
                     + "; ".join(stalled))


def test_tcp_crosses_the_delay_line(line, tmp_path):
    a, _, b = NS
    srv = run_in(a, "accessnet.web", "server", "--port", "6080", "--log", str(tmp_path / "s.jsonl"))
    try:
        time.sleep(0.5)
        cli = run_in(b, "accessnet.web", "client", "--dst", "10.77.0.1", "--port", "6080", "--flows", "2",
                     "--bytes", "200000", "--timeout", "20", "--log", str(tmp_path / "c.csv"))
        assert cli.wait(timeout=30) == 0
        rows = pd.read_csv(tmp_path / "c.csv")
        assert rows["completed"].tolist() == [1, 1] and rows["bytes"].tolist() == [200000, 200000]
        # a connection needs at least 1.5 RTTs of 2 x 81 ms
        assert ((rows["end_ns"] - rows["start_ns"]) / 1e6 > 1.5 * 162).all()
    finally:
        srv.terminate()
        srv.wait(timeout=5)


def frames(path: Path) -> list[bytes]:
    with open(path, "rb") as f:
        return [bytes(buf) for _, buf in dpkt.pcap.Reader(f)]


@pytest.mark.skipif(ipv6_missing() is not None, reason=f"{ipv6_missing()}")
def test_ipv6_frames_cross_the_delay_line_untouched(line, tmp_path):
    """Audio a -> b and a TCP transfer b -> a over IPv6: every IPv6 frame that left one end arrives at the other,
    byte for byte (whole frames captured), and the tools' own logs agree."""
    a, _, b = NS
    caps = {"a": tmp_path / "a.pcap", "b": tmp_path / "b.pcap"}
    dumps = [capture(a, "iwtdla", caps["a"], 0, "ip6"), capture(b, "iwtdlb", caps["b"], 0, "ip6")]
    procs = []
    try:
        procs.append(run_in(b, "accessnet.audio", "recv", "--port", "6002", "--duration", "4", "--log",
                            str(tmp_path / "rx.csv")))
        procs.append(run_in(a, "accessnet.web", "server", "--port", "6081", "--log", str(tmp_path / "s.jsonl")))
        time.sleep(0.5)
        tx = run_in(a, "accessnet.audio", "send", "--dst", V6[1], "--port", "6002", "--interval-ms", "5",
                    "--duration", "1", "--log", str(tmp_path / "tx.csv"))
        cli = run_in(b, "accessnet.web", "client", "--dst", V6[0], "--port", "6081", "--flows", "1",
                     "--bytes", "100000", "--timeout", "20", "--log", str(tmp_path / "c.csv"))
        assert tx.wait(timeout=30) == 0 and cli.wait(timeout=30) == 0
        time.sleep(0.3)  # the last frames leave the 70 ms line
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        for d, side in zip(dumps, "ab"):
            stop_capture(d, caps[side])
    assert pd.read_csv(tmp_path / "c.csv")["completed"].tolist() == [1]
    assert sorted(pd.read_csv(tmp_path / "rx.csv")["seq"]) == list(range(200))
    at_a, at_b = frames(caps["a"]), frames(caps["b"])
    assert all(f[12:14] == b"\x86\xdd" for f in at_a + at_b)
    # every audio packet on the wire at a, and the transfer's segments: how many frames those are depends on the
    # host's segmentation offloads (a super-frame is one frame in the capture), so only their presence is checked
    assert sum(ip_layer(f).proto == PROTO_UDP for f in at_a) == 200
    assert any(ip_layer(f).proto == PROTO_TCP for f in at_a)
    a_to_b = [f for f in at_a if ip_layer(f).address("src").compressed == V6[0]]
    b_to_a = [f for f in at_b if ip_layer(f).address("src").compressed == V6[1]]
    # the same frames byte for byte; compared as sorted lists, since two frames a host sends within microseconds
    # from its two CPUs are captured in an order the wire need not keep (seen: 34 of 34 ACKs arrived, two of them
    # swapped in the capture at the sender); the line's order is test_delay_accuracy_at_1000_pps's
    assert sorted(f for f in at_b if ip_layer(f).address("src").compressed == V6[0]) == sorted(a_to_b)
    assert sorted(f for f in at_a if ip_layer(f).address("src").compressed == V6[1]) == sorted(b_to_a)


def test_steal_log_brackets_each_stretch():
    log = StealLog()
    for t, x in ((0, 100.0), (20, 100.0), (40, 110.0), (60, 130.0)):
        log.record(t, x)
    assert log.between(0, 20) == 0.0  # no steal between these samples
    assert log.between(25, 35) == 10.0  # from the sample at 20 to the one at 40: never less than the stretch had
    assert log.between(20, 60) == 30.0
    assert log.between(-1, 20) is None and log.between(30, 61) is None  # outside the samples: unknown
