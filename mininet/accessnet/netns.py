"""Named network namespaces (``ip netns``) of a process's own, for what runs outside a Mininet lab: the test and
bench BMv2 (``accessnet.bmv2_veth``) and the tests' namespace chains (``tests/nslab.py``). A name carries the
creating process's PID, so two test runs never share one; a run records its namespaces in its lab slot
(``leftovers.Registry.netns``), so what a killed run left is deleted by the slot's next owner."""

from __future__ import annotations

import subprocess


def in_ns(ns: str | None, *args: str) -> list[str]:
    """``args`` as a command run in namespace ``ns`` (None: the root namespace)."""
    return ["ip", "netns", "exec", ns, *args] if ns else list(args)


def add_namespace(name: str) -> None:
    """A fresh namespace ``name`` with its loopback up (a stale one of that name, left by a dead process of
    the same PID, is deleted first)."""
    delete_namespace(name)
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True, timeout=10)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True, capture_output=True, timeout=10)


def delete_namespace(name: str) -> bool:
    """Delete namespace ``name`` (its interfaces and their veth peers go with it); whether it existed."""
    return subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10).returncode == 0


def namespaces() -> list[str]:
    """The names of the namespaces ``ip netns`` knows."""
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=10).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def veth_up(ns: str | None, *ifs: str) -> None:
    """Offloads off (a raw-socket forwarder or BMv2 would break TCP checksums otherwise) and the link up, for
    each of ``ifs`` in namespace ``ns`` (None: the root namespace)."""
    for i in ifs:
        subprocess.run(in_ns(ns, "ethtool", "-K", i, "tx", "off", "tso", "off", "gso", "off", "gro", "off"),
                       capture_output=True)
        subprocess.run(["ip", *(["-n", ns] if ns else []), "link", "set", i, "up"], check=True, capture_output=True)


class NsNode:
    """A named namespace as the lab's switch classes use a Mininet node: ``popen`` runs a command inside it
    (``ip netns exec`` execs the command, so the process's PID is the command's own)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def popen(self, args: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(in_ns(self.name, *args), **kw)
