"""Scapy frame builders shared by the tests: real packets, built the way the lab sends them."""

from __future__ import annotations

from scapy.all import IP, TCP, UDP, Ether, IPv6, Raw, raw

SERVER = "10.0.0.1"
CLIENT = "10.0.1.1"
MSS = 1460
AUDIO_PAYLOAD = 40 + 12  # 40 B of codec payload + a 12 B RTP header
MACS = dict(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")  # explicit: Scapy would look them up

# The option layouts of a client's SYN, as the three common stacks send them (window scale shifts as they
# typically advertise them).
LINUX_SYN = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0)), ("NOP", None), ("WScale", 7)]
WINDOWS_SYN = [("MSS", 1460), ("NOP", None), ("WScale", 8), ("NOP", None), ("NOP", None), ("SAckOK", b"")]
MACOS_SYN = [("MSS", 1460), ("NOP", None), ("WScale", 6), ("NOP", None), ("NOP", None), ("Timestamp", (1, 0)),
             ("SAckOK", b""), ("EOL", None)]
NO_WS_SYN = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0))]


def ether():
    """The Ethernet header of ``tcp``'s and ``ip``'s frames over IPv6: explicit MACs, since Scapy resolves a
    missing destination MAC for IPv6 by neighbour solicitation on the host's own network (seconds a frame)."""
    return Ether(**MACS)


def link(src: str):
    """The Ethernet header of a frame from ``src``: Scapy's default over IPv4 (as the tests always built them),
    ``ether()`` over IPv6."""
    return ether() if ":" in src else Ether()


def ip(src: str, dst: str, tos: int = 0, **fields):
    """The IP header for ``src`` and ``dst``: IPv4, or IPv6 for IPv6 addresses (``tos`` then the traffic class;
    an IPv4 ``id`` is left out: IPv6 has no identification, so every copy of a segment looks alike)."""
    if ":" in src:
        fields.pop("id", None)
        return IPv6(src=src, dst=dst, tc=tos, **fields)
    return IP(src=src, dst=dst, tos=tos, **fields)


def tcp(seq: int = 1000, payload: int = MSS, flags: str = "A", sport: int = 80, dport: int = 40000,
        src: str = SERVER, dst: str = CLIENT, tos: int = 0, ack: int = 0, window: int = 8192,
        options: list | None = None, **fields) -> bytes:
    """A server's data segment (downstream), over IPv4 or IPv6 as the addresses are (``ip``), with TCP
    ``options`` (none by default)."""
    return raw(link(src) / ip(src, dst, tos, **fields)
               / TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags,
                     window=window, options=options or [])
               / Raw(b"\x00" * payload))


def syn_ack(isn: int = 1000, sport: int = 80, dport: int = 40000, src: str = SERVER, dst: str = CLIENT,
            ack: int = 0, options: list | None = None, window: int = 8192) -> bytes:
    """The server's SYN-ACK; ``options`` e.g. ``[("MSS", 1460), ("WScale", 9)]`` (none by default)."""
    return raw(link(src) / ip(src, dst)
               / TCP(sport=sport, dport=dport, seq=isn & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags="SA",
                     window=window, options=options or []))


def client_syn(seq: int = 5000, options: list | None = None, window: int = 64240, sport: int = 40000,
               dport: int = 80, src: str = CLIENT, dst: str = SERVER) -> bytes:
    """The client's SYN (upstream) with its options (``LINUX_SYN`` by default)."""
    opts = LINUX_SYN if options is None else options
    return raw(Ether(**MACS) / ip(src, dst)
               / TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, flags="S", window=window, options=opts))


def client_ack(ack: int, window: int = 502, seq: int = 5001, payload: int = 0, flags: str = "A",
               sport: int = 40000, dport: int = 80, src: str = CLIENT, dst: str = SERVER) -> bytes:
    """The client's ACK (upstream) with its window field as sent (unscaled); with ``payload``, a request."""
    return raw(Ether(**MACS) / ip(src, dst)
               / TCP(sport=sport, dport=dport, seq=seq & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags,
                     window=window)
               / Raw(b"G" * payload))


def audio(seq: int = 0, sport: int = 5004, dport: int = 5004, src: str = SERVER, dst: str = CLIENT) -> bytes:
    return raw(link(src) / ip(src, dst) / UDP(sport=sport, dport=dport) / Raw(b"\x80" * AUDIO_PAYLOAD))


def tcp_fields(frame: bytes) -> TCP:
    """The TCP header of a frame, dissected by Scapy (independent of the model's parser)."""
    return Ether(frame)[TCP]


def iw_burst(flows: int, iw: int, isn: int = 1000, base_port: int = 40000):
    """The segments of ``flows`` initial windows of ``iw`` segments, flow by flow,
    preceded by each flow's SYN-ACK: (syn_acks, segments)."""
    syn_acks = [syn_ack(isn, dport=base_port + f) for f in range(flows)]
    segs = [tcp(isn + 1 + k * MSS, dport=base_port + f) for f in range(flows) for k in range(iw)]
    return syn_acks, segs
