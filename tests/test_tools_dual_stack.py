"""The traffic tools in either IP family, on the loopback (no root needed): the senders talk in their
destination's family, the receivers and the web server listen on both (``accessnet.addresses.bind_any``), so
one lab serves a run of either family ([run] ip). Checked with sockets of the test's own: what arrived, in
which family, with which traffic class."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from accessnet.addresses import ipv6_missing
from accessnet.audio import packet, parse

ROOT = Path(__file__).resolve().parent.parent
LOOPBACKS = [pytest.param("127.0.0.1", id="ip4"), pytest.param("::1", id="ip6")]
pytestmark = pytest.mark.skipif(ipv6_missing() is not None, reason=f"{ipv6_missing()}")
EF = 0xB8


def tool(*args: str) -> list[str]:
    return [sys.executable, "-m", *args]


def free_port(kind: socket.SocketKind = socket.SOCK_DGRAM) -> int:
    """A port free in both families on the loopback (the tools bind both)."""
    with socket.socket(socket.AF_INET6, kind) as s:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        s.bind(("::", 0))
        return s.getsockname()[1]


def run(args: list[str], timeout: float = 30) -> subprocess.CompletedProcess:
    r = subprocess.run(args, cwd=ROOT / "mininet", capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    return r


@pytest.mark.parametrize("loopback", LOOPBACKS)
def test_the_audio_sender_talks_in_its_destinations_family_marked_ef(tmp_path, loopback):
    """Packets reach a socket of the destination's family, with DSCP EF in the IPv4 TOS or the IPv6 traffic
    class (read from the receiving socket's ancillary data)."""
    v6 = ":" in loopback
    rx = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(*((socket.IPPROTO_IPV6, socket.IPV6_RECVTCLASS) if v6 else (socket.IPPROTO_IP, socket.IP_RECVTOS)),
                  1)
    rx.bind((loopback, 0))
    rx.settimeout(2)
    run(tool("accessnet.audio", "send", "--dst", loopback, "--port", str(rx.getsockname()[1]), "--interval-ms", "20",
             "--duration", "0.1", "--log", str(tmp_path / "tx.csv")))
    seqs, marks = [], set()
    try:
        while True:
            data, anc, _, _ = rx.recvmsg(2048, 64)
            seqs.append(parse(data)[0])
            marks |= {int.from_bytes(value, sys.byteorder) & 0xFF for _, _, value in anc}
    except TimeoutError:
        pass
    assert seqs == list(pd.read_csv(tmp_path / "tx.csv")["seq"]) == [0, 1, 2, 3, 4]
    assert marks == {EF}


def test_the_audio_receiver_takes_both_families_on_one_port(tmp_path):
    port = free_port()
    rx = subprocess.Popen(tool("accessnet.audio", "recv", "--port", str(port), "--duration", "3", "--log",
                               str(tmp_path / "rx.csv")), cwd=ROOT / "mininet")
    try:
        time.sleep(1.0)
        for seq, (fam, addr) in enumerate(((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1"))):
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.sendto(packet(seq, time.time_ns(), 40), (addr, port))
    finally:
        assert rx.wait(timeout=10) == 0
    assert sorted(pd.read_csv(tmp_path / "rx.csv")["seq"]) == [0, 1]


def test_one_web_server_serves_both_families(tmp_path):
    port = free_port(socket.SOCK_STREAM)
    server = subprocess.Popen(tool("accessnet.web", "server", "--port", str(port), "--cc", "cubic", "--log",
                                   str(tmp_path / "server.jsonl")), cwd=ROOT / "mininet")
    try:
        time.sleep(1.0)
        for k, dst in enumerate(("127.0.0.1", "::1")):
            run(tool("accessnet.web", "client", "--dst", dst, "--port", str(port), "--flows", "2", "--bytes", "50000",
                     "--burst", str(k), "--timeout", "10", "--log", str(tmp_path / f"client_flows_{k}.csv")))
    finally:
        server.terminate()
        server.wait(timeout=10)
    for k in (0, 1):
        log = pd.read_csv(tmp_path / f"client_flows_{k}.csv")
        assert log["completed"].tolist() == [1, 1] and log["bytes"].tolist() == [50000, 50000]
    assert len((tmp_path / "server.jsonl").read_text().splitlines()) == 4


@pytest.mark.parametrize("loopback", LOOPBACKS)
def test_the_rtc_flows_reports_come_back_in_either_family(tmp_path, loopback):
    """The receiver (dual-stack) answers each sender in its own family: the sender's rate climbs from its start
    only when the reports arrive (+5 % per report on an idle path)."""
    port = free_port()
    rx = subprocess.Popen(tool("accessnet.rtc", "recv", "--port", str(port), "--duration", "5", "--log",
                               str(tmp_path / "rx.csv")), cwd=ROOT / "mininet")
    try:
        time.sleep(1.0)
        run(tool("accessnet.rtc", "send", "--dst", loopback, "--port", str(port), "--start-kbps", "128",
                 "--duration", "2", "--log", str(tmp_path / "tx.csv")))
    finally:
        assert rx.wait(timeout=10) == 0
    tx, got = pd.read_csv(tmp_path / "tx.csv"), pd.read_csv(tmp_path / "rx.csv")
    assert len(got) >= 0.9 * len(tx) > 10
    assert tx["rate_bps"].iloc[-1] > 1.5 * 128_000, tx["rate_bps"].describe()
