"""Three network namespaces of a test's own, a -- m -- b: a process the test starts in m forwards between
m's two veth ends (a delay line, a dropper). Offloads off on every end (a raw-socket forwarder would break TCP
checksums otherwise), loopbacks up, a /24 address at each outer end and static neighbours across m (ARP
resolution through the forwarder would hold the first packets back). Used by test_delayline and test_irto."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def sh(*args, check=True):
    return subprocess.run(args, check=check, capture_output=True, text=True)


@contextmanager
def three_namespaces(ns: tuple[str, str, str], ifs: tuple[str, str, str, str],
                     addrs: tuple[str, str]) -> Iterator[None]:
    """Namespaces ``ns`` = (a, m, b) joined by veth pairs a:ifs[0] -- m:ifs[1] and b:ifs[3] -- m:ifs[2], with
    ``addrs`` on a's and b's ends; every namespace is deleted on the way out, also after an error."""
    a, m, b = ns
    a_if, m_a, m_b, b_if = ifs
    ip_a, ip_b = addrs
    for n in ns:
        sh("ip", "netns", "del", n, check=False)
        sh("ip", "netns", "add", n)
    try:
        sh("ip", "link", "add", a_if, "netns", a, "type", "veth", "peer", "name", m_a, "netns", m)
        sh("ip", "link", "add", b_if, "netns", b, "type", "veth", "peer", "name", m_b, "netns", m)
        for n, ends in ((a, [a_if]), (m, [m_a, m_b]), (b, [b_if])):
            for i in ends:
                sh("ip", "netns", "exec", n, "ethtool", "-K", i, "tx", "off", "tso", "off", "gso", "off", "gro",
                   "off", check=False)
                sh("ip", "-n", n, "link", "set", i, "up")
            sh("ip", "-n", n, "link", "set", "lo", "up")
        sh("ip", "-n", a, "addr", "add", f"{ip_a}/24", "dev", a_if)
        sh("ip", "-n", b, "addr", "add", f"{ip_b}/24", "dev", b_if)
        mac = {n: sh("ip", "netns", "exec", n, "cat", f"/sys/class/net/{i}/address").stdout.strip()
               for n, i in ((a, a_if), (b, b_if))}
        sh("ip", "-n", a, "neigh", "replace", ip_b, "lladdr", mac[b], "dev", a_if, "nud", "permanent")
        sh("ip", "-n", b, "neigh", "replace", ip_a, "lladdr", mac[a], "dev", b_if, "nud", "permanent")
        yield
    finally:
        for n in ns:
            sh("ip", "netns", "del", n, check=False)
