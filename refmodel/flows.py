"""The starting-flow tracker (twin of ``p4src/include/flow_tracker.p4``).

A flow enters the table when the server's SYN-ACK passes the bottleneck;
its slot is ``crc32(5-tuple) mod FLOW_SLOTS`` and the full CRC is the
signature. Per slot: signature, start time, ISN + 1 and the highest sequence
number sent so far. From these, each downstream data segment is classified:

* ``TCP_RTX``   ends at or below the highest sequence seen: a retransmission;
* ``TCP_START`` new data, within ``window_ns`` of the SYN-ACK and the
  first ``start_bytes`` of the flow (the initial window and slow start);
* ``TCP_EST``   any other data, including flows the table does not hold.

Aging and collisions: a slot whose flow started more than ``age_ns`` ago is
free. A SYN-ACK that finds its slot held by another live flow leaves the
slot alone and marks the packet ``COLLISION``; the new flow then counts as
established, so a collision can only make the AQM gentler (fail open).
Malformed segments (lengths that do not add up, truncated headers) are
classified without reading or writing the table.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from .constants import FLOW_SLOTS, TrackFlag, TrafficClass
from .packet import TCP_ACK, TCP_SYN, Parsed
from .params import IwaParams

U32 = 0xFFFFFFFF


def flow_hash(p: Parsed) -> int:
    """CRC-32 over src, dst, sport, dport, proto in network byte order (BMv2's crc32)."""
    return zlib.crc32(struct.pack("!IIHHB", p.src, p.dst, p.sport, p.dport, p.proto)) & U32


@dataclass(frozen=True)
class Track:
    cls: TrafficClass
    flags: int = 0
    progress: int = 0  # new bytes the flow sent before this segment
    slot: int = 0
    payload: int = 0  # TCP payload bytes of a tracked data segment


class FlowTracker:
    def __init__(self) -> None:
        self.sig = [0] * FLOW_SLOTS
        self.start = [0] * FLOW_SLOTS
        self.isn = [0] * FLOW_SLOTS
        self.seqhi = [0] * FLOW_SLOTS

    def track(self, p: IwaParams, pkt: Parsed, now: int) -> Track:
        if pkt.udp_valid:
            return Track(TrafficClass.UDP)
        if not pkt.tcp_valid:
            return Track(TrafficClass.OTHER)
        payload = pkt.tcp_payload
        if payload < 0:
            return Track(TrafficClass.OTHER)
        h = flow_hash(pkt)
        slot = h & (FLOW_SLOTS - 1)
        sig, start, isn, seqhi = self.sig[slot], self.start[slot], self.isn[slot], self.seqhi[slot]
        age = (now - start) & ((1 << 64) - 1)
        live = sig != 0 and age <= p.age_ns

        if pkt.tcp_flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK):
            if not live or sig == h:
                first = (pkt.seq + 1) & U32
                self.sig[slot], self.start[slot], self.isn[slot], self.seqhi[slot] = h, now, first, first
                return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED | TrackFlag.NEW_FLOW, 0, slot)
            return Track(TrafficClass.TCP_CTRL, TrackFlag.COLLISION, 0, slot)
        tracked = live and sig == h
        if payload == 0:
            return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED if tracked else 0, 0, slot)
        if not tracked:
            return Track(TrafficClass.TCP_EST, 0, 0, slot)

        seq_end = (pkt.seq + payload) & U32
        progress = (pkt.seq - isn) & U32
        flags = TrackFlag.TRACKED
        if ((seqhi - seq_end) & U32) < 0x80000000:  # seq_end <= seqhi, modulo 2^32
            return Track(TrafficClass.TCP_RTX, flags | TrackFlag.RTX, progress, slot, payload)
        self.seqhi[slot] = seq_end
        if age < p.window_ns and progress < p.start_bytes:
            return Track(TrafficClass.TCP_START, flags | TrackFlag.STARTING, progress, slot, payload)
        return Track(TrafficClass.TCP_EST, flags, progress, slot, payload)
