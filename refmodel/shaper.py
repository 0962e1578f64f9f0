"""IWA's start shaping (twin of ``p4src/include/start_shaper.p4``).

Each flow's window state (same slot as ``flows.py``) and the queue room
shaped flows may still take (``docs/iwa.md`` derives every rule).

Per flow:

* ``syn``: the client's SYN, remembered until the SYN-ACK: signature and its
  window-scale shift. The client's windows are scaled only when both the SYN
  and the SYN-ACK carried the option (RFC 7323); a flow whose SYN the switch
  did not see is never shaped (its scale is unknown).
* ``state``: the scale, SHAPE, ANNOUNCED (one frame of queue reserved until
  its first ACK), ACKED, the parity of the reserve's epoch it reserved in,
  COUNTED and FRESH (how it is counted among its link's active flows, see
  below), CLOSED (a FIN or RST from either side: never shaped or counted
  again), IDLE, PAUSED, SHUT and HELD (``at_floor``), ASKED (``asks``), and in its top 16 bits
  the *stamp*: the epoch it was last counted in.
* ``edge``: the right edge of the window the server was given (ACK number +
  scaled window). Every upstream ACK moves it; it never moves left.
* ``srtt``: the server's side of the RTT, from the client's SYN (``syn_t``)
  to the SYN-ACK: how long the data a grant releases takes to arrive.
* ``ack``: the highest ACK number seen, so the next ACK tells what it acknowledges.
* ``link``: the access link it was installed on (its SYN-ACK's), so a slot's reuse uncounts the flow
  that held it from that flow's own link.
* ``rtt``: the flow's RTT measured at the switch at its first ACK (``srtt``
  plus the SYN-ACK to the first ACK). Its *span*, the length of a start
  phase, is ``ns_to_bytes(rtt + target)`` at the link's rate and target of
  each ACK (a radio's path holds more while it is faster): what a flow has
  in flight when its slow start first fills the path and the audio's
  budget. Its *share* of the path and budget is ``span >> share_shift(nflows)``.
* ``end``: where the flow's current start phase ends: its first byte plus
  ``span``, and again the next byte plus ``span`` whenever the server left its
  window unused (a response ended; what it sends next, after an idle restart
  or not, is a new start). Past it, the flow is established (CoDel's too).
* ``mark``, ``mark_t``: a checkpoint, an edge the server was given and when.
  The server had one server RTT to send up to it; if two server RTTs later it
  still has not, it has nothing to send (*application-limited*), and its ACKs
  no longer open its window: the window it would start its next response with
  stays what it has. The next checkpoint is set once the server reaches this one.
* ``tail``: its latest new data was a *short end* (``short_end``: shorter than an
  MSS, at least an MSS before the edge): the last of what the server had, so the
  ACK of everything after it finds the server idle too (``server_idle``), also
  when that ACK comes within the checkpoint's two server RTTs.

Per access link (IWA only; ``LinkShaping``, start_shaper.p4's registers indexed by the packet's link, so each
link's queue room is its own while the flow slots stay shared):

* ``vq_tat``: every window opening (replacement and growth alike) as a virtual
  queue served at the link rate from the moment it is granted, and at a restart (a
  request that starts the server's next response) the whole window the server has. The server
  sends a grant's data one server RTT later, at the spacing the grants had,
  so the real queue one server RTT from now is this virtual queue now: the
  queue the next grant's data will find. (IWA 2 counted growth only, as a
  queue from the data's arrival, as if replacement data kept out of its way;
  inside a round's train it does not, and each round overshot the target.)
* the *reserve*: one frame per announced flow, released by that flow's first ACK.
* the *epoch*, at least ``hold_ns`` long (``roll``): the reserve and the count
  of active flows are each kept in two generations, the current epoch's and
  the previous one's. A reserved frame is gone at most two epochs after its
  SYN-ACK whatever follows: a handshake that never completes cannot pin it.
  A shaped flow counts as active from any ACK of it to the end of the next
  epoch (``count``): ``act_old`` the flows active in the previous epoch,
  ``act_cur`` those active so far in this one, ``act_new`` those of them not
  in ``act_old``; ``nflows = act_old + act_new``. A FIN or RST from either side,
  or its slot's reuse, uncounts a flow at once (``uncount``); one that just
  goes silent (a keep-alive connection, a killed client) drops out within two
  epochs. So no count can go stale: a switch that has seen any history counts
  the same flows as a fresh one two epochs later.

Every upstream ACK of a shaped flow (SHAPE, IWA on) may move the edge by

    grant = min(room, IW_MAX_BYTES)               (its first ACK: at most RFC 6928's initial window)
    grant = acked + min(room, acked)
    grant = acked - min(deficit, acked / 2)       while the queue will be above target
    grant = 0                                     while the server leaves its window unused,
                                                  or a request starts its next response
    room  = target - max(queue, virtual queue) - reserve   (+ its own frame)

``acked`` is what the ACK acknowledges: it left the queue, so replacing it
keeps the queue as it is; on top comes the room, at most ``acked`` again
(the server's own slow start could not use more), and nothing on top for a
flow whose window is above its share, or above half its share while the room
is short (less than twice ``acked``) and partly in use (``margin_holds``), so
flows that started later catch up instead of waiting for the first ones to
finish. While the queue is above target (a negative room) the
edge moves by replacement less the excess, so the queue comes back to it.
Never below one MSS beyond the ACK, except where that MSS finds no room beyond the
floor limit (``at_floor``): a first window is shut, and a flow at its floor whose
ACK of data finds the queue still above target pauses (its edge stays: a zero
window once all it sent is acknowledged), each until an ACK of nothing new (its
server's zero-window probe's answer, a request) finds room, or a second probe's
answer comes (``FLOW_SHUT``, ``FLOW_HELD``); never above the client's own window,
never moving the right edge left; the window is rounded
up to the client's scale. Shaping goes on past the start phase: lifting the
clamp at once lets the server send up to a window back to back (Linux grows
cwnd to twice its flight while window-limited), which measured 73 ms of audio
delay in web6. The start phase's end decides the class: past it, the flow's
data is ``TCP_EST`` and CoDel's (``iwa.py``). Data ending past the edge the
server was given after its first ACK is ``BEYOND`` (the sender ignored the window: ``iwa.py``'s
safety net); before its first ACK a server may only have sent TCP Fast Open data within the SYN's window.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

from .constants import (
    EPOCH_MASK, FLOW_ACKED, FLOW_ANNOUNCED, FLOW_ASKED, FLOW_CLOSED, FLOW_COUNTED, FLOW_EPOCH, FLOW_FRESH, FLOW_IDLE,
    FLOW_HELD, FLOW_PAUSED, FLOW_SCALE_MASK, FLOW_SHUT,
    FLOW_SHAPE, FLOW_SLOTS, FLOW_STAMP_SHIFT, IW_MAX_BYTES, IW_MIN_SEGMENTS, N_LINKS, SYN_SEEN, SYN_WS,
    TCP_OPT_BYTES, WS_MAX,
    TrackFlag, TrafficClass,
)
from .flows import Track, seq_before
from .packet import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Parsed
from .params import IwaParams, bytes_to_ns, ns_to_bytes

U32 = 0xFFFFFFFF
FLAGS = 0xFFFF  # the state's flags (below the stamp)


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
    """ceil(log2(nflows)), 0 for none: a flow's share of the path and budget is ``span >> share_shift``,
    at most 1/nflows of it (``p4src/include/start_shaper.p4``'s table ``iwa_share`` holds the same ranges)."""
    return max(0, nflows - 1).bit_length()


def share_of(span: int, nflows: int) -> int:
    """A flow's share of the path and budget among the link's ``nflows`` active flows: its start phase's length
    ``span`` shifted by ``share_shift`` (``start_shaper.p4``: ``iwa_share``, applied once an ACK)."""
    return span >> share_shift(nflows)


def margin_holds(w: int, share: int, room_bytes: int, acked: int, room_ns: int, target_ns: int) -> bool:
    """The margin: no growth for a flow whose window ``w`` is above half its ``share`` while the room is short
    (less than twice what its ACK acknowledged) *and partly in use* (less than the whole target), so growth
    stops before the room is gone, and the flows below half their share take what is left: a page's flows
    reach their shares together instead of one waiting at its floor while the first ones take the room. (IWA 2
    compared with the flows' average window; in the captures one flow of six stayed at its floor four rounds:
    docs/iwa-results.md, "The margin".) A wholly free target (nothing queued, granted or reserved) has nothing to
    misjudge; without that condition, where the target holds fewer than two segments (one frame at EDGE) the
    room is always short and a lone flow would stop at half its share (``start_shaper.p4`` writes the same
    condition)."""
    return w > share >> 1 and room_bytes < 2 * acked and room_ns < target_ns


def app_limited(seqhi: int, mark: int, mark_t: int, now: int, lead: int, mss: int) -> bool:
    """The server left its window unused: two server RTTs (``lead``) after it was given the edge ``mark`` it
    still has not sent up to one MSS of it (a sender leaves less than a segment unused when it has more to send:
    it sends full segments only). ``mark_t`` and ``now`` are compared in 32 bits, wrap-safe."""
    return seq_before((seqhi + mss) & U32, mark) and ((now - mark_t) & U32) > 2 * lead


def server_idle(seqhi: int, mark: int, mark_t: int, now: int, lead: int, mss: int, ack: int, acked: int,
                tail: bool) -> bool:
    """The server has nothing to send: it left its window unused (``app_limited``), or this ACK acknowledges all
    it sent and the last of that was a short segment that left at least an MSS of its window (``tail``:
    ``short_end``). It catches the end of a response whose last ACKs come within two server RTTs of its latest
    checkpoint: the ACK after the last burst reaches the checkpoint and sets the next with a fresh clock
    (docs/iwa.md, "Restarts")."""
    return app_limited(seqhi, mark, mark_t, now, lead, mss) or (tail and acked > 0 and not seq_before(ack, seqhi))


def full_segment(mss: int) -> int:
    """The least payload of a full-size segment: the MSS bounds payload and options together (RFC 6691), so a
    sender's full segments carry an MSS less their options, at most ``TCP_OPT_BYTES`` bytes (1448 B with
    Linux's timestamps, against IwaParams.mss_bytes's 1460 at a 1514 B frame). Counted in MSS, three of Linux's
    full segments fall 36 bytes short of RFC 3390's 3 x 1460 (docs/iwa-results.md, "Segments as Linux sends
    them": the LTE pages)."""
    return mss - TCP_OPT_BYTES


def first_window(p: IwaParams, room_ns: int) -> int:
    """A flow's first window (the handshake's ACK): the room, at most the largest initial window a standard TCP
    sends (RFC 6928: ``IW_MAX_BYTES``, 14600 B, ten segments of 1460). The window joins the virtual queue whole
    as it is granted, as queue to come one server RTT later; a server sends no more than its initial window in
    that round trip, and the rest of a larger window only after ACKs that open it anyway. Where the room is more
    than an initial window (LTE: 35 ms at 50 Mbit/s, 219 kB), the first flows of a page took the client's whole
    64 kB windows each, the virtual queue counted 4 x 64 kB where IW10 servers sent 4 x 14.5 kB, and the page's
    last flows got first windows of five segments: a round trip late (tcpsim, LTE web6 IW10: 0.234 s against
    FIFO's 0.183 s; 0.183 s with it)."""
    return min(ns_to_bytes(p, min(room_ns, U32)), IW_MAX_BYTES)


def short_end(payload: int, seq_end: int, edge: int, mss: int) -> bool:
    """A new-data segment of ``payload`` bytes ending at ``seq_end`` was the last of what its server had: shorter
    than a full segment (``full_segment``) and at least one MSS before the ``edge`` the switch holds. A sender
    with more to send fills its window to less than an MSS: Linux's window-filling short segments (1448 + 88
    bytes in a 1536-byte window) end at its edge, and Nagle holds back less than an MSS left. Judged on the web
    server's own captures (``experiments/response_ends.py``, docs/iwa-results.md "Restarts"): in web6's 10 replications
    this takes 3 tails for ends that were not, against 43 when any window left counted (the rule reverted in
    ad038f0, whose web6 pages took 3.28 s); the edge the switch holds is one server RTT later than the server's,
    which counts for less. Shorter than the MSS itself took every segment with timestamps (1448 B) for an end
    wherever the window was more than an MSS ahead: at LTE, every round's last ACK retracted the window."""
    return payload < full_segment(mss) and not seq_before(edge, (seq_end + mss) & U32)


def asks(state: int, payload: int, acked: int, ack: int, seqhi: int) -> bool:
    """A client's request (a segment with data) that acknowledges all its server sent, while the server's window
    has not joined the virtual queue since the server last sent (``FLOW_ASKED``, which segments acknowledging
    nothing new keep: an upload's later segments ask once): it starts the server's next response. An HTTP/1.1
    client asks only once it has the whole response, so its server is idle even where the switch could not see
    the response end (its last ACKs came within two server RTTs of the window's latest opening:
    ``experiments/response_ends.py``'s unnoticed ends), and answers with the window it was left, back to back
    (docs/iwa.md, "Restarts")."""
    return payload > 0 and not seq_before(ack, seqhi) and not (state & FLOW_ASKED and acked == 0)


def checkpoint(edge: int, seqhi: int, acked: int, mss: int, first: bool = False) -> int:
    """The next checkpoint an ACK sets: what a server with more to send must reach within one server RTT. The
    ACK frees ``acked`` bytes of its flight, and a sender limited by its congestion window refills at least
    that (its window does not shrink on an ACK: slow start grows it), at least one MSS; after the handshake's
    ACK, its initial window, at least RFC 3390's three segments (``IW_MIN_SEGMENTS``). So it sends up to
    ``seqhi`` plus that or up to the ``edge`` it was given, whichever is nearer (``app_limited``'s one-MSS
    tolerance added). A checkpoint at the edge alone took a slow-starting server far from a first window as
    large as the room (200 kB at LTE) for an ended response (docs/iwa.md, "Restarts"). Segments are counted as
    full segments (``full_segment``): three with timestamps are 4344 bytes, not 3 x 1460."""
    seg = full_segment(mss)
    need = IW_MIN_SEGMENTS * seg if first else max(acked, seg)
    near = (seqhi + mss + need) & U32
    return near if seq_before(near, edge) else edge


def bounded(want: int, own: int, ack: int, mss: int) -> tuple[int, int, bool]:
    """The edge an ACK asks for, within RFC 9293's bounds: never beyond the client's own edge ``own``, never
    below one MSS beyond the ACK (``floor``, itself never beyond ``own``). Returns (want, floor, whether the
    floor raised it)."""
    if seq_before(own, want):
        want = own
    floor = (ack + mss) & U32
    if seq_before(own, floor):
        floor = own
    if seq_before(want, floor):
        return floor, floor, True
    return want, floor, False


def beyond_floor_limit(p: IwaParams, span: int, nflows: int) -> bool:
    """The link is beyond its floor limit: each of its ``nflows`` flows' share of the path and budget is below one
    MSS, so their floors alone keep a queue standing above the target (docs/iwa.md, "The floor limit")."""
    return share_of(span, nflows) < p.mss_bytes


def room_of(p: IwaParams, reserve_cur: int, reserve_old: int, granted: int, own_frame: int) -> tuple[int, int]:
    """The queue room an ACK's grant is sized from, and (the queue above target) its deficit, in ns: the target
    (with ``own_frame``, a first ACK's frame its SYN-ACK reserved, if still counted) less what its data will find
    when it arrives: the grants' virtual queue or the real queue if more (``granted``), and the frames reserved
    for flows still to start (``reserve_cur + reserve_old``)."""
    used, avail = reserve_cur + reserve_old + granted, p.target_ns + own_frame
    return max(0, avail - used), max(0, used - avail)


def pauses(p: IwaParams, state: int, cutting: bool, acked: int, queue_ns: int, mtu_ns: int, span: int,
           nflows: int) -> bool:
    """A flow at its floor pauses (docs/iwa.md, "The pause"): its server probes after its RTO and the probe's ACK,
    which acknowledges nothing, reopens the MSS. A pause costs the flow that RTO, so only for an ACK of data
    (``acked``) while the queue is above target (``cutting``) and the real queue (``queue_ns``, not only the
    one predicted from grants) more than a frame above it, and at most once an epoch (``FLOW_PAUSED``) unless
    the link is beyond its floor limit: its flows' shares of the path and budget each below one MSS, where no
    window can hold the queue and pausing is the only lever that loses nothing."""
    return (cutting and acked > 0 and queue_ns > p.target_ns + mtu_ns
            and (beyond_floor_limit(p, span, nflows) or not state & FLOW_PAUSED))


class Floor(NamedTuple):
    """What a window at its floor does instead (``at_floor``): the edge it asks for (None: the floor, one MSS
    beyond the ACK), its state, and whether it paused."""

    want: int | None
    state: int
    paused: bool = False


def at_floor(p: IwaParams, state: int, *, first: bool, cutting: bool, acked: int, payload: int, granted: int,
             queue_ns: int, mtu_ns: int, span: int, nflows: int, ack: int, seqhi: int, edge: int) -> Floor:
    """A window the rules would set below one MSS beyond the ACK (docs/iwa.md, "At the floor"). It gets that
    MSS, except where there is no room for it: the link beyond its floor limit (each flow's share of the path
    and budget below one MSS, where no window can hold the queue) and what was granted (``granted``, or the real
    queue if more) more than a frame above target, as a pause asks of the real queue. Then:

    * a first window is shut (zero): its server waits for its zero-window probe instead of adding its MSS to a
      full queue, and the answers to a page's probes come back spread by what the queue admits;
    * a shut window (``FLOW_SHUT``) reopens to the MSS on any ACK of nothing new (``acked`` 0: a probe's answer,
      or the client's next request) once there is room; while there is none it stays shut, but a probe's answer
      (no data: ``payload`` 0) holds it only once (``FLOW_HELD``), the next reopens it: a flow waits at most two
      of its server's probe intervals at a time;
    * a flow that pauses (``pauses``) keeps its edge, shut once this ACK acknowledges all its server sent
      (``seqhi``); an edge behind the ACK (a shut or a retraction the server's data overtook) pauses at the ACK.

    Any other window at its floor is open: ``FLOW_SHUT`` and ``FLOW_HELD`` cleared."""
    opened = state & ~(FLOW_SHUT | FLOW_HELD)
    full = granted > p.target_ns + mtu_ns and beyond_floor_limit(p, span, nflows)
    over = 0 < p.floor_cap_ns < granted  # a floor more would overflow the buffer
    if state & FLOW_SHUT and acked == 0:
        if not over and (not full or (payload == 0 and state & FLOW_HELD)):
            return Floor(None, opened)
        return Floor(ack, state | (FLOW_HELD if payload == 0 else 0))
    if first and (full or over):
        return Floor(ack, state | FLOW_SHUT)
    if pauses(p, state, cutting, acked, queue_ns, mtu_ns, span, nflows):
        if not seq_before(ack, seqhi):
            return Floor(ack, state | FLOW_PAUSED | FLOW_SHUT, True)
        return Floor(ack if seq_before(edge, ack) else edge, opened | FLOW_PAUSED, True)
    return Floor(None, opened)


def window_terms(p: IwaParams, edge: int, ack: int, span: int, nflows: int, room_ns: int) -> tuple[int, int, int]:
    """What ``growth`` and ``starves`` judge an ACK by: the flow's window beyond the ACK (the edge, 0 if the ACK is
    past it), its share of the path and budget among the link's ``nflows`` active flows, and the room in bytes."""
    w = 0 if seq_before(edge, ack) else (edge - ack) & U32
    return w, share_of(span, nflows), ns_to_bytes(p, min(room_ns, U32))


def starves(w: int, share: int, room_bytes: int, acked: int) -> bool:
    """A flow below half its share whose ACK finds less room than it acknowledged: it cannot even double. It
    marks its link (``LinkShaping.starved_t``), and for a round trip the flows above half their shares do not
    grow (``growth``), so the room their growth took goes to it (docs/iwa.md, "Starved flows")."""
    return w <= share >> 1 and room_bytes < acked


def growth(p: IwaParams, edge: int, ack: int, span: int, nflows: int, acked: int, room_ns: int,
           starving: bool = False) -> int:
    """What an ACK may add beyond replacement for a flow whose window ``w`` is the edge beyond the ACK: the room, at
    most what it acknowledged (the server's own slow start could not use more), and none for a flow above its
    share of the path and budget among the link's ``nflows`` active flows (``span`` rounded down to a power of
    two: a shift), or above half of it while the room is short and partly in use (``margin_holds``) or while
    a flow of its link starves (``starving``: ``starves`` within the last round trip)."""
    w, share, room_bytes = window_terms(p, edge, ack, span, nflows, room_ns)
    if w > share or margin_holds(w, share, room_bytes, acked, room_ns, p.target_ns) or (w > share >> 1 and starving):
        return 0
    return min(room_bytes, acked)


def roll_step(hold_ns: int, age: int) -> int:
    """How far a link's epoch moves when it is ``age`` old: 0, it goes on; 1, a new epoch (the current
    generations become the previous ones); 2, more than an epoch of silence: both generations are over and the
    epoch number skips one (``LinkShaping.roll``, ``active_at``; start_shaper.p4's ``roll_step``)."""
    return 0 if age <= hold_ns else 1 if age <= 2 * hold_ns else 2


def _dec(n: int) -> int:
    return n - 1 if n else 0


@dataclass
class LinkShaping:
    """IWA's registers of one access link (start_shaper.p4's ``iwa_*[link]``): the queue room its shaped flows
    share is the link's own."""

    vq_tat: int = 0
    reserve_cur: int = 0
    reserve_old: int = 0
    epoch_t: int = 0
    epoch: int = 0
    act_old: int = 0
    act_cur: int = 0
    act_new: int = 0
    starved_t: int = 0  # when a flow of the link last starved (``starves``); 0: never

    @property
    def nflows(self) -> int:
        """The link's active shaped flows: those of the previous epoch and those new in this one."""
        return self.act_old + self.act_new

    def active_at(self, hold_ns: int, now: int) -> int:
        """The active shaped flows ``roll`` would leave at ``now``, without rolling: what a packet that changes
        nothing on the link reads (the share of what no window holds, ``unheld_shift``)."""
        return (self.nflows, self.act_cur, 0)[roll_step(hold_ns, now - self.epoch_t)]

    def unheld_shift(self, hold_ns: int, now: int) -> int:
        """What no window holds on this link (datagrams, QUIC, unshaped TCP: ``iwa.unheld``) is one more flow
        beside the active shaped ones: its share of the link is 1 / 2^unheld_shift, i.e. 1/(flows + 1) rounded
        down to a power of two (``share_shift``; at most its share, more than half of it). Downstream, before
        the packet's own effect (``start_shaper.p4`` reads it first)."""
        return share_shift(self.active_at(hold_ns, now) + 1)

    def roll(self, hold_ns: int, now: int) -> None:
        """A new epoch once the current one is ``hold_ns`` old: the current generations (reserve, active
        flows) become the previous ones. After a silence of more than an epoch both are over, and the epoch
        number skips one, so no flow stamped before the silence counts as active in the epoch before."""
        step = roll_step(hold_ns, now - self.epoch_t)
        if step == 0:
            return
        if step == 2:
            self.reserve_old = self.act_old = 0
        else:
            self.reserve_old, self.act_old = self.reserve_cur, self.act_cur
        self.reserve_cur = self.act_cur = self.act_new = 0
        self.epoch, self.epoch_t = (self.epoch + step) & EPOCH_MASK, now

    def count(self, state: int) -> int:
        """A shaped flow heard from in this epoch: counted once per epoch (``act_cur``), and in ``act_new`` if
        it was not active in the epoch before. Returns its state, stamped with this epoch."""
        stamp = state >> FLOW_STAMP_SHIFT
        if state & FLOW_COUNTED and stamp == self.epoch:
            return state
        self.act_cur += 1
        flags = state & FLAGS & ~FLOW_PAUSED | FLOW_COUNTED  # a new epoch: it may pause again
        if state & FLOW_COUNTED and stamp == (self.epoch - 1) & EPOCH_MASK:
            flags &= ~FLOW_FRESH  # continuing: already in act_old
        else:
            self.act_new += 1
            flags |= FLOW_FRESH
        return flags | self.epoch << FLOW_STAMP_SHIFT

    def uncount(self, state: int) -> int:
        """A counted flow closed (or lost its slot): out of the generations it is in, at once. Returns its
        state, uncounted."""
        if state & FLOW_COUNTED:
            stamp = state >> FLOW_STAMP_SHIFT
            if stamp == self.epoch:
                self.act_cur = _dec(self.act_cur)
                if state & FLOW_FRESH:
                    self.act_new = _dec(self.act_new)
                else:
                    self.act_old = _dec(self.act_old)
            elif stamp == (self.epoch - 1) & EPOCH_MASK:
                self.act_old = _dec(self.act_old)
        return state & ~(FLOW_COUNTED | FLOW_FRESH)


class Opening(NamedTuple):
    """What an ACK asks for before the bounds (``StartShaper._opening``): ``grant`` bytes beyond ``base`` (the
    ACK for a first window, else the edge the flow has), and the flow's state and start phase's end after it."""

    grant: int
    base: int
    state: int
    end: int
    cutting: bool = False  # the queue is above target: less than replacement
    retract: bool = False  # the server left its window unused and all it sent is acknowledged: back to one MSS


def coarse(p: IwaParams, scale: int) -> bool:
    """A client's window scale whose smallest window above zero (``2^scale`` bytes) exceeds one MSS: shifts of 11
    and up (Linux picks one that large only for a receive buffer of 64 MB or more). No window it can be given holds
    a flow at its one-MSS floor, so IWA does not shape the flow: its data is the standing-queue control's."""
    return p.mss_bytes >> scale == 0


def shaped(state: int) -> bool:
    """IWA holds the flow by its window: its SYN was seen (its scale is known) and it has not closed."""
    return state & (FLOW_SHAPE | FLOW_CLOSED) == FLOW_SHAPE


class StartShaper:
    def __init__(self) -> None:
        self.syn = [0] * FLOW_SLOTS
        self.syn_t = [0] * FLOW_SLOTS
        self.srtt = [0] * FLOW_SLOTS
        self.ack = [0] * FLOW_SLOTS
        self.state = [0] * FLOW_SLOTS
        self.edge = [0] * FLOW_SLOTS
        self.end = [0] * FLOW_SLOTS
        self.rtt = [0] * FLOW_SLOTS
        self.mark = [0] * FLOW_SLOTS
        self.mark_t = [0] * FLOW_SLOTS
        self.tail = [False] * FLOW_SLOTS  # its latest new data was a short end (``short_end``)
        self.link = [0] * FLOW_SLOTS  # the link each slot's flow was installed on
        self.links: list[LinkShaping] = [LinkShaping() for _ in range(N_LINKS)]

    @property
    def nflows(self) -> int:
        """Link 0's number of active shaped flows (the single-link pipeline's)."""
        return self.links[0].nflows

    def _close(self, slot: int) -> None:
        """A FIN or RST from either side: the flow is uncounted at once, on its own link, and never shaped or
        counted again (its later data, if any, is the standing-queue control's)."""
        self.state[slot] = self.links[self.link[slot]].uncount(self.state[slot]) | FLOW_CLOSED

    def downstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track,
                   link: int = 0) -> Track:
        if pkt.udp_valid or not pkt.tcp_valid or pkt.tcp_payload < 0:
            return t
        slot = t.slot
        if t.flags & TrackFlag.NEW_FLOW:  # SYN-ACK of a new flow
            self._install(p, mtu_ns, pkt, now, iwa_on, t, link)
            return t
        if not t.tracked or pkt.tcp_flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK):
            return t
        if pkt.tcp_flags & (TCP_FIN | TCP_RST):  # the server closes (or resets) the flow
            self._close(slot)
        state, edge, end = self.state[slot], self.edge[slot], self.end[slot]
        flags, cls = t.flags, t.cls
        if shaped(state):
            flags |= TrackFlag.SHAPED
        elif cls == TrafficClass.TCP_START:  # a flow IWA does not shape: the standing-queue control's
            cls, flags = TrafficClass.TCP_EST, flags & ~TrackFlag.STARTING
        if pkt.tcp_payload > 0 and shaped(state) and state & FLOW_ACKED:
            seq_end = (pkt.seq + pkt.tcp_payload) & U32
            if seq_before(edge, seq_end):
                flags |= TrackFlag.BEYOND
            if cls == TrafficClass.TCP_START and not seq_before(pkt.seq, end):
                cls, flags = TrafficClass.TCP_EST, flags & ~TrackFlag.STARTING  # past its start phase
            if not flags & TrackFlag.RTX:
                self.tail[slot] = short_end(pkt.tcp_payload, seq_end, edge, p.mss_bytes)
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
            if coarse(p, state & FLOW_SCALE_MASK):
                state &= ~FLOW_SHAPE
        if iwa_on:
            lk.roll(p.hold_ns, now)
            lk.reserve_cur = min(lk.reserve_cur + mtu_ns, U32)
            if lk.epoch & 1:
                state |= FLOW_EPOCH
        if self.state[slot] & FLOW_COUNTED:  # the slot's previous flow never closed: counted no more, on its link
            self.links[self.link[slot]].uncount(self.state[slot])
        self.state[slot], self.edge[slot], self.end[slot], self.rtt[slot] = state, t.isn, t.isn, 0
        self.srtt[slot], self.ack[slot], self.link[slot] = server_rtt, t.isn, link
        self.mark[slot], self.mark_t[slot] = t.isn, now & U32
        self.tail[slot] = False

    def unheld_shift(self, p: IwaParams, now: int, link: int = 0) -> int:
        """The share of ``link`` what no window holds gets downstream, 1/2^shift (``LinkShaping.unheld_shift``;
        ``start_shaper.p4`` computes it first, for every downstream packet under IWA)."""
        return self.links[link].unheld_shift(p.hold_ns, now)

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
        if not t.tracked:
            return Grant()
        if f & (TCP_FIN | TCP_RST):  # the client closes (or resets) the flow
            self._close(slot)
        if self.state[slot] & FLOW_CLOSED:  # its windows pass as the client wrote them
            return self._unshaped(pkt, slot) if f & (TCP_ACK | TCP_RST) == TCP_ACK else Grant(True)
        if f & (TCP_SYN | TCP_ACK) != TCP_ACK:
            return Grant()
        return self._ack(p, mtu_ns, pkt, now, queue_tat, iwa_on, t, self.links[link])

    def _unshaped(self, pkt: Parsed, slot: int) -> Grant:
        """An ACK that leaves with the client's own window: the edge the server now has (never left of the
        edge it had: IWA only ever lowered the client's windows)."""
        edge = self.edge[slot]
        own = (pkt.ack + (pkt.window << (self.state[slot] & FLOW_SCALE_MASK))) & U32
        if seq_before(edge, own):
            self.edge[slot] = own
        return Grant(True, False, TrackFlag.TRACKED, None, self.edge[slot], (self.edge[slot] - edge) & U32, 0)

    def _ack(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, queue_tat: int, iwa_on: bool, t: Track,
             lk: LinkShaping) -> Grant:
        """An ACK of a tracked, open flow: the start phase's length at its first, and (IWA, a shaped flow) the
        window it leaves with (``_shape``)."""
        slot = t.slot
        state, edge, end, rtt = self.state[slot], self.edge[slot], self.end[slot], self.rtt[slot]
        last_ack = self.ack[slot]
        flags = TrackFlag.TRACKED
        first = not state & FLOW_ACKED
        released = first and bool(state & FLOW_ANNOUNCED)  # its first ACK releases the frame its SYN-ACK reserved
        if first:  # the handshake's ACK: RTT at the switch, and the start phase's length
            rtt = min(min(t.age, U32) + self.srtt[slot], U32)  # client side (SYN-ACK to ACK) + server side
            state = (state | FLOW_ACKED) & ~FLOW_ANNOUNCED
            flags |= TrackFlag.FIRST_ACK
        # the span at the link's rate and target now: on a radio, a flow that started in a slow slot is not
        # held to that slot's path once the link is faster
        span = ns_to_bytes(p, min(rtt + p.target_ns, U32))
        if first:
            end = (t.isn + span) & U32
        own = (pkt.ack + (pkt.window << (state & FLOW_SCALE_MASK))) & U32  # the client's own right edge
        shaping = iwa_on and state & FLOW_SHAPE and not seq_before(own, edge)
        if iwa_on and state & FLOW_SHAPE:
            lk.roll(p.hold_ns, now)
            state = lk.count(state)
        mine_cur = bool(state & FLOW_EPOCH) == bool(lk.epoch & 1)  # its frame is in the current generation
        new_edge, window, room, charge = (own if seq_before(edge, own) else edge), None, 0, 0
        if shaping:
            if seq_before(edge, end):
                flags |= TrackFlag.STARTING
            own_frame = mtu_ns if released and (lk.reserve_cur if mine_cur else lk.reserve_old) > 0 else 0
            state, end, new_edge, window, room, charge = self._shape(
                p, mtu_ns, pkt, now, queue_tat, t, lk, state, edge, end, span, own, own_frame, first)
        else:  # it leaves with the client's own window: whatever IWA shut is open
            state &= ~(FLOW_SHUT | FLOW_HELD)
        advance = (new_edge - edge) & U32 if seq_before(edge, new_edge) else 0
        if charge:  # served at the link rate from now: the queue its data builds one server RTT on
            lk.vq_tat = max(lk.vq_tat, now) + bytes_to_ns(p, min(charge, U32))
        self.state[slot], self.edge[slot], self.end[slot], self.rtt[slot] = state, new_edge, end, rtt
        if seq_before(last_ack, pkt.ack):
            self.ack[slot] = pkt.ack
        if iwa_on and released:  # from the generation it was reserved in
            if mine_cur:
                lk.reserve_cur = lk.reserve_cur - mtu_ns if lk.reserve_cur > mtu_ns else 0
            else:
                lk.reserve_old = lk.reserve_old - mtu_ns if lk.reserve_old > mtu_ns else 0
        return Grant(True, False, flags, window, new_edge, advance, room)

    def _shape(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, queue_tat: int, t: Track, lk: LinkShaping,
               state: int, edge: int, end: int, span: int, own: int, own_frame: int,
               first: bool) -> tuple[int, int, int, int | None, int, int]:
        """The window a shaped flow's ACK leaves with: the room, the opening it asks for (``_opening``), the
        bounds (``bounded``, ``at_floor``), rounded up to the client's scale. Returns the flow's state, its start
        phase's end, its new edge, the window field to write (None: the client's own), the room (ns) and the
        bytes that join the link's virtual queue: what it opened, or at a restart the whole window."""
        slot, scale = t.slot, state & FLOW_SCALE_MASK
        last_ack = self.ack[slot]
        acked = (pkt.ack - last_ack) & U32 if seq_before(last_ack, pkt.ack) else 0
        granted = max(queue_tat - now, lk.vq_tat - now, 0)  # the grants' virtual queue, or the queue now if more
        room, deficit = room_of(p, lk.reserve_cur, lk.reserve_old, granted, own_frame)
        restart = bool(state & FLOW_IDLE) and (pkt.tcp_payload > 0 or acked > 0)
        request = not first and not restart and asks(state, pkt.tcp_payload, acked, pkt.ack, t.seqhi)
        if acked > 0:  # its server sent more since its window last joined the virtual queue
            state &= ~FLOW_ASKED
        o = self._opening(p, pkt, now, t, lk, state, edge, end, span, acked, room, deficit, first, restart,
                          request)
        state, end = o.state, o.end
        want, floor, floored = bounded((o.base + o.grant) & U32, own, pkt.ack, p.mss_bytes)
        if floored and o.cutting and seq_before(pkt.ack, end):
            # at its floor and the queue still above target: no window can hold it less, so its start phase
            # ends and its data is CoDel's (docs/iwa.md, "The floor limit": N flows x one MSS)
            end = pkt.ack
        if floored:
            held = at_floor(p, state, first=first, cutting=o.cutting, acked=acked, payload=pkt.tcp_payload,
                            granted=granted, queue_ns=queue_tat - now, mtu_ns=mtu_ns, span=span, nflows=lk.nflows,
                            ack=pkt.ack, seqhi=t.seqhi, edge=edge)
            state, want = held.state, want if held.want is None else held.want
        else:
            state &= ~(FLOW_SHUT | FLOW_HELD)
        if o.retract:
            want, state = floor, state | FLOW_IDLE
        elif seq_before(want, edge) and not state & FLOW_SHUT:  # never moves the right edge left (but to shut it)
            want = edge
        field = (((want - pkt.ack) & U32) + (1 << scale) - 1) >> scale  # round up: never below want
        new_edge = (pkt.ack + (field << scale)) & U32
        charge = (new_edge - edge) & U32 if seq_before(edge, new_edge) else 0  # what it opened: queue to come
        if restart or request:
            # the server's next response starts: the window it now has is queue to come one server RTT from
            # now, back to back (the grants that opened it left the virtual queue long ago), so it joins the
            # virtual queue now and the other flows' ACKs in that server RTT make room for it; a retraction
            # (``server_idle`` on a request that acknowledges new data) left it one MSS, and so did a request
            # after a retraction: the requests of a page's connections come together, and the switch cannot
            # know how many follow this one (their SYN-ACKs announced fresh flows an RTT ahead)
            state = state & ~FLOW_IDLE | FLOW_ASKED
            charge = (new_edge - pkt.ack) & U32 if seq_before(pkt.ack, new_edge) else 0
        if first or restart or request or not seq_before((t.seqhi + p.mss_bytes) & U32, self.mark[slot]):
            # a new start, or it reached the checkpoint: the next one
            self.mark[slot], self.mark_t[slot] = checkpoint(new_edge, t.seqhi, acked, p.mss_bytes, first), now & U32
        return state, end, new_edge, field if field < pkt.window else None, room, charge

    def _opening(self, p: IwaParams, pkt: Parsed, now: int, t: Track, lk: LinkShaping, state: int, edge: int,
                 end: int, span: int, acked: int, room: int, deficit: int, first: bool, restart: bool,
                 request: bool) -> Opening:
        """How far an ACK asks to move its flow's edge, before the bounds: one of the rules of docs/iwa.md, by
        what the flow is doing."""
        if first:  # a first window: the room (it joins the virtual queue as it is granted), at most an initial window
            return Opening(first_window(p, room), pkt.ack, state | FLOW_ASKED, end)
        if restart:  # a request after a retraction: its first window is the MSS the retraction left it
            return Opening(0, edge, state, end)
        if server_idle(t.seqhi, self.mark[t.slot], self.mark_t[t.slot], now, self.srtt[t.slot], p.mss_bytes,
                       pkt.ack, acked, self.tail[t.slot]):
            # the server left its window unused (a response ended): no opening, and what it sends next starts a
            # new start phase; once this very ACK acknowledges all it sent, its window is retracted to one MSS
            # (docs/iwa.md, "Restarts"), so that what it sends next is sized as a start
            return Opening(0, edge, state, (t.seqhi + span) & U32,
                           retract=acked > 0 and not seq_before(pkt.ack, t.seqhi))
        if request:  # a new start, with the window an end the switch could not see left its server
            return Opening(0, edge, state, (t.seqhi + span) & U32)
        if deficit:
            # the queue its data will meet is above target: replace what left less the excess, so that queue
            # comes back to the target (the cut leaves the virtual queue at once, so the next ACK sees what is
            # left of the excess; docs/iwa.md, "The cut")
            return Opening(acked - min(acked, ns_to_bytes(p, min(deficit, U32))), edge, state, end, cutting=True)
        if starves(*window_terms(p, edge, pkt.ack, span, lk.nflows, room), acked):
            lk.starved_t = now
        # for a round trip (the ACKing flow's RTT at the switch) after a flow of its link starved
        starving = lk.starved_t != 0 and now - lk.starved_t < self.rtt[t.slot]
        inc = growth(p, edge, pkt.ack, span, lk.nflows, acked, room, starving)
        return Opening(acked + inc, edge, state, end)
