"""The IP layer of a captured Ethernet frame, IPv4 or IPv6: the one parser every reader of the lab's captures
uses (``tcpcap.read_tcp_headers``, and through it the bulk goodput and the timeouts; the tests' readers of
server.pcap and client.pcap; the irto test's dropper), so that a reader accepts IPv6 wherever it accepts IPv4.

``ip_layer(buf, start, end)`` reads the frame ``buf[start:end]`` (a whole capture file may be passed with the
record's bounds, nothing is copied): Ethernet, any 802.1Q/802.1ad tags, then IPv4 (options skipped by the
IHL) or IPv6 (hop-by-hop, routing, destination options, fragment and AH extension headers walked to the
transport). It returns the family, both addresses as integers, the transport protocol, where the transport
header starts, how long the transport part is by the IP header's own lengths (so a capture's snap length does
not matter), IPv4's identification (IPv6 has none: 0) and whether the frame is a fragment other than the
first (no transport header in it); None for a frame of another ethertype or one cut inside its IP headers.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

ETH_HEADER = 14
ETHERTYPE_IPV4, ETHERTYPE_IPV6 = b"\x08\x00", b"\x86\xdd"
VLAN_TAGS = (b"\x81\x00", b"\x88\xa8")
IPV6_HEADER = 40
# IPv6 extension headers before the transport: next header, then the length in 8-octet units beyond the first 8
HOP_BY_HOP, ROUTING, FRAGMENT, AUTH, DEST_OPTIONS = 0, 43, 44, 51, 60
MAX_EXTENSIONS = 8  # more than Linux ever sends: a guard against a crafted loop
PROTO_TCP, PROTO_UDP = 6, 17


@dataclass(frozen=True, slots=True)
class IpLayer:
    """One frame's IP layer (offsets are into the buffer ``ip_layer`` was given)."""

    version: int  # 4 or 6
    src: int  # source address as an integer (32 bits for IPv4, 128 for IPv6)
    dst: int
    proto: int  # IPv4's protocol, IPv6's last next header: the transport (6 TCP, 17 UDP)
    l4: int  # where the transport header starts
    l4_len: int  # transport header + payload bytes, from the IP header's lengths
    ip_id: int  # IPv4's identification; 0 for IPv6 (no such field)
    later_fragment: bool  # a fragment after the first: it holds no transport header

    def address(self, which: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        """``src`` or ``dst`` as an address object of the frame's family."""
        cls = ipaddress.IPv4Address if self.version == 4 else ipaddress.IPv6Address
        return cls(getattr(self, which))


def ip_layer(buf: bytes | bytearray | memoryview, start: int = 0, end: int | None = None) -> IpLayer | None:
    """The IP layer of the Ethernet frame ``buf[start:end]``, or None (see the module's docstring)."""
    end = len(buf) if end is None else end
    off, etype = start + ETH_HEADER, buf[start + 12:start + 14]
    while etype in VLAN_TAGS and off + 4 <= end:
        etype, off = buf[off + 2:off + 4], off + 4
    if off >= end:
        return None
    if etype == ETHERTYPE_IPV4:
        return _ipv4(buf, off, end)
    if etype == ETHERTYPE_IPV6:
        return _ipv6(buf, off, end)
    return None


_IPV4 = struct.Struct("!BxHHHxBxxII")  # version/IHL, total length, identification, flags/offset, protocol, addresses
_IPV6 = struct.Struct("!BxxxHBxQQQQ")  # version, payload length, next header, addresses as two halves each


def _ipv4(buf, off: int, end: int) -> IpLayer | None:
    if off + 20 > end:
        return None
    vihl, total, ip_id, frag, proto, src, dst = _IPV4.unpack_from(buf, off)
    ihl = (vihl & 0x0F) * 4
    if vihl >> 4 != 4 or ihl < 20:
        return None
    return IpLayer(4, src, dst, proto, off + ihl, max(total - ihl, 0), ip_id, bool(frag & 0x1FFF))


def _ipv6(buf, off: int, end: int) -> IpLayer | None:
    if off + IPV6_HEADER > end:
        return None
    ver, plen, nh, s_hi, s_lo, d_hi, d_lo = _IPV6.unpack_from(buf, off)
    if ver >> 4 != 6:
        return None
    src, dst = (s_hi << 64) | s_lo, (d_hi << 64) | d_lo
    at, later = off + IPV6_HEADER, False
    for _ in range(MAX_EXTENSIONS):
        if nh not in (HOP_BY_HOP, ROUTING, FRAGMENT, AUTH, DEST_OPTIONS):
            break
        if at + 8 > end:
            return None  # cut inside the extension headers
        nxt, hlen = buf[at], buf[at + 1]
        if nh == FRAGMENT:
            later = later or bool(struct.unpack_from("!H", buf, at + 2)[0] >> 3)
            size = 8
        elif nh == AUTH:
            size = (hlen + 2) * 4
        else:
            size = (hlen + 1) * 8
        nh, at = nxt, at + size
    else:
        return None
    return IpLayer(6, src, dst, nh, at, max(plen - (at - off - IPV6_HEADER), 0), 0, later)
