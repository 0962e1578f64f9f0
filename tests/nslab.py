"""Network namespaces of a test's own in a chain, a -- m -- b or a -- m1 -- m2 -- b: processes the test starts
in the middle namespaces forward between their two veth ends (a delay line, a dropper, a switch). Offloads off
on every end (a raw-socket forwarder would break TCP checksums otherwise), loopbacks up, a /24 address at each
outer end, with ``addrs6`` a /64 IPv6 address too, and static neighbours across the chain (ARP or neighbour
discovery through a forwarder would hold the first packets back). IPv6 as in the lab (``accessnet.addresses``):
quiet at the outer ends, off in the middle, so the forwarders see the test's traffic only. ``lab_switch`` runs
the lab's own switch (the reference model or BMv2 with its controller) in one of them. Used by test_delayline,
test_irto and test_rwnd."""

from __future__ import annotations

import subprocess
import time
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from accessnet.addresses import NO_IPV6, QUIET_IPV6, ipv6_missing, sysctl_args
from accessnet.leftovers import Registry
from accessnet.netns import NsNode, veth_up
from accessnet.switches import Bmv2Switch, ModelSwitch, Switch, TuneSpec
from accessnet.topology import Ports


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


def ipv6_settings(ns: str, settings: dict[str, int], ifnames: tuple[str, ...]) -> None:
    if ipv6_missing() is None:
        sh("ip", "netns", "exec", ns, "sysctl", "-qw", *sysctl_args(settings, ifnames))


@contextmanager
def namespace_chain(ns: tuple[str, ...], links: tuple[tuple[str, str], ...],
                    addrs: tuple[str, str], addrs6: tuple[str, str] | None = None) -> Iterator[None]:
    """Namespaces ``ns`` in a chain, ``ns[i]`` joined to ``ns[i + 1]`` by a veth pair whose ends are
    ``links[i]`` = (the end in ns[i], the end in ns[i + 1]), with ``addrs`` (and ``addrs6``) on the two outer
    ends (the first and the last); every namespace is deleted on the way out, also after an error."""
    assert len(links) == len(ns) - 1
    a, b = ns[0], ns[-1]
    a_if, b_if = links[0][0], links[-1][1]
    ip_a, ip_b = addrs
    for n in ns:
        sh("ip", "netns", "del", n, check=False)
        sh("ip", "netns", "add", n)
        outer = n in (a, b)  # before the veths: they take the namespace's defaults
        ipv6_settings(n, QUIET_IPV6 if outer else NO_IPV6, ("all", "default") if outer else ("default",))
    try:
        for (left, right), (left_if, right_if) in zip(zip(ns, ns[1:]), links):
            sh("ip", "link", "add", left_if, "netns", left, "type", "veth", "peer", "name", right_if, "netns", right)
            veth_up(left, left_if)
            veth_up(right, right_if)
        for n in ns:
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "-n", a, "addr", "add", f"{ip_a}/24", "dev", a_if)
        sh("ip", "-n", b, "addr", "add", f"{ip_b}/24", "dev", b_if)
        mac = {n: sh("ip", "netns", "exec", n, "cat", f"/sys/class/net/{i}/address").stdout.strip()
               for n, i in ((a, a_if), (b, b_if))}
        sh("ip", "-n", a, "neigh", "replace", ip_b, "lladdr", mac[b], "dev", a_if, "nud", "permanent")
        sh("ip", "-n", b, "neigh", "replace", ip_a, "lladdr", mac[a], "dev", b_if, "nud", "permanent")
        if addrs6 is not None:
            (v6_a, v6_b) = addrs6
            sh("ip", "-n", a, "-6", "addr", "add", f"{v6_a}/64", "dev", a_if, "nodad")
            sh("ip", "-n", b, "-6", "addr", "add", f"{v6_b}/64", "dev", b_if, "nodad")
            sh("ip", "-n", a, "-6", "neigh", "replace", v6_b, "lladdr", mac[b], "dev", a_if, "nud", "permanent")
            sh("ip", "-n", b, "-6", "neigh", "replace", v6_a, "lladdr", mac[a], "dev", b_if, "nud", "permanent")
        yield
    finally:
        for n in ns:
            sh("ip", "netns", "del", n, check=False)


def three_namespaces(ns: tuple[str, str, str], ifs: tuple[str, str, str, str],
                     addrs: tuple[str, str], addrs6: tuple[str, str] | None = None):
    """Namespaces ``ns`` = (a, m, b) joined by veth pairs a:ifs[0] -- m:ifs[1] and b:ifs[3] -- m:ifs[2], with
    ``addrs`` (and ``addrs6``) on a's and b's ends (``namespace_chain`` of three)."""
    a_if, m_a, m_b, b_if = ifs
    return namespace_chain(ns, ((a_if, m_a), (m_b, b_if)), addrs, addrs6)


@contextmanager
def lab_switch(kind: str, ns: str, ports: Ports, cfg: dict, logdir: Path, registry: Registry) -> Iterator[Switch]:
    """The lab's switch of ``kind`` ("model": ``ModelSwitch``, "bmv2": ``Bmv2Switch`` and its controller)
    started in namespace ``ns`` as a replication starts it: port 1 = ``ports.server``, port 2 =
    ``ports.client`` (both already in ``ns``), the telemetry port ``ports.monitor`` a veth made here, the
    table ``cfg``, its logs in ``logdir``. No drain shaper: nothing waits in it. Its processes are recorded in
    the lease's ``registry`` (a killed test's switch is removed by the slot's next owner); stopped on the way
    out."""
    sh("ip", "-n", ns, "link", "add", ports.monitor, "type", "veth", "peer", "name", f"{ports.monitor}p")
    veth_up(ns, ports.monitor, f"{ports.monitor}p")
    switch = {"model": ModelSwitch, "bmv2": Bmv2Switch}[kind]()
    try:
        switch.start(types.SimpleNamespace(sw=NsNode(ns), ports=ports, drain_args=lambda: []), cfg, logdir,
                     TuneSpec(time.time_ns()))
        for pid in switch.pids():
            registry.process(pid)
        yield switch
    finally:
        switch.stop()
