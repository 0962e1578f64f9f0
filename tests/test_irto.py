"""Initial RTO (scenario key ``irto_s``, ``accessnet.irto``): the checks of the key, and the sock_ops program
proved in packet captures of real Linux TCP.

Namespaces of our own, named after the test's lab slot (``leftovers.Lease``): client -- [m:
tests/irto_dropper.py] -- server, and the same with the lab's switch on the path, client -- [w: switch] --
[m: dropper] -- server, the switch being the reference model (``ModelSwitch``) or BMv2 configured by the
controller (``Bmv2Switch``, skipped with the reason where the P4 toolchain is missing), started as a
replication starts them, a FIFO that drops nothing. The dropper forwards every frame and drops the first
SYN-ACK and/or the server's first data segment, and is the only element that drops; tcpdump captures at
both ends. Every capture test runs on each of the three paths. The program is attached, as in a
replication, to a cgroup v2 per host (``InitialRto``), and the client and server processes start inside
them. Measured:

* SYN-ACK dropped: the client's SYN retransmission comes after the client's initial RTO (1 s, 3 s, and
  1 s without the program), and the server's own SYN-ACK retransmission after the server's.
* a data segment dropped: Linux times it from the handshake's RTT sample whatever the initial RTO (well
  under 1 s here); with no RTT sample at all (SYN-ACK retransmitted, no timestamps) the tail-loss probe
  fires after 1 s (TCP_TIMEOUT_INIT) and, without TLP, the RTO after 3 s (TCP_TIMEOUT_FALLBACK, RFC 6298
  5.7): constants of the kernel that the sock_ops reply does not reach.
* over IPv6 (the ends are dual-stack, as the lab's hosts): the client's SYN and the server's SYN-ACK
  retransmitted after their initial RTOs as over IPv4 (sock_ops answers TIMEOUT_INIT for sockets of either
  family).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import types
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

import dpkt
import pytest
from nslab import lab_switch, namespace_chain, sh

from accessnet import irto
from accessnet import scenario as scen
from accessnet.bmv2_veth import build_p4, missing_toolchain
from accessnet.leftovers import Lease, Registry
from accessnet.replication import stop_gracefully
from accessnet.switches import Switch
from accessnet.topology import Ports
from experiments.iplayer import PROTO_TCP, ip_layer
from refmodel.params import ConfigError

ROOT = Path(__file__).resolve().parent.parent
SRV, CLI, PORT = "10.78.0.1", "10.78.0.2", 8080
SRV6, CLI6 = "fd00:78::1", "fd00:78::2"
CLIENT_IF, SERVER_IF, DROPPER_IFS = "iwtirc", "iwtirs", ("iwtirm0", "iwtirm1")
SWITCH_PORTS = Ports(server="iwtirw1", client="iwtirw2", monitor="iwtirw3")
# A fast FIFO with room for all: on the test's path only the dropper drops.
SWITCH_CFG = {"link": {"rate_bps": 100e6}, "buffer": {"packets": 1000}, "aqm": {"name": "fifo"}}


def near(got: float, want: float) -> bool:
    """A kernel timer of ``want`` s fired after ``got`` s: never early (a 5 ms margin for the capture
    stamps), late by at most the timer wheel's rounding (a timer lands on its wheel level's granularity,
    at most 1/8 of its timeout: 32 ms at 1 s, 256 ms at 3 s with HZ=250) plus 40 ms of scheduling."""
    return want - 0.005 <= got <= want * 1.125 + 0.04


# -------------------------------------------------------------------------------- the scenario key


@pytest.mark.parametrize("value", [1, 3, 0.2, 1.5, 120])
def test_irto_accepted(value):
    assert scen.load("web6", {"irto_s": value}).irto_s == float(value)


def test_irto_absent_is_kernel_default():
    assert scen.load("web6").irto_s is None


@pytest.mark.parametrize("value", [0, -1, 0.0, 121, 1e9, "3", True, [3], {"s": 3}, 1.0004, float("nan"),
                                   float("inf")])
def test_irto_refused_with_its_name(value):
    with pytest.raises(ConfigError, match=r"irto_s = .*must be the initial retransmission timeout in seconds"):
        scen.load("web6", {"irto_s": value})


def test_irto_recorded_in_meta():
    from accessnet.replication import new_meta
    from accessnet.switches import ModelSwitch
    from accessnet.workloads import workloads_for
    for value, want in ((3, 3.0), (None, None)):
        sc = scen.load("web6", {"irto_s": value} if value else {})
        case = sc.cases[0]
        meta = new_meta(sc, case, 0, 1, workloads_for(case.spec, 1), ModelSwitch(1))
        assert meta["irto_s"] == want


# -------------------------------------------------------------------------------- the capture tests


@dataclass(frozen=True)
class Net:
    """One path of the capture tests: its namespaces by role (c client, w switch, m dropper, s server)."""

    switch_kind: str  # "none", "model" or "bmv2"
    ns: dict[str, str]
    prefix: str  # the lab slot's: names of the hosts' cgroups
    registry: Registry  # the slot's record: every process and cgroup the test starts
    switch: Switch | None


def chain(kind: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The roles of the path's namespaces in order, client first, and the veth pairs between them."""
    to_dropper, to_server = (CLIENT_IF, DROPPER_IFS[0]), (DROPPER_IFS[1], SERVER_IF)
    if kind == "none":
        return "cms", (to_dropper, to_server)
    return "cwms", ((CLIENT_IF, SWITCH_PORTS.client), (SWITCH_PORTS.server, DROPPER_IFS[0]), to_server)


@pytest.fixture(scope="module", params=["none", "model", "bmv2"], ids=["no-switch", "model-switch", "bmv2"])
def net(request, tmp_path_factory):
    kind = request.param
    if os.geteuid() != 0:
        pytest.skip("needs root (namespaces, cgroups, BPF)")
    subprocess.run(["bash", str(ROOT / "mininet/accessnet/build_native.sh")], check=True)
    why = irto.unavailable()
    if why:
        pytest.skip(f"initial RTO program unavailable: {why}")
    for tool in ("tcpdump", "ip"):
        if not subprocess.run(["which", tool], capture_output=True).returncode == 0:
            pytest.skip(f"{tool} not installed")
    if kind == "bmv2":
        why = missing_toolchain()
        if why:
            pytest.skip(why)
        build_p4()
    roles, links = chain(kind)
    with Lease() as lease:
        ns = {r: f"{lease.prefix}irto-{r}" for r in roles}
        with namespace_chain(tuple(ns.values()), links, (CLI, SRV), (CLI6, SRV6)), \
                (nullcontext() if kind == "none" else
                 lab_switch(kind, ns["w"], SWITCH_PORTS, SWITCH_CFG, tmp_path_factory.mktemp(f"irto-{kind}"),
                            lease.registry)) as switch:
            yield Net(kind, ns, f"{lease.prefix}irto-", lease.registry, switch)


def server_script(addr: str) -> str:
    return f"""
import socket, sys
l = socket.socket(socket.AF_INET6 if ":" in "{addr}" else socket.AF_INET)
l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("{addr}", {PORT})); l.listen(4); print("listening", flush=True)
c, _ = l.accept(); c.settimeout(20)
assert c.recv(100) == b"GET"
c.sendall(b"x" * 100)
c.recv(100)
"""


def client_script(addr: str) -> str:
    return f"""
import socket
c = socket.create_connection(("{addr}", {PORT}), timeout=20)
assert c.family == (socket.AF_INET6 if ":" in "{addr}" else socket.AF_INET)
c.sendall(b"GET")
got = b""
while len(got) < 100:
    got += c.recv(100)
c.close()
"""


def segments(path: Path) -> list[tuple[float, str, int, int, int]]:
    """(time, sender 'c'/'s', TCP flags, seq, payload length) of every TCP segment of the test's connection,
    over IPv4 or IPv6."""
    out = []
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            ip = ip_layer(buf)
            if ip is None or ip.proto != PROTO_TCP or ip.later_fragment:
                continue
            t = dpkt.tcp.TCP(bytes(buf[ip.l4:]))
            if PORT not in (t.sport, t.dport):
                continue
            out.append((float(ts), "s" if t.sport == PORT else "c", t.flags, t.seq, ip.l4_len - 4 * t.off))
    return out


def exchange(net: Net, tmp_path: Path, srv_s: float | None, cli_s: float | None, drops: dict,
             timestamps: bool = True, tlp: bool = True, server: str = SRV) -> dict:
    """One connection, client -> ``server`` (its IPv4 or its IPv6 address), through the path (the switch, the
    dropper); returns both ends' captures."""
    assert net.switch is None or net.switch.alive(), f"the {net.switch_kind} switch is not running"
    c, m, s = (net.ns[r] for r in "cms")
    for ns in (c, s):
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.tcp_timestamps={int(timestamps)}",
           "net.ipv4.tcp_sack=1", "net.ipv4.tcp_no_metrics_save=1", f"net.ipv4.tcp_early_retrans={3 if tlp else 0}")
    hosts = {"srv": types.SimpleNamespace(pid=None), "cli": types.SimpleNamespace(pid=None)}
    progs, procs = [], []
    try:
        for name, value in (("srv", srv_s), ("cli", cli_s)):
            if value is not None:
                progs.append(irto.InitialRto(value, net.prefix, net.registry, tmp_path).start({name: hosts[name]}))
        caps = {"c": tmp_path / "client.pcap", "s": tmp_path / "server.pcap"}
        for ns, ifname, key in ((c, CLIENT_IF, "c"), (s, SERVER_IF, "s")):
            procs.append(subprocess.Popen(["ip", "netns", "exec", ns, "tcpdump", "-i", ifname, "-n", "-U", "--immediate-mode", "-s", "256",
                                           "--time-stamp-precision=nano", "-w", str(caps[key]), "tcp"],
                                          stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"tcpdump-{key}.err", "w")))
        dropper = subprocess.Popen(["ip", "netns", "exec", m, sys.executable, str(ROOT / "tests/irto_dropper.py"),
                                    *DROPPER_IFS, *(f"{k}={v}" for k, v in drops.items())],
                                   stdout=subprocess.PIPE, text=True)
        procs.append(dropper)
        assert dropper.stdout.readline().startswith("ready")
        time.sleep(1.0)  # the captures are listening (and exec'd: their command lines are final)
        for p in procs:
            net.registry.process(p.pid)
        listener = subprocess.Popen(["ip", "netns", "exec", s, sys.executable, "-c", server_script(server)],
                                    stdout=subprocess.PIPE, text=True, preexec_fn=irto.preexec(hosts["srv"]))
        procs.append(listener)
        assert listener.stdout.readline().startswith("listening")
        client = subprocess.Popen(["ip", "netns", "exec", c, sys.executable, "-c", client_script(server)],
                                  preexec_fn=irto.preexec(hosts["cli"]))
        procs.append(client)
        assert client.wait(timeout=25) == 0
        assert listener.wait(timeout=5) == 0
        time.sleep(0.3)
    finally:
        stop_gracefully(list(reversed(procs)), 5.0)
        calls = []
        for prog in progs:
            prog.stop()
            calls.append(prog.calls)
    assert all(n and n > 0 for n in calls), f"the program was never asked: calls {calls}"
    out = {k: segments(v) for k, v in caps.items()}
    print(timeline(out))
    return out


def timeline(caps: dict) -> str:
    """Both captures, for the failure message: time since the first SYN, sender, flags, seq, payload."""
    lines = []
    for k, segs in caps.items():
        t0 = segs[0][0] if segs else 0.0
        lines.append(f"{'client' if k == 'c' else 'server'} capture:")
        lines += [f"  {t - t0:8.4f} {w} flags=0x{f:02x} seq={q} len={n}" for t, w, f, q, n in segs]
    return "\n".join(lines)


def gaps(segs, sender: str, pick) -> list[float]:
    """Time between consecutive transmissions of the first segment ``pick`` selects (original, rtx, ...)."""
    first = next(x for x in segs if x[1] == sender and pick(x))
    times = [x[0] for x in segs if x[1] == sender and pick(x) and x[3] == first[3]]
    return [round(b - a, 4) for a, b in zip(times, times[1:])]


def is_syn(x):
    return x[2] & 0x12 == 0x02


def is_synack(x):
    return x[2] & 0x12 == 0x12


def is_data(x):
    return x[4] > 0


MEASURED: dict[str, list[float]] = {}


@pytest.mark.parametrize("irto_s", [1, 3, None])
def test_syn_retransmission_after_the_initial_rto(net, tmp_path, irto_s):
    """First SYN-ACK dropped: the client's SYN is retransmitted after its initial RTO (kernel: 1 s). The
    server's initial RTO is 2 s longer: with the same value its SYN-ACK retransmission raced the client's
    timer (0.2 ms apart here) and, arriving first, left no SYN retransmission to measure."""
    caps = exchange(net, tmp_path, (irto_s or 1) + 2, irto_s, {"synack": 1})
    syn = gaps(caps["c"], "c", is_syn)
    print(f"irto {irto_s}: client SYN retransmitted after {syn} s (client capture)")
    want = irto_s or 1.0
    assert syn and near(syn[0], want), timeline(caps)


@pytest.mark.parametrize("srv_s, cli_s", [(1, 3), (3, 5)])
def test_server_synack_retransmission_after_its_initial_rto(net, tmp_path, srv_s, cli_s):
    """First SYN-ACK dropped, the client's initial RTO longer than the server's: the server's own SYN-ACK
    timer retransmits it after the server's initial RTO, and the client never retransmits its SYN."""
    caps = exchange(net, tmp_path, srv_s, cli_s, {"synack": 1})
    sa = gaps(caps["s"], "s", is_synack)
    print(f"server irto {srv_s}, client {cli_s}: SYN-ACK retransmitted after {sa} s (server capture)")
    assert sa and near(sa[0], srv_s), timeline(caps)
    assert gaps(caps["c"], "c", is_syn) == [], timeline(caps)


@pytest.mark.parametrize("irto_s", [1, 3])
def test_data_rto_comes_from_the_handshake_rtt_sample(net, tmp_path, irto_s):
    """The server's first data segment dropped after a clean handshake: Linux has an RTT sample from the
    handshake and retransmits well before the initial RTO (RTO/TLP from the sample, 200 ms floor)."""
    caps = exchange(net, tmp_path, irto_s, irto_s, {"data": 1})
    d = gaps(caps["s"], "s", is_data)
    print(f"irto {irto_s}: server data retransmitted after {d} s (server capture)")
    assert d and 0.19 < d[0] < 0.5, timeline(caps)


@pytest.mark.parametrize("irto_s", [1, 3])
@pytest.mark.parametrize("tlp", [True, False])
def test_data_before_any_rtt_sample(net, tmp_path, irto_s, tlp):
    """No RTT sample at the server (its SYN-ACK retransmitted, no timestamps), then its first data segment
    dropped: the kernel's constants decide, not the initial RTO: the tail-loss probe after 1 s, or without
    TLP the RTO after 3 s (RFC 6298 5.7). The client's initial RTO is 2 s longer than the server's, as in
    ``test_server_synack_retransmission_after_its_initial_rto``: with the same value its SYN retransmission
    raced the server's SYN-ACK timer, and a first SYN that crossed the userspace path 13 ms late on a busy
    host made the server answer the retransmitted SYN 0.988 s after its SYN-ACK, before its own timer."""
    caps = exchange(net, tmp_path, irto_s, irto_s + 2, {"synack": 1, "data": 1}, timestamps=False, tlp=tlp)
    assert gaps(caps["c"], "c", is_syn) == [], timeline(caps)  # the server's timer alone retransmitted
    sa = gaps(caps["s"], "s", is_synack)
    d = gaps(caps["s"], "s", is_data)
    print(f"irto {irto_s}, TLP {tlp}: SYN-ACK retransmitted after {sa} s; data retransmitted after {d} s")
    assert sa and near(sa[0], irto_s), timeline(caps)
    assert d and near(d[0], 1.0 if tlp else 3.0), timeline(caps)


@pytest.mark.parametrize("srv_s, cli_s", [(5, 3), (1, 3)], ids=["client-syn", "server-synack"])
def test_the_initial_rtos_hold_over_ipv6(net, tmp_path, srv_s, cli_s):
    """The same connection over IPv6, its first SYN-ACK dropped: the side with the shorter initial RTO
    retransmits after it (the client its SYN after 3 s; the server its SYN-ACK after 1 s, and the client not at
    all). The segments in the captures are IPv6 ones (``segments`` reads either family; the client script
    asserts its socket's family)."""
    caps = exchange(net, tmp_path, srv_s, cli_s, {"synack": 1}, server=SRV6)
    if cli_s < srv_s:
        syn = gaps(caps["c"], "c", is_syn)
        print(f"IPv6, client irto {cli_s}: SYN retransmitted after {syn} s")
        assert syn and near(syn[0], cli_s), timeline(caps)
    else:
        sa = gaps(caps["s"], "s", is_synack)
        print(f"IPv6, server irto {srv_s}: SYN-ACK retransmitted after {sa} s")
        assert sa and near(sa[0], srv_s), timeline(caps)
        assert gaps(caps["c"], "c", is_syn) == [], timeline(caps)
    with open(tmp_path / "client.pcap", "rb") as f:
        assert all(buf[12:14] == b"\x86\xdd" for _, buf in dpkt.pcap.Reader(f))  # the capture's filter: tcp
