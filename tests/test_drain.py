"""The drain of the P4 switches: the delay line's first direction sends at the link rate on the queue model's
schedule, catches up after a stall of its own, and follows a rate change from its control FIFO.

Three namespaces of our own: a -- [m: delayline -r 2 Mbit/s -b 1514 -c FIFO] -- b. a sends bursts of UDP
frames back to back (microseconds apart); tcpdump on the outer veth ends stamps each frame in the kernel when
it enters and when it leaves the line. The expected departure of every frame is worked out here from the
capture at a alone, with the token-bucket arithmetic written out below (a link of rate R that may send B
bytes ahead, then the delay), not with the line's code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import dpkt
import numpy as np
import pytest
from nslab import three_namespaces

from accessnet.keepawake import KeepAwake, steal_ms
from controller.shaper import DelaylineDrain, delayline_args
from test_delayline import capture, stop_capture

ROOT = Path(__file__).resolve().parent.parent
DELAYLINE = ROOT / "build" / "delayline"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
NS = tuple(f"iwt-dr-{x}-{os.getpid()}" for x in "amb")
IFS = ("iwtdra", "iwtdrm0", "iwtdrm1", "iwtdrb")
ADDRS = ("10.78.0.1", "10.78.0.2")
RATE, BUCKET, DELAY_US = 2e6, 1514, 10_000
PAYLOAD = 1000  # UDP payload: frames of 1042 bytes, 4.168 ms each at 2 Mbit/s


@pytest.fixture()
def drain(tmp_path):
    subprocess.run(["bash", str(ROOT / "mininet/accessnet/build_native.sh")], check=True)
    ctl = tmp_path / "drain.ctl"
    os.mkfifo(ctl)
    with KeepAwake(), three_namespaces(NS, IFS, ADDRS):
        log = open(tmp_path / "delayline.log", "w")
        proc = subprocess.Popen(["ip", "netns", "exec", NS[1], str(DELAYLINE), *delayline_args(RATE, ctl, BUCKET),
                                 IFS[1], IFS[2], str(DELAY_US), "1000"], stderr=log)
        time.sleep(0.3)
        try:
            yield proc, ctl
        finally:
            proc.terminate()
            proc.wait(timeout=5)


def send_burst(n: int, tag: int) -> subprocess.Popen:
    """n UDP datagrams from a to b as fast as a socket sends them; byte 0 of each payload is ``tag``, byte 1
    its index."""
    code = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range({n}):\n    s.sendto(bytes([{tag}, i]) + bytes({PAYLOAD - 2}), ('{ADDRS[1]}', 9))\n")
    return subprocess.Popen(["ip", "netns", "exec", NS[0], sys.executable, "-c", code])


def wire(path: Path, tag: int) -> dict[int, tuple[int, int]]:
    """index -> (capture time in ns, frame length) of the burst ``tag``'s datagrams in a pcap."""
    out: dict[int, tuple[int, int]] = {}
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            eth = dpkt.ethernet.Ethernet(buf)
            ip = eth.data
            if not isinstance(ip, dpkt.ip.IP) or ip.p != dpkt.ip.IP_PROTO_UDP or ip.data.dport != 9:
                continue
            data = bytes(ip.data.data)
            if data[0] == tag:
                out.setdefault(data[1], (int(Decimal(ts) * 1_000_000_000), 14 + ip.len))
    return out


def schedule(arrivals: list[tuple[int, int]], rate_bps: float, bucket: int, delay_ns: int) -> np.ndarray:
    """When a token bucket of ``bucket`` bytes filled at ``rate_bps`` lets each (arrival, length) frame go, plus
    the delay: written as a bucket (tokens earned since the last departure, capped at the bucket; a frame waits
    until there are as many tokens as its bytes), the form a link's sender runs, not the line's GCRA form."""
    out, tokens, last = [], float(bucket), None
    for t, length in arrivals:
        free = t if last is None else max(t, last)
        if last is not None:
            tokens = min(bucket, tokens + (free - last) * rate_bps / 8e9)
        wait = max(0.0, (length - tokens) * 8e9 / rate_bps)
        last = free + wait
        tokens = tokens + wait * rate_bps / 8e9 - length
        out.append(last + delay_ns)
    return np.array(out)


def measure(tmp_path: Path, n: int, tag: int, stall: tuple[float, float] | None = None, proc=None):
    caps = {side: tmp_path / f"{side}{tag}.pcap" for side in "ab"}
    dumps = [capture(NS[0], IFS[0], caps["a"]), capture(NS[2], IFS[3], caps["b"])]
    sender = send_burst(n, tag)
    if stall is not None:
        time.sleep(stall[0])
        os.kill(proc.pid, signal.SIGSTOP)  # the host stops the line, as a hypervisor or a busy CPU would
        time.sleep(stall[1])
        os.kill(proc.pid, signal.SIGCONT)
    assert sender.wait(timeout=10) == 0
    time.sleep(n * PAYLOAD * 8 / RATE * 2 + 0.2)  # the burst leaves the line (at half the rate at worst)
    for d, side in zip(dumps, "ab"):
        stop_capture(d, caps[side])
    t_in, t_out = wire(caps["a"], tag), wire(caps["b"], tag)
    assert sorted(t_in) == sorted(t_out) == list(range(n)), f"{len(t_out)} of {len(t_in)} frames crossed"
    order = sorted(range(n), key=lambda i: t_in[i][0])
    out = np.array([t_out[i][0] for i in order])
    assert (np.diff(out) >= 0).all(), "the line reordered the burst"
    return [t_in[i] for i in order], out


def on_a_quiet_host(check, tmp_path: Path) -> None:
    """Run ``check(dir, tag)`` (a measurement and its assertions; tag: the bursts' first tag byte). These are
    timings on a VM: when the check fails while the hypervisor took CPU time from the VM (``steal_ms``), the
    test is an xfail that gives the numbers; when it fails with no steal seen (/proc/stat counts 10 ms ticks, so
    a stall of a few ms reads 0), it measures once more and the second attempt decides."""
    for attempt in (0, 1):
        where = tmp_path / f"attempt{attempt}"
        where.mkdir()
        before = steal_ms()
        try:
            check(where, 10 * attempt)
            return
        except AssertionError as e:
            stolen = steal_ms() - before
            if stolen > 0:
                pytest.xfail(f"the hypervisor took {stolen:.0f} ms of CPU time from this VM during the "
                             f"measurement: {e}")
            if attempt:
                raise
            print(f"first attempt failed with no host steal seen ({e}); measuring again")


def test_drain_sends_at_the_link_rate_on_the_models_schedule(drain, tmp_path):
    on_a_quiet_host(lambda where, tag: check_rate(drain, where, tag), tmp_path)


def check_rate(drain, tmp_path: Path, tag: int) -> None:
    proc, _ = drain
    arrivals, out = measure(tmp_path, 40, tag + 1)
    assert arrivals[-1][0] - arrivals[0][0] < 20e6, "the burst did not arrive at once: no queue to measure"
    err_ms = (out - schedule(arrivals, RATE, BUCKET, DELAY_US * 1000)) / 1e6
    gaps_ms = np.diff(out) / 1e6
    print(f"drain at 2 Mbit/s: |error| median {np.median(np.abs(err_ms)):.3f} ms, max {np.abs(err_ms).max():.3f} ms;"
          f" gaps median {np.median(gaps_ms):.3f} ms")
    assert np.median(np.abs(err_ms)) < 0.2
    assert abs(np.median(gaps_ms) - 1042 * 8 / RATE * 1e3) < 0.05  # 4.168 ms a frame: the link's rate


def test_drain_catches_up_after_a_stall(drain, tmp_path):
    """The line stopped for 40 ms in the middle of a 250 ms busy period: the frames due meanwhile leave late,
    at once when it resumes, and the rest on the schedule, as if it had not stopped. A drain that loses the
    stall's service (Linux's tbf with a one-frame bucket) would send the last frame 40 ms late."""
    on_a_quiet_host(lambda where, tag: check_stall(drain, where, tag), tmp_path)


def check_stall(drain, tmp_path: Path, tag: int) -> None:
    proc, _ = drain
    arrivals, out = measure(tmp_path, 60, tag + 2, stall=(0.08, 0.04), proc=proc)
    err_ms = (out - schedule(arrivals, RATE, BUCKET, DELAY_US * 1000)) / 1e6
    print("lateness per frame (ms):", " ".join(f"{e:.1f}" for e in err_ms))
    assert err_ms.max() > 10, "the stall did not delay any frame: nothing was tested"
    late = np.flatnonzero(err_ms > 1)
    assert late.size <= 40 / 4.168 + 2, f"{late.size} frames late: more than the stall's"
    assert (np.diff(late) == 1).all(), "late frames outside one stretch"
    after = err_ms[late[-1] + 1:]
    assert after.size >= 10 and np.median(np.abs(after)) < 0.2, "the frames after the stall are off schedule"
    assert abs(err_ms[-1]) < 1.0, f"the busy period ended {err_ms[-1]:.1f} ms off schedule"


def test_drain_follows_a_rate_change(drain, tmp_path):
    on_a_quiet_host(lambda where, tag: check_rate_change(drain, where, tag), tmp_path)


def check_rate_change(drain, tmp_path: Path, tag: int) -> None:
    proc, ctl = drain
    DelaylineDrain(ctl).set_rate(RATE / 2)
    time.sleep(0.05)
    arrivals, out = measure(tmp_path, 20, tag + 3)
    err_ms = (out - schedule(arrivals, RATE / 2, BUCKET, DELAY_US * 1000)) / 1e6
    assert np.median(np.abs(err_ms)) < 0.2
    assert abs(np.median(np.diff(out)) / 1e6 - 1042 * 8 / (RATE / 2) * 1e3) < 0.05
    DelaylineDrain(ctl).set_rate(RATE)
    time.sleep(0.05)
    arrivals, out = measure(tmp_path, 20, tag + 4)
    assert abs(np.median(np.diff(out)) / 1e6 - 1042 * 8 / RATE * 1e3) < 0.05


def test_drain_control_without_a_line_is_a_clear_error(tmp_path):
    ctl = tmp_path / "drain.ctl"
    os.mkfifo(ctl)
    with pytest.raises(RuntimeError, match="does not listen"):
        DelaylineDrain(ctl).set_rate(1e6)
    with pytest.raises(ValueError):
        DelaylineDrain(ctl).set_rate(0)


@pytest.mark.parametrize("kind", ["delayline", "tbf"])
def test_the_lab_builds_its_drain_and_leaves_nothing(kind):
    """The P4 switches' drain is the access link's delay line (its control FIFO recorded for the slot's
    cleanup, no tbf on the switch's port), the kernel backend's a tbf; either way the controller is told how
    to reach it, and stop() leaves no FIFO behind."""
    import json

    from accessnet.leftovers import Lease
    from accessnet.profiles import profile
    from accessnet.topology import AccessNet, sh

    with Lease() as lease:
        net = AccessNet(lease.prefix, profile("hspa"), registry=lease.registry, drain=kind)
        try:
            net.start()
            qdiscs = sh(net.sw, f"tc qdisc show dev {net.ports.client}")
            d2 = [p for p in net.procs if f"{net.d2.name}-eth0" in p.args]
            if kind == "delayline":
                assert os.path.exists(net.drain_control) and "tbf" not in qdiscs
                assert str(net.drain_control) in json.loads(lease.registry.path.read_text())["files"]
                assert net.drain_args() == ["--drain-control", str(net.drain_control)]
                argv = d2[0].args[d2[0].args.index(str(DELAYLINE)):]  # after Mininet's mnexec
                assert argv[1:3] == ["-r", format(net.prof.rate_bps, ".17g")]
                DelaylineDrain(net.drain_control).set_rate(net.prof.rate_bps / 2)  # it listens
            else:
                assert "tbf" in qdiscs and net.drain_args() == ["--shaper-dev", net.ports.client]
                assert not os.path.exists(net.drain_control) and all("-r" not in p.args for p in d2)
        finally:
            net.stop()
        assert not os.path.exists(net.drain_control)
    with pytest.raises(ValueError, match="drain"):
        AccessNet("i999", profile("hspa"), drain="netem")
