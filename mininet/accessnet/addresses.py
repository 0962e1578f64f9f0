"""The lab's host addresses, one place for both IP families, and what a host's IPv6 must say on the wire.

Every run's server and phone are dual-stack: ``srv`` has 10.0.0.1/24 and fd00::1/64, ``cli`` 10.0.0.2/24 and
fd00::2/64 (``accessnet.topology``). A scenario's ``[run] ip`` (4 or 6) picks the family its workloads talk
over (``hosts``); the analysis finds a run's addresses the same way from meta.json's ``ip``. Nothing here
imports Mininet, so the analysis (``experiments``) can use it on a machine without the lab.

The sysctls below keep IPv6 quiet: the bottleneck must carry the scenario's traffic and nothing else.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass

IP_VERSIONS = (4, 6)


@dataclass(frozen=True)
class Hosts:
    """The server's and the phone's addresses in one family, and their on-link prefix."""

    version: int
    server: str
    client: str
    prefix_len: int

    @property
    def network(self) -> str:
        """The on-link prefix (``10.0.0.0/24``, ``fd00::/64``): the kernel's connected route, whose
        ``initcwnd`` is the server's initial window."""
        return str(ipaddress.ip_interface(f"{self.server}/{self.prefix_len}").network)


V4 = Hosts(4, "10.0.0.1", "10.0.0.2", 24)
V6 = Hosts(6, "fd00::1", "fd00::2", 64)
HOSTS = {4: V4, 6: V6}


def hosts(ip: int) -> Hosts:
    """The lab's addresses in family ``ip`` (4 or 6)."""
    return HOSTS[ip]


def family(addr: str) -> socket.AddressFamily:
    """The socket family of an address literal (AF_INET or AF_INET6)."""
    return socket.AF_INET6 if ipaddress.ip_address(addr).version == 6 else socket.AF_INET


def wildcard(fam: socket.AddressFamily) -> str:
    """The any-address of a family (what a sender binds to receive its replies)."""
    return "::" if fam == socket.AF_INET6 else "0.0.0.0"


def low32(addr: str) -> int:
    """An address as the switch's telemetry record holds it in ``src``/``dst``: an IPv4 address whole, an
    IPv6 address's low 32 bits (docs/telemetry.md)."""
    return int(ipaddress.ip_address(addr)) & 0xFFFFFFFF


def bind_any(kind: socket.SocketKind, port: int) -> socket.socket:
    """A socket bound to ``port`` on every address of both families: IPv6's wildcard with IPV6_V6ONLY off,
    so one receiver (or one web server) serves an IPv4 run and an IPv6 run alike; IPv4's wildcard where the
    kernel has no IPv6. Stream sockets get SO_REUSEADDR (a listener's port is free again at once)."""
    try:
        s = socket.socket(socket.AF_INET6, kind)
    except OSError:  # a kernel without IPv6
        s = socket.socket(socket.AF_INET, kind)
        any_addr = "0.0.0.0"
    else:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        any_addr = "::"
    if kind == socket.SOCK_STREAM:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((any_addr, port))
    return s


# IPv6 on the server and the phone: on, with only the static addresses (no link-local address, no duplicate
# address detection), no router solicitation or advertisement, and the MLD reports for the addresses'
# solicited-node groups (which no sysctl turns off) sent within 4 ms of the address (interval 1 ms, rounded
# up to a jiffy) rather than spread over a second: the lab adds the addresses before any delay line or
# switch forwards, so they never reach the bottleneck. Set on ``all`` and ``default`` before the interfaces
# exist (they take ``default`` when made) and on each interface after (per-interface values rule).
QUIET_IPV6 = {"disable_ipv6": 0, "accept_ra": 0, "router_solicitations": 0, "accept_dad": 0, "dad_transmits": 0,
              "addr_gen_mode": 1, "mldv1_unsolicited_report_interval": 1, "mldv2_unsolicited_report_interval": 1}
# Elements that only forward (delay lines, the switch's ports, the monitor): no IPv6 of their own at all, so
# they never originate neighbour discovery, MLD or router solicitations on the path. Set on ``default`` before
# the interfaces exist and on each interface after, never on ``all``: that would take ::1 from the loopback,
# where the switch's control clients may resolve ``localhost``.
NO_IPV6 = {"disable_ipv6": 1}


def sysctl_args(settings: dict[str, int], ifnames: tuple[str, ...] = ("all", "default")) -> list[str]:
    """``net.ipv6.conf.<if>.<key>=<value>`` for every interface name and setting (``sysctl -w`` arguments)."""
    return [f"net.ipv6.conf.{i}.{k}={v}" for i in ifnames for k, v in settings.items()]


def ipv6_missing() -> str | None:
    """Why this kernel cannot run the lab's IPv6 (booted with ipv6.disable=1, or built without it), or None."""
    try:
        with open("/proc/sys/net/ipv6/conf/default/disable_ipv6"):
            return None
    except OSError as e:
        return f"the kernel has no IPv6 (/proc/sys/net/ipv6: {e.strerror or e})"
