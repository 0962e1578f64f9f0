"""The phone's receive window (``bpf/rwnd.bpf.c``, profile key ``client_window_bytes``) over IPv4 and over IPv6,
with real Linux TCP in two namespaces of our own (client -- server, dual-stack as the lab's hosts): the
classifier attached to the client's interface as ``AccessNet.set_client_window`` attaches it, a download, and
the server's capture. Checked there, with Scapy's own dissection and checksum computation: every window the
client advertised arrives at most the phone's window and the download is held at exactly it, and every
rewritten segment's TCP checksum is valid (the server's stack took them all: the download completes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import dpkt
import pytest
from nslab import namespace_chain, sh
from scapy.all import TCP, Ether, raw

from accessnet.addresses import ipv6_missing
from accessnet.leftovers import Lease
from accessnet.topology import RWND_LOADER, RWND_OBJECT

ROOT = Path(__file__).resolve().parent.parent
WINDOW = 14_600  # the phone's window: well below what the client's 128 kB receive buffer would advertise
ADDRS = {4: ("10.79.0.2", "10.79.0.1"), 6: ("fd00:79::2", "fd00:79::1")}  # (client, server)
PORT, NBYTES = 8080, 300_000
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces, BPF)")

SERVER = """
import socket, sys
addr = sys.argv[1]
l = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind((addr, {port})); l.listen(1); print("listening", flush=True)
c, _ = l.accept(); c.settimeout(30)
assert c.recv(3) == b"GET"
c.sendall(b"x" * {n}); c.close()
""".format(port=PORT, n=NBYTES)
CLIENT = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], {port}), timeout=30)
c.sendall(b"GET")
got = 0
while chunk := c.recv(4096):
    got += len(chunk)
    time.sleep(0.001)  # a slow reader: the window is the client's to close, the clamp's to hold
print(got)
""".format(port=PORT)


@pytest.fixture(scope="module")
def pair():
    """(client namespace, server namespace, client interface, server interface), the classifier attached."""
    subprocess.run(["bash", str(ROOT / "mininet/accessnet/build_native.sh")], check=True)
    missing = [f.name for f in (RWND_OBJECT, RWND_LOADER) if not f.exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not built (clang and libbpf-dev: make setup)")
    if ipv6_missing():
        pytest.skip(ipv6_missing())
    with Lease() as lease:
        ns = (f"{lease.prefix}rwnd-c", f"{lease.prefix}rwnd-s")
        ifs = (f"{lease.prefix}rwc", f"{lease.prefix}rws")
        with namespace_chain(ns, (ifs,), (ADDRS[4][0], ADDRS[4][1]), (ADDRS[6][0], ADDRS[6][1])):
            sh("ip", "netns", "exec", ns[0], "sysctl", "-qw", "net.ipv4.tcp_window_scaling=0")  # as the lab's phone
            r = sh("ip", "netns", "exec", ns[0], str(RWND_LOADER), str(RWND_OBJECT), ifs[0], str(WINDOW))
            assert "attached" in r.stdout
            yield (*ns, *ifs)


def download(pair, tmp_path: Path, family: int) -> list[bytes]:
    """One download, server -> client, over ``family``; every frame the server's interface saw (whole)."""
    c_ns, s_ns, _, s_if = pair
    client, server = ADDRS[family]
    cap = tmp_path / "server.pcap"
    dump = subprocess.Popen(["ip", "netns", "exec", s_ns, "tcpdump", "-i", s_if, "-s", "0", "--immediate-mode", "-U",
                             "-n", "-w", str(cap), "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    srv = None
    try:
        time.sleep(1.0)
        srv = subprocess.Popen(["ip", "netns", "exec", s_ns, sys.executable, "-c", SERVER, server],
                               stdout=subprocess.PIPE, text=True)
        assert srv.stdout.readline().startswith("listening")
        got = subprocess.run(["ip", "netns", "exec", c_ns, sys.executable, "-c", CLIENT, server],
                             capture_output=True, text=True, timeout=60)
        assert got.returncode == 0 and got.stdout.split() == [str(NBYTES)], got.stderr
        assert srv.wait(timeout=10) == 0
        time.sleep(0.3)
    finally:
        for p in (srv, dump):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(timeout=10)
    with open(cap, "rb") as f:
        return [bytes(buf) for _, buf in dpkt.pcap.Reader(f)]


@pytest.mark.parametrize("family", [4, 6], ids=["ip4", "ip6"])
def test_the_server_sees_the_phones_window_with_valid_checksums(pair, tmp_path, family):
    client = ADDRS[family][0]
    frames = [Ether(f) for f in download(pair, tmp_path, family)]
    ip_type = 0x0800 if family == 4 else 0x86DD
    assert frames and all(p.type == ip_type for p in frames)  # the download went over the family asked for
    up = [p for p in frames if p.payload.src == client]
    windows = [p[TCP].window for p in up]
    print(f"IPv{family}: {len(up)} segments from the client, windows {min(windows)}..{max(windows)}")
    assert up[0][TCP].flags == "S" and max(windows) == WINDOW  # held at the phone's window, SYN included
    assert all(w <= WINDOW for w in windows)
    for p in up:  # Scapy recomputes each checksum from the segment's bytes and its family's pseudo-header
        sent = p[TCP].chksum
        del p[TCP].chksum
        assert Ether(raw(p))[TCP].chksum == sent, p.summary()
