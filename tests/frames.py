"""Scapy frame builders shared by the tests: real packets, built the way the lab sends them."""

from __future__ import annotations

from scapy.all import IP, TCP, UDP, Ether, Raw, raw

SERVER = "10.0.0.1"
CLIENT = "10.0.1.1"
MSS = 1460
AUDIO_PAYLOAD = 40 + 12  # 40 B of codec payload + a 12 B RTP header


def tcp(seq: int = 1000, payload: int = MSS, flags: str = "A", sport: int = 80, dport: int = 40000,
        src: str = SERVER, dst: str = CLIENT, tos: int = 0, **ip) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst, tos=tos, **ip) / TCP(sport=sport, dport=dport, seq=seq, flags=flags)
               / Raw(b"\x00" * payload))


def syn_ack(isn: int = 1000, sport: int = 80, dport: int = 40000, src: str = SERVER, dst: str = CLIENT) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport, seq=isn, flags="SA"))


def audio(seq: int = 0, sport: int = 5004, dport: int = 5004, src: str = SERVER, dst: str = CLIENT) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / Raw(b"\x80" * AUDIO_PAYLOAD))


def iw_burst(flows: int, iw: int, isn: int = 1000, base_port: int = 40000):
    """The segments of ``flows`` initial windows of ``iw`` segments, flow by flow,
    preceded by each flow's SYN-ACK: (syn_acks, segments)."""
    syn_acks = [syn_ack(isn, dport=base_port + f) for f in range(flows)]
    segs = [tcp(isn + 1 + k * MSS, dport=base_port + f) for f in range(flows) for k in range(iw)]
    return syn_acks, segs
