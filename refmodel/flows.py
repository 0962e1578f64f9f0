"""The flow tracker (twin of ``p4src/include/flow_tracker.p4``).

It follows each TCP connection through the bottleneck in both directions,
in a hash-indexed table: slot = ``crc32(server, client, server port, client
port, proto) mod FLOW_SLOTS`` (upstream packets hash their addresses and
ports swapped, so both directions meet in one slot), and the full CRC is the
signature.

* The client's SYN (upstream) is remembered in ``syn``: its window-scale shift.
* The server's SYN-ACK (downstream) enters the flow: start time, first
  sequence number of data, and the window state. The client's windows are
  scaled only when both the SYN and the SYN-ACK carried the option (RFC 7323).
  A flow whose SYN the switch did not see is never shaped (its scale is unknown).
* The client's first ACK measures the flow's RTT at the switch (SYN-ACK to
  ACK) and fixes the end of its *start phase*: the sequence number one pipe
  plus the jitter budget beyond its first byte, ``ns_to_bytes(rtt + target)``.
  That is the data a flow has in flight when its slow start first fills the
  path and the audio's budget; after it, the flow is *established*.
* Every upstream ACK moves the flow's *edge*, the right edge of the window
  the server was given (ACK number + scaled window). During the start phase
  IWA may clamp it (``grant``); otherwise it follows the client's own.

Downstream data segments are classified from this state:

* ``TCP_RTX``   ends at or below the highest sequence seen: a retransmission;
* ``TCP_START`` new data that begins before the flow's start-phase end;
* ``TCP_EST``   any other data, including flows the table does not hold.

Aging and collisions: a slot whose flow started more than ``age_ns`` ago is
free. A SYN-ACK that finds its slot held by another live flow leaves the
slot alone and marks the packet ``COLLISION``; the new flow then counts as
established and is never shaped, so a collision can only make the AQM
gentler (fail open). A retransmitted SYN-ACK of a tracked flow changes
nothing (the edge the server was already given stays). Malformed segments
are classified without reading or writing the table.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from .constants import (
    FLOW_ACKED, FLOW_ANNOUNCED, FLOW_SCALE_MASK, FLOW_SHAPE, FLOW_SLOTS, SYN_SEEN, SYN_WS, WS_MAX, TrackFlag,
    TrafficClass,
)
from .packet import TCP_ACK, TCP_RST, TCP_SYN, Parsed
from .params import IwaParams, ns_to_bytes

U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1


def flow_hash(p: Parsed, upstream: bool = False) -> int:
    """CRC-32 over server, client, server port, client port, proto (BMv2's crc32), whichever way the packet goes."""
    if upstream:
        key = struct.pack("!IIHHB", p.dst, p.src, p.dport, p.sport, p.proto)
    else:
        key = struct.pack("!IIHHB", p.src, p.dst, p.sport, p.dport, p.proto)
    return zlib.crc32(key) & U32


def seq_before(a: int, b: int) -> bool:
    """a < b in sequence space (mod 2^32)."""
    return ((a - b) & U32) >= 0x80000000


def seq_max(a: int, b: int) -> int:
    return b if seq_before(a, b) else a


def seq_min(a: int, b: int) -> int:
    return a if seq_before(a, b) else b


@dataclass(frozen=True)
class Track:
    cls: TrafficClass
    flags: int = 0
    progress: int = 0  # new bytes the flow sent before this segment
    slot: int = 0
    payload: int = 0  # TCP payload bytes of a tracked data segment


@dataclass(frozen=True)
class Grant:
    """What the tracker did with one upstream ACK (for IWA's books and the telemetry)."""

    tracked: bool = False
    slot: int = 0
    flags: int = 0
    released: bool = False  # this was the flow's first ACK: its reserved frame is released
    advance: int = 0  # bytes the server may now send beyond the edge it had
    edge: int = 0  # the edge the server now has
    window: int | None = None  # the window field to write, when IWA clamped it
    room_ns: int = 0  # the queue room the grant was sized from


class FlowTracker:
    def __init__(self) -> None:
        self.sig = [0] * FLOW_SLOTS
        self.start = [0] * FLOW_SLOTS
        self.isn = [0] * FLOW_SLOTS
        self.seqhi = [0] * FLOW_SLOTS
        self.edge = [0] * FLOW_SLOTS
        self.end = [0] * FLOW_SLOTS
        self.state = [0] * FLOW_SLOTS
        self.syn = [0] * FLOW_SLOTS

    # ------------------------------------------------------------------ downstream (server -> client)

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
        edge, end, state = self.edge[slot], self.end[slot], self.state[slot]
        age = (now - start) & U64
        live = sig != 0 and age <= p.age_ns

        if pkt.tcp_flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK):
            first = (pkt.seq + 1) & U32
            if live and sig == h and isn == first:  # a retransmitted SYN-ACK: keep what the server was given
                return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED, 0, slot)
            if live and sig != h:
                return Track(TrafficClass.TCP_CTRL, TrackFlag.COLLISION, 0, slot)
            syn = self.syn[slot]
            new_state = FLOW_ANNOUNCED
            if syn & SYN_SEEN and (syn ^ h) & 0xFFFFFF00 == 0:
                new_state |= FLOW_SHAPE
                if syn & SYN_WS and pkt.ws_shift >= 0:
                    new_state |= syn & FLOW_SCALE_MASK
            self.sig[slot], self.start[slot], self.isn[slot], self.seqhi[slot] = h, now, first, first
            self.edge[slot], self.end[slot], self.state[slot] = first, first, new_state
            return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED | TrackFlag.NEW_FLOW, 0, slot)
        tracked = live and sig == h
        if payload == 0:
            return Track(TrafficClass.TCP_CTRL, TrackFlag.TRACKED if tracked else 0, 0, slot)
        if not tracked:
            return Track(TrafficClass.TCP_EST, 0, 0, slot)

        seq_end = (pkt.seq + payload) & U32
        progress = (pkt.seq - isn) & U32
        flags = TrackFlag.TRACKED
        if state & FLOW_SHAPE and seq_before(edge, seq_end):
            flags |= TrackFlag.BEYOND
        if not seq_before(seqhi, seq_end):  # seq_end <= seqhi: nothing new
            return Track(TrafficClass.TCP_RTX, flags | TrackFlag.RTX, progress, slot, payload)
        self.seqhi[slot] = seq_end
        if not state & FLOW_ACKED or seq_before(pkt.seq, end):
            return Track(TrafficClass.TCP_START, flags | TrackFlag.STARTING, progress, slot, payload)
        return Track(TrafficClass.TCP_EST, flags, progress, slot, payload)

    # ------------------------------------------------------------------ upstream (client -> server)

    def upstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, shaping: bool, room_base_ns: int) -> Grant:
        """The client's SYN and ACKs. ``room_base_ns`` is the queue room IWA sees for starting flows (it
        may be negative); with ``shaping`` the edge of a starting flow advances by at most that room."""
        if not pkt.tcp_valid or pkt.tcp_payload < 0:
            return Grant()
        h = flow_hash(pkt, upstream=True)
        slot = h & (FLOW_SLOTS - 1)
        f = pkt.tcp_flags
        if f & (TCP_SYN | TCP_ACK) == TCP_SYN:
            ws = min(pkt.ws_shift, WS_MAX)
            self.syn[slot] = (h & 0xFFFFFF00) | SYN_SEEN | ((SYN_WS | ws) if pkt.ws_shift >= 0 else 0)
            return Grant(slot=slot)
        if f & (TCP_SYN | TCP_RST | TCP_ACK) != TCP_ACK:
            return Grant(slot=slot)
        sig, start, isn = self.sig[slot], self.start[slot], self.isn[slot]
        edge, end, state = self.edge[slot], self.end[slot], self.state[slot]
        age = (now - start) & U64
        if not (sig == h and sig != 0 and age <= p.age_ns):
            return Grant(slot=slot)

        flags = TrackFlag.TRACKED
        released = False
        if not state & FLOW_ACKED:  # the handshake's ACK: RTT at the switch, and the start phase's length
            rtt = min(age, U32)
            end = (isn + ns_to_bytes(p, min(rtt + p.target_ns, U32))) & U32
            released = bool(state & FLOW_ANNOUNCED)
            state = (state | FLOW_ACKED) & ~FLOW_ANNOUNCED
            flags |= TrackFlag.FIRST_ACK
        scale = state & FLOW_SCALE_MASK
        own = (pkt.ack + (pkt.window << scale)) & U32  # the client's own right edge
        starting = seq_before(edge, end)
        new_edge = seq_max(edge, own)
        window = None
        room = 0
        if shaping and state & FLOW_SHAPE and starting and not seq_before(own, edge):
            flags |= TrackFlag.STARTING
            room = max(0, room_base_ns + (mtu_ns if released else 0))
            want = seq_min(own, (edge + ns_to_bytes(p, min(room, U32))) & U32)
            floor = seq_min(own, (pkt.ack + p.mss_bytes) & U32)  # never below one MSS
            want = seq_max(seq_max(want, floor), edge)  # never moves the right edge left
            field = (((want - pkt.ack) & U32) + (1 << scale) - 1) >> scale  # round up: never below want
            new_edge = (pkt.ack + (field << scale)) & U32
            if field < pkt.window:
                window = field
        advance = (new_edge - edge) & U32 if seq_before(edge, new_edge) else 0
        self.edge[slot], self.end[slot], self.state[slot] = new_edge, end, state
        return Grant(True, slot, flags, released, advance, new_edge, window, room)
