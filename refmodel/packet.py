"""The parser, as ``p4src/include/parser.p4`` does it, on raw frame bytes.

Only what the pipeline uses is extracted. A header that does not fit in the
frame is left invalid (BMv2 sets ``parser_error`` and the packet still reaches
ingress), so a truncated or odd frame is classified ``OTHER`` and never
touches flow state.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

ETH_LEN = 14
IPV4_LEN = 20
IPV6_LEN = 40
TCP_LEN = 20
UDP_LEN = 8
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_IPV6 = 0x86DD
PROTO_TCP = 6
PROTO_UDP = 17

TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10


@dataclass(frozen=True)
class Parsed:
    """The parsed view of one frame (fields are 0 when their header is invalid)."""

    length: int  # frame length on the wire (no FCS): what the link serialises
    ipv4_valid: bool = False
    ipv6_valid: bool = False  # (its fields in the IPv4 names: ``tos`` the traffic class, ``total_len`` the
    # payload length plus the 40 B header (``ihl`` 10), ``proto`` the next header, 128-bit ``src`` and ``dst``)
    tcp_valid: bool = False
    udp_valid: bool = False
    ihl: int = 0
    tos: int = 0
    total_len: int = 0
    frag: int = 0  # flags(3) + fragment offset(13)
    proto: int = 0
    src: int = 0
    dst: int = 0
    sport: int = 0
    dport: int = 0
    seq: int = 0
    ack: int = 0
    data_offset: int = 0
    tcp_flags: int = 0
    window: int = 0  # the TCP window field as sent (unscaled)
    tcp_at: int = 0  # byte offset of the TCP header in the frame
    ws_shift: int = -1  # window-scale option of a SYN or SYN-ACK: its shift, -1 when absent

    @property
    def ip_valid(self) -> bool:
        return self.ipv4_valid or self.ipv6_valid

    @property
    def ipver(self) -> int:
        """6 for IPv6, 4 for IPv4, 0 for neither."""
        return 6 if self.ipv6_valid else 4 if self.ipv4_valid else 0

    @property
    def is_fragment(self) -> bool:
        # MF flag or a non-zero offset
        return (self.frag & 0x3FFF) != 0

    @property
    def tcp_payload(self) -> int:
        """TCP payload bytes from the IP header, or -1 when the lengths are inconsistent."""
        if not self.tcp_valid:
            return -1
        hdr = self.ihl * 4 + self.data_offset * 4
        if self.data_offset < 5 or self.total_len < hdr:
            return -1
        return self.total_len - hdr


def parse(frame: bytes) -> Parsed:
    n = len(frame)
    if n < ETH_LEN:
        return Parsed(length=n)
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    if ethertype == ETHERTYPE_IPV6:
        return _parse_ipv6(frame)
    if ethertype != ETHERTYPE_IPV4 or n < ETH_LEN + IPV4_LEN:
        return Parsed(length=n)
    ver_ihl, tos, total_len, _ident, frag, _ttl, proto, _csum, src, dst = struct.unpack_from(
        "!BBHHHBBHII", frame, ETH_LEN
    )
    ihl = ver_ihl & 0x0F
    ip = dict(ipv4_valid=True, ihl=ihl, tos=tos, total_len=total_len, frag=frag, proto=proto, src=src, dst=dst)
    # The P4 parser stops after the base header when the version is not 4,
    # the IHL is below 5, or the options do not fit in the frame.
    if (ver_ihl >> 4) != 4 or ihl < 5:
        return Parsed(length=n, **ip)
    l4 = ETH_LEN + ihl * 4
    if n < l4 or (frag & 0x3FFF) != 0:
        return Parsed(length=n, **ip)
    return _parse_l4(frame, l4, ip)


def _parse_ipv6(frame: bytes) -> Parsed:
    """IPv6's fixed header, then TCP or UDP when the next header is one of them (the P4 parser goes no
    further: an extension header, a fragment or ICMPv6 leaves the packet at its fixed header)."""
    n = len(frame)
    if n < ETH_LEN + IPV6_LEN:
        return Parsed(length=n)
    (first,) = struct.unpack_from("!I", frame, ETH_LEN)
    payload_len, nh = struct.unpack_from("!HB", frame, ETH_LEN + 4)
    src = int.from_bytes(frame[ETH_LEN + 8:ETH_LEN + 24], "big")
    dst = int.from_bytes(frame[ETH_LEN + 24:ETH_LEN + 40], "big")
    ip = dict(ipv6_valid=True, ihl=IPV6_LEN // 4, tos=(first >> 20) & 0xFF, total_len=payload_len + IPV6_LEN,
              proto=nh, src=src, dst=dst)
    if first >> 28 != 6:
        return Parsed(length=n, **ip)
    return _parse_l4(frame, ETH_LEN + IPV6_LEN, ip)


def _parse_l4(frame: bytes, l4: int, ip: dict) -> Parsed:
    """TCP (a SYN's window-scale option walked) or UDP at ``l4``, after the IP header ``ip``."""
    n, proto = len(frame), ip["proto"]
    if proto == PROTO_TCP and n >= l4 + TCP_LEN:
        sport, dport, seq, ack, off_res, flags, window = struct.unpack_from("!HHIIBBH", frame, l4)
        off = off_res >> 4
        ws = window_scale_option(frame, l4 + TCP_LEN, (off - 5) * 4) if flags & TCP_SYN and off > 5 else -1
        return Parsed(
            length=n, tcp_valid=True, sport=sport, dport=dport, seq=seq, ack=ack,
            data_offset=off, tcp_flags=flags, window=window, tcp_at=l4, ws_shift=ws, **ip,
        )
    if proto == PROTO_UDP and n >= l4 + UDP_LEN:
        sport, dport = struct.unpack_from("!HH", frame, l4)
        return Parsed(length=n, udp_valid=True, sport=sport, dport=dport, **ip)
    return Parsed(length=n, **ip)


OPT_EOL, OPT_NOP, OPT_WSCALE = 0, 1, 3


def window_scale_option(frame: bytes, at: int, length: int) -> int:
    """The shift of a window-scale option (RFC 7323) among ``length`` bytes of
    TCP options at ``at``, or -1. Walked byte by byte exactly as the P4
    parser's option states do (``parser.p4``): EOL ends the list, NOP is one
    byte, every other option is kind, length, length - 2 bytes; a length
    below 2 (malformed) ends the walk, and so does the end of the frame or
    of the options. Only SYNs carry the option, so only they are walked."""
    end = min(at + length, len(frame))
    i = at
    shift = -1
    while i < end:
        kind = frame[i]
        i += 1
        if kind == OPT_EOL:
            break
        if kind == OPT_NOP:
            continue
        if i >= end:
            break
        olen = frame[i]
        i += 1
        if olen < 2:
            break
        if kind == OPT_WSCALE and olen == 3:
            if i >= end:
                break
            shift = frame[i]
            i += 1
            continue
        i += olen - 2
    return shift


def set_tcp_window(frame: bytes, p: Parsed, window: int) -> bytes:
    """Rewrite the TCP window field and patch the TCP checksum incrementally
    (RFC 1624), exactly as the P4 ``WindowRewrite`` action does."""
    b = bytearray(frame)
    at = p.tcp_at
    struct.pack_into("!H", b, at + 14, window)
    (csum,) = struct.unpack_from("!H", b, at + 16)
    struct.pack_into("!H", b, at + 16, incremental_checksum(csum, p.window, window))
    return bytes(b)


def set_ecn_ce(frame: bytes) -> bytes:
    """Set ECN to CE (11) and, in IPv4, patch the header checksum incrementally (RFC 1624), exactly as the P4
    ``EcnMark`` action does (IPv6's traffic class has no checksum)."""
    b = bytearray(frame)
    if struct.unpack_from("!H", b, 12)[0] == ETHERTYPE_IPV6:
        b[ETH_LEN + 1] |= 0x30  # the traffic class's low two bits: the second byte's bits 5..4
        return bytes(b)
    old_word = (b[ETH_LEN] << 8) | b[ETH_LEN + 1]
    b[ETH_LEN + 1] |= 0x03
    new_word = (b[ETH_LEN] << 8) | b[ETH_LEN + 1]
    (csum,) = struct.unpack_from("!H", b, ETH_LEN + 10)
    struct.pack_into("!H", b, ETH_LEN + 10, incremental_checksum(csum, old_word, new_word))
    return bytes(b)


def incremental_checksum(csum: int, old: int, new: int) -> int:
    """HC' = ~(~HC + ~m + m') in one's complement arithmetic (RFC 1624 eqn. 3)."""
    s = (~csum & 0xFFFF) + (~old & 0xFFFF) + new
    s = (s & 0xFFFF) + (s >> 16)
    s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
