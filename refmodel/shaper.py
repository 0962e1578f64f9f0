"""IWA's start shaping (twin of ``p4src/include/start_shaper.p4``).

Each flow's window state (same slot as ``flows.py``) and the queue room
shaped flows may still take (``docs/iwa.md`` derives every rule).

Per flow:

* ``syn``: the client's SYN, remembered until the SYN-ACK: signature and its
  window-scale shift. The client's windows are scaled only when both the SYN
  and the SYN-ACK carried the option (RFC 7323); a flow whose SYN the switch
  did not see is never shaped (its scale is unknown).
* ``state``: the scale, SHAPE, ANNOUNCED (one frame of queue reserved until
  its first ACK), ACKED, and the parity of the reserve's epoch it reserved in.
* ``edge``: the right edge of the window the server was given (ACK number +
  scaled window). Every upstream ACK moves it; it never moves left.
* ``srtt``: the server's side of the RTT, from the client's SYN (``syn_t``)
  to the SYN-ACK: how long the data a grant releases takes to arrive.
* ``ack``: the highest ACK number seen, so the next ACK tells what it acknowledges.
* ``COUNTED`` (a state bit): the flow is one of the ``nflows`` shaped flows,
  from its first ACK to the client's FIN or a RST (or its slot's reuse).
* ``link``: the access link it was installed on (its SYN-ACK's), so a slot's reuse uncounts the flow
  that held it from that flow's own link.
* ``end``: where the flow's *start phase* ends, fixed at its first ACK: its
  first byte plus ``ns_to_bytes(rtt + target)``, with the RTT measured at the
  switch (``srtt`` plus the SYN-ACK to the first ACK). That is what a flow
  has in flight when its slow start first fills the path and the audio's
  budget; past it, the flow is established (CoDel's too, in ``iwa.py``).

Per access link (IWA only; ``LinkShaping``, start_shaper.p4's registers indexed by the packet's link, so each
link's queue room is its own while the flow slots stay shared): ``grant_tat``, the window openings beyond replacement,
as a queue that drains at the link rate from when their data can arrive (one
server RTT after the grant: a grant the server never uses is forgotten by
itself); ``wavg``, the average window of shaped flows (EWMA, 1/8); ``nflows``,
the number of shaped flows (a flow's *share* of its path and the budget is
``(end - isn) >> share_shift(nflows)``); and the
*reserve*, one frame per announced flow, released by that flow's first ACK.
The reserve is kept in two generations (``reserve_cur``, ``reserve_old``) of
epochs at least ``hold_ns`` long: a SYN-ACK more than ``hold_ns`` into the
current epoch starts a new one (the current generation becomes the old one,
the old one is forgotten), the old generation counts until ``hold_ns`` into
the new epoch, the current one until ``2 hold_ns``. So every reserved frame
is gone at most ``3 hold_ns`` after its SYN-ACK, however many other SYN-ACKs
follow: a handshake that never completes cannot pin it. A flow's first ACK
releases its frame from the generation of its epoch's parity (one bit per
flow: a flow older than two epochs may release another's frame, which only
ever frees room early).

Every upstream ACK of a shaped flow (SHAPE, IWA on) may move the edge by

    grant = acked + min(room, acked)     (the first ACK: room)
    grant = acked - min(deficit, acked / 2)   while the queue is above target
    room  = target - queue - grants in transit - reserve   (+ its own frame)

``acked`` is what the ACK acknowledges: it left the queue, so replacing it
keeps the queue as it is; on top comes the room, at most ``acked`` again
(the server's own slow start could not use more), and nothing on top for a
flow whose window is above its share, or above ``wavg`` while the room is
short (less than twice ``acked``) and partly in use (``margin_holds``), so
flows that started later catch up instead of waiting for the first ones to
finish. While the queue is above target (a negative room) the
edge moves by less than replacement, by at most half (this ACK sees the
queue a server RTT before its data would arrive, so a full cut would be
repeated by every ACK in between), so the queue drains. Never below one MSS beyond the ACK, never above the
client's own window, never moving the right edge left; the window is rounded
up to the client's scale. Shaping goes on past the start phase: lifting the
clamp at once lets the server send up to a window back to back (Linux grows
cwnd to twice its flight while window-limited), which measured 73 ms of audio
delay in web6. The start phase's end decides the class: past it, the flow's
data is ``TCP_EST`` and CoDel's (``iwa.py``). Data ending past the edge the
server was given is ``BEYOND`` (the sender ignored the window: ``iwa.py``'s
safety net).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .constants import (
    FLOW_ACKED, FLOW_ANNOUNCED, FLOW_COUNTED, FLOW_EPOCH, FLOW_SCALE_MASK, FLOW_SHAPE, FLOW_SLOTS, N_LINKS, SYN_SEEN,
    SYN_WS, WS_MAX, TrackFlag, TrafficClass,
)
from .flows import Track, seq_before
from .packet import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Parsed
from .params import IwaParams, bytes_to_ns, ns_to_bytes

U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Grant:
    """What the shaper did with one upstream ACK (for the telemetry)."""

    tracked: bool = False
    syn: bool = False  # a client's SYN (remembered for its scale and time)
    flags: int = 0
    window: int | None = None  # the window field to write, when IWA clamped it
    edge: int = 0  # the right edge the server now has
    advance: int = 0  # bytes it may send beyond the edge it had
    room_ns: int = 0  # the queue room the grant was sized from


def share_shift(nflows: int) -> int:
    """ceil(log2(nflows)), 0 for none: a flow's share of the path and budget is ``(end - isn) >> share_shift``,
    at most 1/nflows of it (``p4src/include/start_shaper.p4``'s table ``iwa_share`` holds the same ranges)."""
    return max(0, nflows - 1).bit_length()


def margin_holds(w: int, wavg: int, room_bytes: int, acked: int, room_ns: int, target_ns: int) -> bool:
    """The margin: no growth for a flow whose window ``w`` is above the shaped flows' average ``wavg`` while
    the room is short (less than twice what its ACK acknowledged) *and partly in use* (less than the whole
    target), so growth stops before the room is gone. A wholly free target (nothing queued, granted or
    reserved) has nothing to misjudge. Without that last condition, where the target holds fewer than two
    segments (one frame at EDGE) the room was always short, and a lone flow, always above its own lagging
    average, never grew past one segment per round trip (``start_shaper.p4`` writes the same condition)."""
    return w > wavg and room_bytes < 2 * acked and room_ns < target_ns


@dataclass
class LinkShaping:
    """IWA's registers of one access link (start_shaper.p4's ``iwa_*[link]``): the queue room its shaped flows
    share is the link's own."""

    grant_tat: int = 0
    wavg: int = 0
    reserve_cur: int = 0
    reserve_old: int = 0
    epoch_t: int = 0
    epoch: int = 0
    nflows: int = 0

    def uncount(self) -> None:
        """One shaped flow fewer, never below zero (start_shaper.p4's action ``uncount``)."""
        self.nflows = self.nflows - 1 if self.nflows else 0

    def reserve(self, p: IwaParams, now: int) -> tuple[int, int]:
        """The two generations as they count at ``now``."""
        e = now - self.epoch_t
        return (self.reserve_cur if e <= 2 * p.hold_ns else 0), (self.reserve_old if e <= p.hold_ns else 0)


class StartShaper:
    def __init__(self) -> None:
        self.syn = [0] * FLOW_SLOTS
        self.syn_t = [0] * FLOW_SLOTS
        self.srtt = [0] * FLOW_SLOTS
        self.ack = [0] * FLOW_SLOTS
        self.state = [0] * FLOW_SLOTS
        self.edge = [0] * FLOW_SLOTS
        self.end = [0] * FLOW_SLOTS
        self.link = [0] * FLOW_SLOTS  # the link each slot's flow was installed on
        self.links: list[LinkShaping] = [LinkShaping() for _ in range(N_LINKS)]

    @property
    def nflows(self) -> int:
        """Link 0's number of shaped flows (the single-link pipeline's)."""
        return self.links[0].nflows

    def downstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track,
                   link: int = 0) -> Track:
        if pkt.udp_valid or not pkt.tcp_valid or pkt.tcp_payload < 0:
            return t
        slot = t.slot
        if t.flags & TrackFlag.NEW_FLOW:  # SYN-ACK of a new flow
            self._install(p, mtu_ns, pkt, now, iwa_on, t, link)
            return t
        if not (t.tracked and pkt.tcp_payload > 0 and pkt.tcp_flags & (TCP_SYN | TCP_ACK) != (TCP_SYN | TCP_ACK)):
            return t
        state, edge, end = self.state[slot], self.edge[slot], self.end[slot]
        flags, cls = t.flags, t.cls
        if state & FLOW_SHAPE and seq_before(edge, (pkt.seq + pkt.tcp_payload) & U32):
            flags |= TrackFlag.BEYOND
        if cls == TrafficClass.TCP_START and state & FLOW_ACKED and not seq_before(pkt.seq, end):
            cls, flags = TrafficClass.TCP_EST, flags & ~TrackFlag.STARTING  # past its start phase
        return replace(t, cls=cls, flags=flags)

    def _install(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track, link: int) -> None:
        """A new flow's SYN-ACK: its window state, and (IWA) one frame reserved on its link for its first window."""
        slot, lk = t.slot, self.links[link]
        syn = self.syn[slot]
        state = FLOW_ANNOUNCED
        server_rtt = 0
        if syn & SYN_SEEN and (syn ^ t.hash) & 0xFFFFFF00 == 0:
            state |= FLOW_SHAPE
            server_rtt = (now - self.syn_t[slot]) & U32
            if syn & SYN_WS and pkt.ws_shift >= 0:
                state |= syn & FLOW_SCALE_MASK
        if iwa_on:
            cur, old = lk.reserve(p, now)
            if now - lk.epoch_t > p.hold_ns:  # a new epoch: the current generation becomes the old one
                cur, old = 0, cur
                lk.epoch, lk.epoch_t = (lk.epoch + 1) & 0xFF, now
                lk.reserve_old = old
            lk.reserve_cur = min(cur + mtu_ns, U32)
            if lk.epoch & 1:
                state |= FLOW_EPOCH
        if self.state[slot] & FLOW_COUNTED:  # the slot's previous flow never closed: counted no more, on its link
            self.links[self.link[slot]].uncount()
        self.state[slot], self.edge[slot], self.end[slot] = state, t.isn, t.isn
        self.srtt[slot], self.ack[slot], self.link[slot] = server_rtt, t.isn, link

    def upstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, queue_tat: int, iwa_on: bool,
                 t: Track, link: int = 0) -> Grant:
        if pkt.udp_valid or not pkt.tcp_valid or pkt.tcp_payload < 0:
            return Grant()
        slot, f = t.slot, pkt.tcp_flags
        if f & (TCP_SYN | TCP_ACK) == TCP_SYN:
            rec = (t.hash & 0xFFFFFF00) | SYN_SEEN
            if pkt.ws_shift >= 0:
                rec |= SYN_WS | min(pkt.ws_shift, WS_MAX)
            self.syn[slot], self.syn_t[slot] = rec, now & U32
            return Grant(syn=True)
        lk = self.links[link]
        if f & TCP_RST and t.tracked and self.state[slot] & FLOW_COUNTED:  # a reset flow is counted no more
            self.state[slot] &= ~FLOW_COUNTED
            lk.uncount()
        if f & (TCP_SYN | TCP_RST | TCP_ACK) != TCP_ACK or not t.tracked:
            return Grant()
        state, edge, end = self.state[slot], self.edge[slot], self.end[slot]
        lead, last_ack = self.srtt[slot], self.ack[slot]
        acked = (pkt.ack - last_ack) & U32 if seq_before(last_ack, pkt.ack) else 0
        flags = TrackFlag.TRACKED
        released = False
        first = not state & FLOW_ACKED
        if first:  # the handshake's ACK: RTT at the switch, and the start phase's length
            rtt = min(t.age, U32) + lead  # the client's side (SYN-ACK to ACK) + the server's (SYN to SYN-ACK)
            end = (t.isn + ns_to_bytes(p, min(rtt + p.target_ns, U32))) & U32
            released = bool(state & FLOW_ANNOUNCED)
            state = (state | FLOW_ACKED) & ~FLOW_ANNOUNCED
            flags |= TrackFlag.FIRST_ACK
        # the number of shaped flows: counted from their first ACK to the client's FIN (or a RST)
        nflows = lk.nflows
        if first and state & FLOW_SHAPE:
            state |= FLOW_COUNTED
            nflows += 1
        if f & TCP_FIN and state & FLOW_COUNTED:
            state &= ~FLOW_COUNTED
            nflows = nflows - 1 if nflows else 0
        lk.nflows = nflows
        scale = state & FLOW_SCALE_MASK
        own = (pkt.ack + (pkt.window << scale)) & U32  # the client's own right edge
        starting = seq_before(edge, end)
        new_edge = own if seq_before(edge, own) else edge
        cur, old = lk.reserve(p, now) if iwa_on else (0, 0)
        window, room = None, 0
        if iwa_on and state & FLOW_SHAPE and not seq_before(own, edge):
            if starting:
                flags |= TrackFlag.STARTING
            # the queue this ACK's data will find when it arrives, one server RTT (lead) from now
            used = cur + old + max(0, queue_tat - now) + max(0, lk.grant_tat - (now + lead))
            # its own reserved frame, if its generation still counts it
            own_frame = (cur if bool(state & FLOW_EPOCH) == bool(lk.epoch & 1) else old) > 0
            avail = p.target_ns + (mtu_ns if released and own_frame else 0)
            room = max(0, avail - used)
            deficit = max(0, used - avail)
            grant = ns_to_bytes(p, min(room, U32))
            if not first and deficit:
                # the queue is above target: replace only part of what left (at most half), so it drains; at
                # most half, because this ACK sees the queue one server RTT before its data would arrive
                grant = acked - min(acked >> 1, ns_to_bytes(p, min(deficit, U32)))
            elif not first:
                # what this ACK acknowledges left the queue: replacing it keeps the queue as it is; on top,
                # the room, but no more than the server's own slow start can use (twice what was acked),
                # and none for a flow whose window is above the shaped flows' average while room is short and
                # partly in use (margin_holds)
                w = 0 if seq_before(edge, pkt.ack) else (edge - pkt.ack) & U32
                inc = min(grant, acked)
                # its share of the path and the budget, (end - isn) bytes, among the shaped flows (rounded down
                # to a power of two: a shift)
                share = ((end - t.isn) & U32) >> share_shift(nflows)
                if w > share or margin_holds(w, lk.wavg, grant, acked, room, p.target_ns):
                    inc = 0
                # the average window of shaped flows: an EWMA with weight 1/8, by shifts
                lk.wavg = lk.wavg + ((w - lk.wavg) >> 3) if w > lk.wavg else lk.wavg - ((lk.wavg - w) >> 3)
                grant = acked + inc
            want = (edge + grant) & U32
            if seq_before(own, want):
                want = own
            floor = (pkt.ack + p.mss_bytes) & U32  # never below one MSS
            if seq_before(own, floor):
                floor = own
            if seq_before(want, floor):
                want = floor
            if seq_before(want, edge):  # never moves the right edge left
                want = edge
            field = (((want - pkt.ack) & U32) + (1 << scale) - 1) >> scale  # round up: never below want
            new_edge = (pkt.ack + (field << scale)) & U32
            if field < pkt.window:
                window = field
        advance = (new_edge - edge) & U32 if seq_before(edge, new_edge) else 0
        self.state[slot], self.edge[slot], self.end[slot] = state, new_edge, end
        if seq_before(last_ack, pkt.ack):
            self.ack[slot] = pkt.ack
        extra = advance - acked if advance > acked else 0  # beyond replacing what left: new queue
        if iwa_on and state & FLOW_SHAPE and extra:
            # scheduled on the link behind everything queued or granted, from when its data can arrive
            lk.grant_tat = max(lk.grant_tat, now + lead) + bytes_to_ns(p, extra)
        if iwa_on and released:  # from the generation it was reserved in
            if bool(state & FLOW_EPOCH) == bool(lk.epoch & 1):
                lk.reserve_cur = cur - mtu_ns if cur > mtu_ns else 0
            else:
                lk.reserve_old = old - mtu_ns if old > mtu_ns else 0
        return Grant(True, False, flags, window, new_edge, advance, room)
