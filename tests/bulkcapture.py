"""A client.pcap as the lab's tcpdump writes it (classic pcap, microsecond timestamps, Ethernet, snaplen 128),
holding a bulk download seen from the client, for the bulk throughput tests (experiments.metrics.bulk_goodput)."""

from __future__ import annotations

import struct
from pathlib import Path

from frames import ether, ip, tcp

from accessnet.addresses import V4, Hosts

CLIENT, SERVER, WEB_PORT = V4.client, V4.server, 8080
US = 1_000
MS = 1_000_000


def write_pcap_us(path: Path, frames: list[tuple[int, bytes]], snaplen: int = 128) -> None:
    """frames (ts_ns, bytes) in time order; timestamps truncated to the microsecond as tcpdump's default."""
    out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, snaplen, 1)]
    for ts, frame in sorted(frames, key=lambda x: x[0]):
        sec, usec = divmod(ts // US, 1_000_000)
        cap = frame[:snaplen]
        out.append(struct.pack("<IIII", sec, usec, len(cap), len(frame)) + cap)
    Path(path).write_bytes(b"".join(out))


def connection(start_ns: int, port: int, isn: int, acks: list[tuple[int, int]], handshake: bool = True,
               fin_at: int | None = None, hosts: Hosts = V4) -> list[tuple[int, bytes]]:
    """A download the client opens at ``start_ns`` (connect(); SYN 100 us later) from ``port``: the server's
    SYN-ACK (initial sequence number ``isn``) and the handshake ACK, then per (t, n) in ``acks`` a server
    segment 50 us before t and the client's ACK at t of n bytes in order (ack = isn + 1 + n, mod 2^32);
    ``fin_at``: the client's ACK of the server's FIN (one more sequence number after the last ACK's bytes).
    Between the lab's ``hosts`` (IPv4 by default; ``addresses.V6`` for IPv6)."""
    up = dict(src=hosts.client, dst=hosts.server, sport=port, dport=WEB_PORT, payload=0)
    down = dict(src=hosts.server, dst=hosts.client, sport=WEB_PORT, dport=port)
    out = [(start_ns + 100 * US, tcp(seq=7, flags="S", **up))]
    if handshake:
        out += [(start_ns + 162 * MS, tcp(seq=isn, flags="SA", ack=8, payload=0, **down)),
                (start_ns + 162 * MS + 50 * US, tcp(seq=8, flags="A", ack=isn + 1, **up))]
    last = 0
    for t, n in acks:
        out += [(t - 50 * US, tcp(seq=isn + 1 + max(n - 1448, 0), flags="A", payload=min(n, 1448), **down)),
                (t, tcp(seq=18, flags="A", ack=isn + 1 + n, **up))]
        last = max(last, n)
    if fin_at is not None:
        out.append((fin_at, tcp(seq=18, flags="A", ack=isn + 2 + last, **up)))
    return out


def audio_frames(t0_ns: int, n: int, hosts: Hosts = V4) -> list[tuple[int, bytes]]:
    """n audio packets (UDP, 94 B on the wire over IPv4) every 20 ms from t0: other traffic in the capture."""
    from scapy.all import UDP, Ether, Raw, raw
    eth = ether() if hosts.version == 6 else Ether()
    return [(t0_ns + i * 20 * MS + 80 * MS, raw(eth / ip(hosts.server, hosts.client) / UDP(sport=38405, dport=5004)
                                                 / Raw(b"\x00" * 52))) for i in range(n)]
