"""The emulated access network, built with Mininet's Node and Link classes.

    srv ── d1 ── [sw port 1]  switch  [port 2] ══ d2 ── cli
  server   11 ms                 [port 3] ── mon   drain, 70 ms   phone
                                  telemetry

* ``srv``: the server side (web server, the far end of the audio call).
* ``d1``, ``d2``: delay nodes adding the propagation delay (netem where the
  kernel has it, else the project's userspace delay line ``build/delayline``).
  ``d1`` has no rate and no queue of its own. ``d2``'s downstream direction is
  also the *drain* of the P4 switches: the delay line releases each frame when
  the switch's queue model says the link sends it (``controller/shaper.py``),
  so it is the only place packets wait, its buffer is larger than the modelled
  one (the switch's decisions are the only losses), and a stall of the host
  delays frames but never the link's service.
* ``sw``: the switch's own network namespace, holding the switch ports; the
  switch process (BMv2 and its controller, the reference-model forwarder, or a
  Linux bridge) runs inside it, so its control sockets (P4Runtime gRPC, BMv2's
  Thrift, which cannot bind to one address) are reachable only from inside
  the lab. With the kernel backend (a Linux bridge whose AQM is a qdisc) the
  drain is a ``tbf`` at the link rate on port 2 instead, the qdisc its child.
* ``cli``: the phone. ``mon`` receives the telemetry clones.

``srv`` and ``cli`` are dual-stack in every run (``accessnet.addresses``: 10.0.0.1/24 and fd00::1/64, 10.0.0.2/24
and fd00::2/64), each family with static neighbours and the server's initial window on its connected
route; a scenario's ``[run] ip`` picks the family its workloads use. Their IPv6 is quiet (no link-local
address, no duplicate address detection, no router solicitations; the two MLD reports of each address go
out before anything forwards), and the delay nodes, the switch's namespace and the monitor have no IPv6 at
all: nothing but the scenario's traffic meets the bottleneck.

Every host and interface lives in a namespace of its own run, and every name
carries the run's prefix (``leftovers.Lease``), so parallel runs never share a
name, a port or a record. ``AccessNet.stop()`` removes exactly what
``start()`` made (also on error) and never talks to a host shell: it kills
the run's processes and host shells by PID, which removes their namespaces
and interfaces, so a dead shell cannot make the teardown hang.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from mininet.link import Link
from mininet.net import Mininet
from mininet.node import Host, Node

from controller import shaper

from .addresses import NO_IPV6, QUIET_IPV6, V4, V6, Hosts, ipv6_missing, sysctl_args
from .keepawake import KeepAwake
from .leftovers import STATE_DIR, Registry
from .profiles import Profile

LOG = logging.getLogger("iwlab.net")
ROOT = Path(__file__).resolve().parents[2]
DELAYLINE = ROOT / "build" / "delayline"
RWND_OBJECT, RWND_LOADER = ROOT / "build" / "rwnd.bpf.o", ROOT / "build" / "rwnd-attach"  # the phone's window
# A Linux bridge that forwards and says nothing: with multicast snooping on, a bridge joins the all-snoopers
# groups (RFC 4286) and its IGMP report crossed the bottleneck (seen in a kernel-backend run's captures).
QUIET_BRIDGE = "bridge mcast_snooping 0"


def sh(node: Node, cmd: str, timeout: float = 20.0, check: bool = False) -> str:
    """Run a shell command in a host's namespace as a process of its own, with a time limit; returns its
    output. Unlike ``node.cmd`` it never waits on the host's interactive shell, which blocks forever once
    that shell has died."""
    p = node.popen(["sh", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        out, _ = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise RuntimeError(f"{node.name}: '{cmd}' did not finish within {timeout} s") from None
    text = out.decode(errors="replace")
    if check and p.returncode != 0:
        raise RuntimeError(f"{node.name}: '{cmd}' failed (exit {p.returncode}): {text.strip()}")
    return text


def offloads_off(node: Node, intf: str) -> None:
    sh(node, f"ethtool -K {intf} tx off tso off gso off gro off lro off >/dev/null 2>&1")


@functools.cache
def has_netem() -> bool:
    """netem works here? (tried for real, see kernel_qdisc_error)"""
    return kernel_qdisc_error("netem delay 1ms", 1e9) is None


def kernel_qdisc_error(qdisc: str, rate_bps: float) -> str | None:
    """Why the kernel refuses ``qdisc`` as the lab installs it (a child of the tbf drain shaper), or None
    when it works; tried on a throwaway dummy device in a throwaway namespace of this process."""
    ns = f"iwlab-probe-{os.getpid()}-q"
    try:
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True, timeout=10)
        # a veth pair (every kernel that runs the lab has veth; some lack the dummy device)
        subprocess.run(["ip", "-n", ns, "link", "add", "d0", "type", "veth", "peer", "name", "d1"], check=True,
                       capture_output=True, timeout=10)
        ex = ["ip", "netns", "exec", ns]
        r = subprocess.run([*ex, *shaper.tbf_args("d0", rate_bps)], capture_output=True, text=True, timeout=10)
        if r.returncode == 0:
            r = subprocess.run([*ex, "tc", "qdisc", "replace", "dev", "d0", "parent", "1:1", "handle", "10:",
                                *qdisc.split()], capture_output=True, text=True, timeout=10)
        return None if r.returncode == 0 else (r.stderr or r.stdout).strip() or f"exit {r.returncode}"
    except (OSError, subprocess.SubprocessError) as e:
        return f"probe failed: {e}"
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


@dataclass
class Ports:
    """Switch port numbers and the root-namespace interface names behind them."""

    server: str
    client: str
    monitor: str

    def bmv2_args(self) -> list[str]:
        return ["-i", f"1@{self.server}", "-i", f"2@{self.client}", "-i", f"3@{self.monitor}"]


DRAINS = ("delayline", "tbf")  # the P4 switches' drain (d2's delay line), the kernel backend's (a tbf)


class AccessNet:
    def __init__(self, prefix: str, prof: Profile, netem: bool | None = None, logdir: Path | None = None,
                 registry: Registry | None = None, drain: str = "delayline") -> None:
        if drain not in DRAINS:
            raise ValueError(f"drain {drain!r}: one of {', '.join(DRAINS)}")
        self.prefix = prefix
        self.drain = drain
        self.drain_control = STATE_DIR / f"{prefix}drain.ctl"  # the delay line's FIFO (drain = "delayline")
        self.logdir = logdir
        self.prof = prof
        self.netem = has_netem() if netem is None else netem
        self.net: Mininet | None = None
        self.procs: list[subprocess.Popen] = []
        self.registry = registry or Registry(prefix)
        self.awake = KeepAwake()
        p = prefix
        self.ports = Ports(f"{p}sw-eth1", f"{p}sw-eth2", f"{p}sw-eth3")
        self.no_ipv6 = ipv6_missing()  # why the hosts are IPv4 only (a kernel without IPv6), else None
        self.families: tuple[Hosts, ...] = (V4,) if self.no_ipv6 else (V4, V6)

    # -- build ------------------------------------------------------------------------
    def start(self) -> "AccessNet":
        p = self.prefix
        self.awake.start(self.registry)
        net = Mininet(topo=None, build=False, controller=None, switch=None, host=Host, link=Link,
                      autoSetMacs=False, autoStaticArp=False, waitConnected=False)
        self.net = net
        try:
            self.srv = net.addHost(f"{p}srv", ip=f"{V4.server}/{V4.prefix_len}")
            self.cli = net.addHost(f"{p}cli", ip=f"{V4.client}/{V4.prefix_len}")
            self.d1 = net.addHost(f"{p}d1", ip=None)
            self.d2 = net.addHost(f"{p}d2", ip=None)
            self.mon = net.addHost(f"{p}mon", ip=None)
            self.sw = net.addHost(f"{p}sw", ip=None)  # its own namespace: see the module's docstring
            self._ipv6_defaults()  # before the links: their interfaces take the namespaces' defaults
            net.addLink(self.srv, self.d1, intfName1=f"{p}srv-eth0", intfName2=f"{p}d1-eth0")
            net.addLink(self.d1, self.sw, intfName1=f"{p}d1-eth1", intfName2=self.ports.server)
            net.addLink(self.sw, self.d2, intfName1=self.ports.client, intfName2=f"{p}d2-eth0")
            net.addLink(self.d2, self.cli, intfName1=f"{p}d2-eth1", intfName2=f"{p}cli-eth0")
            net.addLink(self.sw, self.mon, intfName1=self.ports.monitor, intfName2=f"{p}mon-eth0")
            net.build()
            for node in self.nodes():
                self.registry.process(node.pid)
            for node in self.nodes():
                for intf in node.intfNames():
                    if intf != "lo":
                        offloads_off(node, intf)
                        sh(node, f"ip link set {intf} up", check=True)
                sh(node, "ip link set lo up", check=True)
            self._ipv6_interfaces()
            self._static_neighbours()  # IPv6 addresses too: before the delay lines forward anything
            self._delays()
            self._drain_shaper()
        except BaseException:
            self.stop()
            raise
        return self

    def nodes(self) -> list[Node]:
        return [n for n in (getattr(self, k, None) for k in ("srv", "cli", "d1", "d2", "mon", "sw")) if n is not None]

    def dead_hosts(self) -> list[str]:
        """Hosts whose shell (the process holding its namespace) has died: the run cannot go on."""
        return [n.name for n in self.nodes() if n.shell is None or n.shell.poll() is not None]

    def _ipv6_defaults(self) -> None:
        """IPv6 on in the server's and the phone's namespaces, quiet (``addresses.QUIET_IPV6``); off for every
        interface the forwarding namespaces will make (``addresses.NO_IPV6``)."""
        if self.no_ipv6:
            LOG.warning("%s: the hosts are IPv4 only", self.no_ipv6)
            return
        for node in (self.srv, self.cli):
            sh(node, "sysctl -qw " + " ".join(sysctl_args(QUIET_IPV6)), check=True)
        for node in (self.d1, self.d2, self.mon, self.sw):
            sh(node, "sysctl -qw " + " ".join(sysctl_args(NO_IPV6, ("default",))), check=True)

    def _ipv6_interfaces(self) -> None:
        """The same settings on every interface by name (the per-interface value is the one the kernel uses)."""
        if self.no_ipv6:
            return
        for node in self.nodes():
            ifs = tuple(i for i in node.intfNames() if i != "lo")
            settings = QUIET_IPV6 if node in (self.srv, self.cli) else NO_IPV6
            if ifs:
                sh(node, "sysctl -qw " + " ".join(sysctl_args(settings, ifs)), check=True)

    def _static_neighbours(self) -> None:
        """Per family: the hosts' addresses (IPv6's without duplicate address detection, usable at once) and
        permanent neighbour entries, so neither ARP nor neighbour discovery ever crosses the bottleneck."""
        srv_if, cli_if = f"{self.prefix}srv-eth0", f"{self.prefix}cli-eth0"
        srv_mac, cli_mac = self.srv.intf(srv_if).MAC(), self.cli.intf(cli_if).MAC()
        for fam in self.families:
            if fam.version == 6:
                sh(self.srv, f"ip -6 addr add {fam.server}/{fam.prefix_len} dev {srv_if} nodad", check=True)
                sh(self.cli, f"ip -6 addr add {fam.client}/{fam.prefix_len} dev {cli_if} nodad", check=True)
            sh(self.srv, f"ip -{fam.version} neigh replace {fam.client} lladdr {cli_mac} dev {srv_if} nud permanent",
               check=True)
            sh(self.cli, f"ip -{fam.version} neigh replace {fam.server} lladdr {srv_mac} dev {cli_if} nud permanent",
               check=True)

    def _delays(self) -> None:
        """d1: server-side delay both ways; d2: the access link's delay both ways, and its drain downstream
        (always the delay line, netem or not: only it releases frames on the model's schedule)."""
        for node, ms in ((self.d1, self.prof.server_delay_ms), (self.d2, self.prof.delay_ms)):
            a, b = f"{node.name}-eth0", f"{node.name}-eth1"
            us = int(round(ms * 1000))
            drain = node is self.d2 and self.drain == "delayline"
            if self.netem and not drain:
                sh(node, f"ip link add br0 type {QUIET_BRIDGE} && ip link set {a} master br0 && "
                         f"ip link set {b} master br0 && ip link set br0 up", check=True)
                for intf in (a, b):
                    sh(node, f"tc qdisc replace dev {intf} root netem delay {ms}ms limit 1000000", check=True)
            else:
                if not DELAYLINE.exists():
                    raise RuntimeError(f"{DELAYLINE} is missing: run 'make setup' (it builds the delay line)")
                log = open(self.logdir / f"delay_{node.name[len(self.prefix):]}.log", "wb") if self.logdir \
                    else subprocess.DEVNULL
                opts: list[str] = []
                if drain:
                    self.registry.files([str(self.drain_control)])
                    self.drain_control.unlink(missing_ok=True)
                    os.mkfifo(self.drain_control, 0o600)
                    opts = shaper.delayline_args(self.prof.rate_bps, self.drain_control)
                argv = [str(DELAYLINE), *opts, a, b, str(us), str(us)]
                proc = node.popen(argv, stdout=subprocess.DEVNULL, stderr=log)
                self.procs.append(proc)
                self.registry.process(proc.pid, argv)

    def _drain_shaper(self) -> None:
        if self.drain == "tbf":
            sh(self.sw, " ".join(shaper.tbf_args(self.ports.client, self.prof.rate_bps)), check=True)

    def drain_args(self) -> list[str]:
        """How a controller in the switch's namespace reaches the drain to follow a rate change."""
        if self.drain == "tbf":
            return ["--shaper-dev", self.ports.client]
        return ["--drain-control", str(self.drain_control)]

    def kernel_aqm(self, qdisc: str) -> None:
        """Kernel backend: the switch is a Linux bridge and the AQM a child of the tbf."""
        if self.drain != "tbf":
            raise RuntimeError("a kernel AQM needs the tbf drain: AccessNet(..., drain='tbf')")
        p = self.prefix
        br = f"{p}br"
        sh(self.sw, f"ip link add {br} type {QUIET_BRIDGE} && ip link set {self.ports.server} master {br} && "
                    f"ip link set {self.ports.client} master {br} && ip link set {br} up", check=True)
        r = sh(self.sw, f"tc qdisc replace dev {self.ports.client} parent 1:1 handle 10: {qdisc} 2>&1; echo rc=$?")
        if not r.strip().endswith("rc=0"):
            raise RuntimeError(f"kernel qdisc '{qdisc}' is not available here: {r.strip()}")

    def set_iw(self, iw: int) -> None:
        """The server's initial window: ``initcwnd`` on its connected route of each family (the kernel's own
        routes, changed in place: the same key, so no second route appears)."""
        dev = f"{self.prefix}srv-eth0"
        for fam in self.families:
            route = (f"ip route change {fam.network} dev {dev} proto kernel scope link src {fam.server}"
                     if fam.version == 4 else f"ip -6 route change {fam.network} dev {dev} proto kernel metric 256")
            sh(self.srv, f"{route} initcwnd {iw}", check=True)

    def set_client_window(self, window_bytes: int) -> None:
        """The phone's receive window: a tc classifier on the client's interface (``bpf/rwnd.bpf.c``) lowers the
        window of every segment the client sends to at most ``window_bytes`` (TCP over IPv4 and IPv6), in a
        namespace without window scaling (the field is then bytes; ``net.ipv4.tcp_window_scaling`` holds for
        TCP over IPv6 too). The kernel's own clamps do not hold past the SYN on Linux 6.x."""
        sh(self.cli, "sysctl -qw net.ipv4.tcp_window_scaling=0", check=True)
        sh(self.cli, f"{RWND_LOADER} {RWND_OBJECT} {self.prefix}cli-eth0 {int(window_bytes)}", check=True)

    def set_tcp(self, cc: str) -> None:
        """SACK on, no cached metrics; the namespaces' default congestion control where the kernel lets a
        namespace choose it (the web server sets ``cc`` on its own sockets in any case: TCP_CONGESTION). The
        ``net.ipv4.tcp_*`` settings hold for TCP over IPv6 as well."""
        for h in (self.srv, self.cli):
            sh(h, "sysctl -qw net.ipv4.tcp_no_metrics_save=1 net.ipv4.tcp_sack=1", check=True)
            out = sh(h, f"sysctl -qw net.ipv4.tcp_congestion_control={cc} 2>&1")
            if out.strip():
                LOG.info("%s: default congestion control not set (%s); the server sets %s per socket",
                         h.name, out.strip(), cc)

    # -- teardown -----------------------------------------------------------------
    def stop(self) -> None:
        """Tear down without ever waiting on a host shell: the delay lines, then every host shell by PID
        (SIGKILL to its process group); a namespace and its interfaces vanish with its last process. The
        caller stops the processes it started in the hosts first (they hold the namespaces too)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self.procs.clear()
        self.drain_control.unlink(missing_ok=True)
        self.awake.stop()
        if self.net is not None:
            for node in self.net.hosts:
                kill_host(node)
            self.net = None
        self.registry.clear()


def kill_host(node: Node) -> None:
    shell = node.shell
    if shell is not None:
        if shell.poll() is None:
            try:
                os.killpg(shell.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            shell.wait(timeout=10)
        except subprocess.TimeoutExpired:
            LOG.warning("host shell %s (pid %d) did not exit after SIGKILL", node.name, shell.pid)
        node.waitExited = False
    try:
        node.cleanup()  # closes its pty; never talks to the shell
    except OSError:
        pass


def tool(name: str) -> str:
    path = shutil.which(name)
    if not path:
        raise RuntimeError(f"{name} not found: run 'make setup'")
    return path
