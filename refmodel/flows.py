"""The flow tracker (twin of ``p4src/include/flow_tracker.p4``).

Which TCP connection a segment belongs to, in either direction, and whether
a downstream segment is new data or a retransmission. A flow enters the
table at the server's SYN-ACK; its slot is ``crc32(server, client, server
port, client port, proto) mod FLOW_SLOTS`` (upstream packets hash their
fields swapped, so both directions meet in one slot) and the full CRC is its
signature. Per slot: signature, start time (the SYN-ACK's), the time of the
flow's latest downstream packet, first sequence number of data, highest
sequence number sent.

* ``TCP_RTX``   a downstream segment ending at or below the highest sequence
  seen: a retransmission;
* ``TCP_START`` new data of a tracked flow (``shaper.py`` moves it to
  ``TCP_EST`` once the flow is past its start phase);
* ``TCP_EST``   data of flows the table does not hold (and upstream data).

A slot holds its flow until another flow takes it: a segment is the slot's
flow's when the signature matches, however long the flow was silent (a
keep-alive connection reused after minutes is still shaped). A new flow may
take a slot that is *free*: its flow sent no data downstream for more than
``age_ns``, or closed (a FIN or RST from either side clears ``seen``). A
flow that keeps sending keeps its slot (IWA 2's first version aged slots from
the SYN-ACK, and a bulk flow lost its shaping ten seconds in, its window
jumped to the client's own and the audio waited 211 ms). A SYN-ACK that finds
its slot held by another live flow leaves the slot alone and marks the packet
``COLLISION``; the new flow then counts as established and is never shaped
(fail open: the standing-queue control holds it). A retransmitted SYN-ACK of
a tracked flow changes nothing. Malformed segments are classified without
reading or writing the table. Upstream packets only read it, but for a FIN or
RST, which frees the slot.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from .constants import FLOW_SLOTS, TrackFlag, TrafficClass
from .packet import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Parsed
from .params import IwaParams

U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1


def flow_hash(p: Parsed, upstream: bool = False) -> int:
    """CRC-32 over server, client, server port, client port, proto (BMv2's crc32), whichever way the packet goes;
    the addresses IPv4's or IPv6's (16 bytes each)."""
    server, client = (p.dst, p.src) if upstream else (p.src, p.dst)
    ports = (p.dport, p.sport) if upstream else (p.sport, p.dport)
    if p.ipv6_valid:
        key = server.to_bytes(16, "big") + client.to_bytes(16, "big") + struct.pack("!HHB", *ports, p.proto)
    else:
        key = struct.pack("!IIHHB", server, client, *ports, p.proto)
    return zlib.crc32(key) & U32


def seq_before(a: int, b: int) -> bool:
    """a < b in sequence space (mod 2^32)."""
    return ((a - b) & U32) >= 0x80000000


@dataclass(frozen=True)
class Track:
    cls: TrafficClass
    flags: int = 0
    progress: int = 0  # new bytes the flow sent before this segment
    slot: int = 0
    payload: int = 0  # TCP payload bytes of a tracked data segment
    hash: int = 0
    tracked: bool = False  # the slot holds this flow
    isn: int = 0  # its first sequence number of data
    age: int = 0  # time since its SYN-ACK
    seqhi: int = 0  # the highest sequence number the server sent (as the switch saw it, before this segment)


class FlowTracker:
    def __init__(self) -> None:
        self.sig = [0] * FLOW_SLOTS
        self.start = [0] * FLOW_SLOTS
        self.seen = [0] * FLOW_SLOTS  # its latest downstream data (0: closed, the slot is free)
        self.isn = [0] * FLOW_SLOTS
        self.seqhi = [0] * FLOW_SLOTS

    def track(self, p: IwaParams, pkt: Parsed, now: int, downstream: bool = True) -> Track:
        if pkt.udp_valid:
            return Track(TrafficClass.UDP)
        if not pkt.tcp_valid:
            return Track(TrafficClass.OTHER)
        payload = pkt.tcp_payload
        if payload < 0:
            return Track(TrafficClass.OTHER)
        h = flow_hash(pkt, upstream=not downstream)
        slot = h & (FLOW_SLOTS - 1)
        sig, start, isn, seqhi = self.sig[slot], self.start[slot], self.isn[slot], self.seqhi[slot]
        age = (now - start) & U64
        seen = self.seen[slot]
        live = sig != 0 and seen != 0 and (now - seen) & U64 <= p.age_ns
        tracked = sig != 0 and sig == h
        base = dict(slot=slot, hash=h, tracked=tracked, isn=isn, age=age, seqhi=seqhi)
        cls = TrafficClass.TCP_EST if payload > 0 else TrafficClass.TCP_CTRL
        closing = bool(pkt.tcp_flags & (TCP_FIN | TCP_RST))
        if tracked and closing:  # a FIN or RST from either side: the slot is free for a new flow
            self.seen[slot] = 0
        elif tracked and downstream and payload > 0:  # data: the flow is alive, its slot kept age_ns from now
            self.seen[slot] = now
        if not downstream:
            return Track(cls, **base)

        if pkt.tcp_flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK):
            first = (pkt.seq + 1) & U32
            if tracked and isn == first:  # a retransmitted SYN-ACK: nothing changes
                return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED, **base)
            if live and sig != h:
                return Track(TrafficClass.TCP_CTRL, TrackFlag.COLLISION, **{**base, "tracked": False})
            self.sig[slot], self.start[slot], self.isn[slot], self.seqhi[slot] = h, now, first, first
            self.seen[slot] = now
            return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED | TrackFlag.NEW_FLOW,
                         **{**base, "tracked": True, "isn": first, "age": 0, "seqhi": first})
        if payload == 0:
            return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED if tracked else 0, **base)
        if not tracked:
            return Track(TrafficClass.TCP_EST, **base)

        seq_end = (pkt.seq + payload) & U32
        progress = (pkt.seq - isn) & U32
        if not seq_before(seqhi, seq_end):  # seq_end <= seqhi: nothing new
            return Track(TrafficClass.TCP_RTX, TrackFlag.TRACKED | TrackFlag.RTX, progress, payload=payload,
                         **base)
        self.seqhi[slot] = seq_end
        return Track(TrafficClass.TCP_START, TrackFlag.TRACKED | TrackFlag.STARTING, progress, payload=payload,
                     **base)
