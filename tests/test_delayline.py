"""The userspace delay line: accurate to 0.5 ms at the 99th percentile at 1,000 packets/s, no reordering.

Three namespaces of our own: a -- [m: delayline] -- b. 1,000 audio-format
packets/s flow a->b (70 ms) and b->a (11 ms) at once for 3 s; the one-way delay
of each is compared with the configured delay. A short TCP transfer checks
that segments cross intact (checksums, offloads off).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from accessnet.keepawake import KeepAwake

ROOT = Path(__file__).resolve().parent.parent
DELAYLINE = ROOT / "build" / "delayline"
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
NS = ("iwt-dl-a", "iwt-dl-m", "iwt-dl-b")


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


@pytest.fixture(scope="module")
def line():
    with KeepAwake():  # as in the lab: see accessnet/keepawake.py
        yield from _line()


def _line():
    subprocess.run(["bash", str(ROOT / "mininet/accessnet/build_native.sh")], check=True)
    for ns in NS:
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "netns", "add", ns)
    a, m, b = NS
    try:
        sh("ip", "link", "add", "iwtdla", "netns", a, "type", "veth", "peer", "name", "iwtdlm0", "netns", m)
        sh("ip", "link", "add", "iwtdlb", "netns", b, "type", "veth", "peer", "name", "iwtdlm1", "netns", m)
        for ns, ifs in ((a, ["iwtdla"]), (m, ["iwtdlm0", "iwtdlm1"]), (b, ["iwtdlb"])):
            for i in ifs:
                sh("ip", "netns", "exec", ns, "ethtool", "-K", i, "tx", "off", "tso", "off", "gso", "off", "gro",
                   "off", check=False)
                sh("ip", "-n", ns, "link", "set", i, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", a, "addr", "add", "10.77.0.1/24", "dev", "iwtdla")
        sh("ip", "-n", b, "addr", "add", "10.77.0.2/24", "dev", "iwtdlb")
        # static neighbours: ARP resolution across the line would hold the first packets back
        mac = {ns: sh("ip", "netns", "exec", ns, "cat", f"/sys/class/net/{i}/address").stdout.strip()
               for ns, i in ((a, "iwtdla"), (b, "iwtdlb"))}
        sh("ip", "-n", a, "neigh", "replace", "10.77.0.2", "lladdr", mac[b], "dev", "iwtdla", "nud", "permanent")
        sh("ip", "-n", b, "neigh", "replace", "10.77.0.1", "lladdr", mac[a], "dev", "iwtdlb", "nud", "permanent")
        log = open(ROOT / "build" / "test-delayline.log", "w")
        proc = subprocess.Popen(["ip", "netns", "exec", m, str(DELAYLINE), "iwtdlm0", "iwtdlm1", "70000", "11000"],
                                stderr=log)
        time.sleep(0.3)
        yield proc
        proc.terminate()
        proc.wait(timeout=5)
    finally:
        for ns in NS:
            sh("ip", "netns", "del", ns, check=False)


def run_in(ns, *args, **kw):
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", *args], cwd=ROOT, **kw)


def test_delay_accuracy_at_1000_pps(line, tmp_path):
    a, _, b = NS
    start = time.time_ns() + 1_000_000_000
    procs = [
        run_in(b, "accessnet.audio", "recv", "--port", "6000", "--duration", "6", "--log", str(tmp_path / "ab_rx.csv")),
        run_in(a, "accessnet.audio", "recv", "--port", "6001", "--duration", "6", "--log", str(tmp_path / "ba_rx.csv")),
    ]
    time.sleep(0.3)
    procs += [
        run_in(a, "accessnet.audio", "send", "--dst", "10.77.0.2", "--port", "6000", "--interval-ms", "1",
               "--duration", "3", "--start-at", str(start), "--log", str(tmp_path / "ab_tx.csv")),
        run_in(b, "accessnet.audio", "send", "--dst", "10.77.0.1", "--port", "6001", "--interval-ms", "1",
               "--duration", "3", "--start-at", str(start), "--log", str(tmp_path / "ba_tx.csv")),
    ]
    for p in procs:
        p.wait(timeout=30)
    for name, delay_ms in (("ab", 70.0), ("ba", 11.0)):
        tx = pd.read_csv(tmp_path / f"{name}_tx.csv")
        rx = pd.read_csv(tmp_path / f"{name}_rx.csv")
        assert len(tx) == 3000 and len(rx) == len(tx), f"{name}: {len(rx)} of {len(tx)} arrived"
        assert rx["seq"].is_monotonic_increasing, f"{name}: reordered"
        err_ms = np.abs((rx["recv_ns"] - rx["send_ns"]) / 1e6 - delay_ms)
        p50, p99, mx = np.percentile(err_ms, 50), np.percentile(err_ms, 99), err_ms.max()
        print(f"delay line {name} {delay_ms} ms at 1000 pps: |error| p50 {p50:.3f} ms, p99 {p99:.3f} ms, "
              f"max {mx:.3f} ms")
        assert p99 <= 0.5


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
