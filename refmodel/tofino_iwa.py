"""IWA's start shaper cut into Tofino 2 passes (the twin of the TNA program still to write, issue 34 item 1).

``shaper.py`` (the v1model program's ``start_shaper.p4``) reads a flow's and its link's registers, works out
the window an ACK leaves with, then writes them, touching some registers twice (a link's epoch, the count of
active flows) and computing for more stages than one Tofino pass has (docs/tofino-design.md §3.7 counts about
28 dependent steps). A Tofino stateful ALU touches its register once per pass, with a few conditions, and
cannot multiply two run-time values or shift by one. So, as ``tofino_red.py`` did for RED, this module is the
same shaper cut into passes, each register behind a ``Register`` that refuses a second access in one pass,
and ``tests/test_tofino_iwa.py`` measures it against ``shaper.py`` (the oracle) in ``tests/tcpsim.py``.

The arithmetic needs no new approximation: ``shaper.py`` already forms its products as a run-time value times
a configured constant through the mantissa tables (``params.ns_to_bytes``, ``bytes_to_ns``: ``arith.mul``,
never above the exact product, < 1/64 below it), the share's shift through a range table (``share_shift``:
``iwa_share``) and every other shift by a constant (``2 * lead``, ``acked >> 1``, the margin's ``share >> 1``). What
the twin changes:

* **Shifts by the client's window scale** (``window << scale``, the rounding up of ``want - ack``) are
  lookups of a table keyed by the scale (``SCALE_SHIFTS``: 15 rows, each a constant shift): exact.
* **32-bit time, compared serially.** The link's virtual queue (``iwa_vq``) and its epoch start are 64-bit
  in ``shaper.py``; here both are 32-bit ns and compared as serial numbers (``arith.s32``). The packet
  generator's ticks (``tick``) keep them within 2^31 ns of now without changing a decision: a virtual queue
  in the past is pulled up to now (every use takes ``max(vq, now)``), an epoch more than two holds old is
  pulled to ``2 * hold + 1`` ns old (every use only asks "more than two holds?"). That needs
  ``2 * hold + TICK_PERIOD_MAX < 2^31 ns`` (``check_hold``). ``mark_t`` and ``syn_t`` were 32-bit already.
  The queue's backlog comes from the TNA queue (``tofino_queue.py``) as a 32-bit value.
* **The passes and the race between them** (below): the second pass writes what the first decided from the
  state it read, and another packet of the same link (or flow) may come between them. ``lag_ns`` sets how
  long after its first pass a packet's second pass runs (0: at once, as BMv2 would; on a Tofino a
  resubmission takes well under a microsecond, a recirculation a little more). The second pass is written
  so that a race errs towards the audio: ``flow_edge`` takes the larger edge (never left), the virtual
  queue adds the grant to what it has then.

The pass-2 header (``Pass2``, a 96-bit resubmit header as RED's on Tofino 2) holds op 12 bits, the window
field 16, the scale 4, the virtual queue's addition 32 and a word 32 (UNCOUNT's displaced state): 96 bits. Its ACK
number, flow slot and link come from the packet itself, parsed again.

Registers (flow registers at the flow's slot, link registers at the link's index):

=========================  ==================================  ======================================
register                   upstream ACK, pass 1                upstream ACK, pass 2
=========================  ==================================  ======================================
flow_link                  read: its link, SHAPE, scale and    -
                           CLOSED (``Info``), known before
                           flow_state's action
flow_srtt                  read (the server's RTT, ``lead``)   -
flow_mark {mark, mark_t}   read (app-limited?)                 write (a new checkpoint, from the word)
flow_tail                  read (a short end, an MSS before   -
                           the edge?)
flow_edge                  read                                max(edge, new edge); or set (retract,
                                                               a pause's shut window)
flow_ack                   max(ack, packet's ack), returns     -
                           the old: ``acked`` (atomic)
iwa_epoch {t, epoch}       roll (a shaped flow's ACK)          -
flow_state                 first ACK, count stamp, IDLE set    PAUSED, SHUT, HELD set or SHUT and HELD
                           (retract) or cleared (restart)      cleared (shaper.at_floor: the room)
iwa_act_cur                roll; +1 when counted this epoch    -
iwa_act {old, new}         roll; new +1 when fresh             -
iwa_reserve {cur, old}     roll; its own frame released        -
flow_span {span, rtt}      set at the first ACK, else read     -
flow_end                   set at the first ACK or when the    set to the ACK (floor limit)
                           server idled, else read
iwa_vq                     read                                max(vq, now) + the grant's time
iwa_starved {t, valid}     read (a flow starved within this    set to now (this flow starves:
                           flow's RTT? ``shaper.starves``)     ``shaper.starves``)
=========================  ==================================  ======================================

Pass 1 writes only what does not depend on the room (the epoch, the counts, the reserve, the ACK, the start
phase, the idle bit): those are read-modify-writes of one register with conditions known beforehand, so they
are atomic; the room, the grant and the window are worked out in pass 1 from what it read, and written in
pass 2. Whether that computation fits one pass's 20 stages (§3.7 counts about 28 steps) is the P4's
question, not the twin's: if it does not, it goes on in a pass that touches no register (a recirculation),
which only lengthens ``lag_ns``. Nor does the twin check what one stateful ALU can do: ``flow_state``'s action
here tests the first ACK, the count stamp against the epoch and the idle bit with the checkpoint's result,
more conditions than one ALU takes; the P4 may have to split those bits over two registers.

The other packets take one pass, each register touched once: the client's SYN (``flow_syn``), a SYN-ACK
(install: the roll and the reserve's frame on its link), a FIN or RST (uncount on the flow's link), a closed
flow's ACK (``flow_edge``: its own edge), downstream data (reads ``flow_state``, ``flow_edge``,
``flow_end``; writes ``flow_tail``). One exception: a SYN-ACK that takes a slot whose flow is still counted
rolls its own link's counts in pass 1 and uncounts the displaced flow (on that flow's link, with that link's
epoch) in a second pass, since both touch ``iwa_act``.

What this twin does not cover: the flow tracker (``flows.py``: each register already touched once per
packet, but ``flow_seen`` is 64-bit ns, the 10 s slot age; the TNA program needs a coarser clock there) and
IWA's downstream decision (``iwa.py``: one read-modify-write of ``iwa_unheld``, at the share the link's
active flows leave, ``unheld_shift``: a read of ``iwa_epoch`` and ``iwa_act`` by packets that touch neither
otherwise) with CoDel for what no window holds (``tofino_codel.py``): they run as the v1model's here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import IntFlag
from typing import Any, NamedTuple

from .arith import s32
from .constants import (
    EPOCH_MASK, FLOW_ACKED, FLOW_ANNOUNCED, FLOW_ASKED, FLOW_CLOSED, FLOW_COUNTED, FLOW_EPOCH, FLOW_FRESH, FLOW_IDLE,
    FLOW_HELD, FLOW_PAUSED, FLOW_SCALE_MASK, FLOW_SHAPE, FLOW_SHUT, FLOW_SLOTS, N_LINKS, SYN_SEEN, SYN_WS, WS_MAX,
    TrackFlag, TrafficClass,
)
from .flows import Track, seq_before
from .packet import TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN, Parsed
from .params import ConfigError, IwaParams, PipelineParams, bytes_to_ns, ns_to_bytes
from .tofino_codel import tick_period_bounds as codel_tick_period_bounds
from .shaper import (
    Floor, Grant, LinkShaping, asks, at_floor, bounded, checkpoint, first_window, growth, roll_step, room_of,
    server_idle, shaped, share_shift, short_end, starves, window_terms,
)

U32 = 0xFFFFFFFF
SERIAL_MAX = (1 << 31) - 1  # ns: the farthest apart two 32-bit times may be
TICK_PERIOD_MAX = 100_000_000  # ns: the packet generator's period per link, at most
PASS2_BITS = 96  # the resubmit header Tofino 2 carries (the project's, with RED)
SCALE_SHIFTS = tuple(range(WS_MAX + 1))  # iwa_scale: one row per window-scale shift, each a constant shift


class PassViolation(AssertionError):
    """A register touched twice in one pass: the TNA program could not do it."""


class PassLog:
    """Which registers the current pass touched, and how many passes ran."""

    def __init__(self) -> None:
        self.touched: set[str] = set()
        self.passes = 0

    def begin(self) -> None:
        self.touched = set()
        self.passes += 1

    def touch(self, name: str) -> None:
        if name in self.touched:
            raise PassViolation(f"{name} touched twice in one pass")
        self.touched.add(name)


class Register:
    """A register array whose every access is one RegisterAction: ``read`` or ``rmw`` (the action gets the
    cell, returns (new cell, what it outputs))."""

    def __init__(self, log: PassLog, name: str, size: int, init: Any = 0) -> None:
        self.log, self.name = log, name
        self.cells = [init] * size

    def read(self, i: int) -> Any:
        self.log.touch(self.name)
        return self.cells[i]

    def rmw(self, i: int, action: Callable[[Any], tuple[Any, Any]]) -> Any:
        self.log.touch(self.name)
        self.cells[i], out = action(self.cells[i])
        return out

    def write(self, i: int, value: Any) -> None:
        self.rmw(i, lambda _: (value, None))


class Op(IntFlag):
    """What a second pass does (``Pass2.op``)."""

    EDGE = 1        # flow_edge = max(edge, ack + (field << scale))
    RETRACT = 2     # ... or that edge as it is (the window retracted to one MSS: it moves left)
    MARK = 4        # flow_mark = (the new edge, now)
    END_AT_ACK = 8  # flow_end = the ACK (the floor limit: its data is CoDel's)
    VQ = 16         # iwa_vq = max(vq, now) + vq_ns
    STARVE = 32     # iwa_starved = (now, valid): this flow starves (shaper.starves)
    UNCOUNT = 128   # a SYN-ACK's: uncount the slot's displaced flow (its state in word, its link in field)
    PAUSE = 256     # flow_state |= FLOW_PAUSED (a pause at the floor limit: once an epoch)
    SHUT = 512      # flow_state |= FLOW_SHUT (its window shut: only its server's probe reopens it)
    HELD = 1024     # flow_state |= FLOW_HELD (a probe's answer kept it shut: the next reopens it)
    OPEN = 2048     # flow_state &= ~(FLOW_SHUT | FLOW_HELD) (its window is open)


@dataclass(frozen=True)
class Pass2:
    """The resubmit header a first pass leaves (``op`` .. ``word``), and what the second pass parses again
    from the packet itself (``ack``, ``slot``, ``link``)."""

    op: Op
    field: int = 0   # 16 bits: the window field the ACK leaves with
    scale: int = 0   # 4 bits
    vq_ns: int = 0   # 32 bits
    word: int = 0    # 32 bits: UNCOUNT's displaced state, or MARK's new checkpoint
    ack: int = 0
    slot: int = 0
    link: int = 0

    def fits(self) -> bool:
        return (self.op < 1 << 12 and self.field < 1 << 16 and self.scale < 1 << 4 and 0 <= self.vq_ns <= U32
                and 0 <= self.word <= U32 and 12 + 16 + 4 + 32 + 32 <= PASS2_BITS)


def pass2_state(state: int, op: Op) -> int:
    """flow_state's second-pass action: the pause and the shut window's bits, as pass 1 decided them."""
    if op & Op.OPEN:
        state &= ~(FLOW_SHUT | FLOW_HELD)
    return (state | (FLOW_PAUSED if op & Op.PAUSE else 0) | (FLOW_SHUT if op & Op.SHUT else 0)
            | (FLOW_HELD if op & Op.HELD else 0))


def check_hold(hold_ns: int) -> None:
    """The epoch's age is a 32-bit serial number: two holds and a tick period must stay below 2^31 ns."""
    if 2 * hold_ns + TICK_PERIOD_MAX > SERIAL_MAX:
        raise ConfigError(f"iwa: hold = {hold_ns} ns: two holds and a tick period must stay below 2^31 ns on "
                          "Tofino (32-bit serial time, refmodel/tofino_iwa.py)")


def tick_period_bounds(p: PipelineParams) -> tuple[int, int]:
    """The packet generator's periods (ns) an IWA link allows: TICK_PERIOD_MAX (``check_hold`` counts it), and
    CoDel's, which holds what no window holds on the same link."""
    lo, hi = codel_tick_period_bounds(p)
    return lo, min(hi, TICK_PERIOD_MAX)


def scale_up(nbytes: int, scale: int) -> int:
    """iwa_scale's round-up row: the window field that covers ``nbytes`` (never below it)."""
    return (nbytes + (1 << SCALE_SHIFTS[scale]) - 1) >> SCALE_SHIFTS[scale]


def scale_down(window: int, scale: int) -> int:
    """iwa_scale's other row: a window field in bytes."""
    return window << SCALE_SHIFTS[scale]


def serial_max(a: int, b: int) -> int:
    return a if s32(a - b) >= 0 else b


def _roll_step(epoch_t: int, now: int, hold_ns: int) -> int:
    """``roll_step`` on 32-bit wrap-safe time: 0, the epoch goes on; 1, a new one; 2, both generations over."""
    return roll_step(hold_ns, s32(now - epoch_t))


def uncounted(state: int, epoch: int, cur: int, old_new: tuple[int, int]) -> tuple[int, tuple[int, int]]:
    """``LinkShaping.uncount`` (the v1model's rule) on iwa_act_cur and iwa_act {old, new}: the counts without a
    counted flow."""
    lk = LinkShaping(epoch=epoch, act_cur=cur, act_old=old_new[0], act_new=old_new[1])
    lk.uncount(state)
    return lk.act_cur, (lk.act_old, lk.act_new)


def counted(state: int, epoch: int) -> tuple[int, bool, bool]:
    """``LinkShaping.count`` (the v1model's rule) as flow_state's part of it: the state stamped with this epoch,
    whether the flow is counted now (iwa_act_cur + 1) and whether it is fresh (act_new + 1)."""
    lk = LinkShaping(epoch=epoch)
    state = lk.count(state)
    return state, bool(lk.act_cur), bool(lk.act_new)


class Read(NamedTuple):
    """What an ACK's first pass read and worked out before its grant (``TnaShaper._read``)."""

    shaping: bool  # IWA on, the flow shaped, and the client's own window reaches the edge the server has
    own: int  # the client's own right edge
    mark: int  # the checkpoint's edge
    edge: int
    acked: int  # what the ACK acknowledges
    state: int  # flow_state as pass 1 left it
    branch: str  # "restart", "idle", "retract", "request" or ""
    request: bool  # a request that starts the server's next response (shaper.asks; "request", or with "retract")
    first: bool  # the handshake's ACK
    released: bool  # ... and it releases the frame its SYN-ACK reserved
    nflows: int
    mine_cur: bool  # its frame is in the current generation of the reserve
    res_cur: int
    res_old: int
    span: int
    end: int  # the start phase's end, before an idle server's new start
    vq: int
    starving: bool  # a flow of its link starved within this flow's RTT (iwa_starved)


class Info(NamedTuple):
    """flow_link: a flow's link and the bits of its state that its ACK's other actions need first (SHAPE and
    the scale never change after its SYN-ACK; CLOSED is also in flow_state)."""

    link: int = 0
    shape: bool = False
    scale: int = 0
    closed: bool = False


@dataclass(frozen=True)
class Pending:
    """A second pass waiting to run."""

    due: int
    p2: Pass2
    params: IwaParams


class TnaShaper:
    """``StartShaper``'s interface (``Pipeline.shaper``), its registers behind ``Register``s, every packet cut
    into passes. ``lag_ns``: how long after its first pass a packet's second pass runs."""

    def __init__(self, lag_ns: int = 0) -> None:
        self.lag_ns = lag_ns
        self.log = PassLog()

        def reg(name: str, n: int, init: Any = 0) -> Register:
            return Register(self.log, name, n, init)
        self.flow_syn = reg("flow_syn", FLOW_SLOTS, (0, 0))
        self.flow_srtt = reg("flow_srtt", FLOW_SLOTS)
        self.flow_link = reg("flow_link", FLOW_SLOTS, Info())
        self.flow_state = reg("flow_state", FLOW_SLOTS)
        self.flow_edge = reg("flow_edge", FLOW_SLOTS)
        self.flow_ack = reg("flow_ack", FLOW_SLOTS)
        self.flow_span = reg("flow_span", FLOW_SLOTS, (0, 0))
        self.flow_end = reg("flow_end", FLOW_SLOTS)
        self.flow_mark = reg("flow_mark", FLOW_SLOTS, (0, 0))
        self.flow_tail = reg("flow_tail", FLOW_SLOTS, False)
        self.iwa_epoch = reg("iwa_epoch", N_LINKS, (0, 0))
        self.iwa_act_cur = reg("iwa_act_cur", N_LINKS)
        self.iwa_act = reg("iwa_act", N_LINKS, (0, 0))
        self.iwa_reserve = reg("iwa_reserve", N_LINKS, (0, 0))
        self.iwa_vq = reg("iwa_vq", N_LINKS)
        self.iwa_starved = reg("iwa_starved", N_LINKS, (0, False))
        self.pending: list[Pending] = []
        self.between = 0  # first passes that ran between another packet's two passes

    # ------------------------------------------------------------------ the passes' schedule

    def settle(self, now: int) -> None:
        """Run the second passes due by ``now`` (before the packet arriving at ``now``)."""
        while self.pending and self.pending[0].due <= now:
            pend = self.pending.pop(0)
            self._pass2(pend.params, pend.p2, pend.due)

    def _resubmit(self, p: IwaParams, p2: Pass2, now: int) -> None:
        if self.lag_ns == 0:
            self._pass2(p, p2, now)
        else:
            self.pending.append(Pending(now + self.lag_ns, p2, p))

    def _first(self, now: int) -> None:
        self.settle(now)
        self.between += bool(self.pending)
        self.log.begin()

    def tick(self, p: IwaParams, link: int, now: int) -> None:
        """A packet generator's tick of ``link`` (one pass, every TICK_PERIOD_MAX at most): keeps its 32-bit
        times within 2^31 ns of now without changing what any packet decides."""
        check_hold(p.hold_ns)
        self._first(now)
        now32, over = now & U32, 2 * p.hold_ns + 1

        def epoch(e: tuple[int, int]) -> tuple[tuple[int, int], None]:
            t, n = e
            return ((now32 - over) & U32 if s32(now32 - t) > over else t, n), None
        self.iwa_epoch.rmw(link, epoch)
        self.iwa_vq.rmw(link, lambda v: (serial_max(v, now32), None))
        self.iwa_starved.rmw(link, lambda st: ((st[0], st[1] and s32(now32 - st[0]) <= over), None))

    # ------------------------------------------------------------------ StartShaper's interface

    @property
    def nflows(self) -> int:
        """Link 0's active shaped flows (the control plane's read of iwa_act, not a pass)."""
        return sum(self.iwa_act.cells[0])

    def unheld_shift(self, p: IwaParams, now: int, link: int = 0) -> int:
        """``StartShaper.unheld_shift`` from these registers: the active flows ``iwa_act`` holds as a roll would
        leave them now. IWA's downstream decision is not cut into passes here (see the module's docstring), so
        this read is not a pass either."""
        step = _roll_step(self.iwa_epoch.cells[link][0], now & U32, p.hold_ns)
        active = sum(self.iwa_act.cells[link]) if step == 0 else self.iwa_act_cur.cells[link] if step == 1 else 0
        return share_shift(active + 1)

    def downstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track,
                   link: int = 0) -> Track:
        if pkt.udp_valid or not pkt.tcp_valid or pkt.tcp_payload < 0:
            return t
        self._first(now)
        slot = t.slot
        if t.flags & TrackFlag.NEW_FLOW:
            self._install(p, mtu_ns, pkt, now, iwa_on, t, link)
            return t
        if not t.tracked or pkt.tcp_flags & (TCP_SYN | TCP_ACK) == (TCP_SYN | TCP_ACK):
            return t
        if pkt.tcp_flags & (TCP_FIN | TCP_RST):
            state, _ = self._close(slot)
        else:
            state = self.flow_state.read(slot)
        edge, end = self.flow_edge.read(slot), self.flow_end.read(slot)
        flags, cls = t.flags, t.cls
        if shaped(state):
            flags |= TrackFlag.SHAPED
        elif cls == TrafficClass.TCP_START:
            cls, flags = TrafficClass.TCP_EST, flags & ~TrackFlag.STARTING
        if pkt.tcp_payload > 0 and shaped(state) and state & FLOW_ACKED:
            seq_end = (pkt.seq + pkt.tcp_payload) & U32
            if seq_before(edge, seq_end):
                flags |= TrackFlag.BEYOND
            if cls == TrafficClass.TCP_START and not seq_before(pkt.seq, end):
                cls, flags = TrafficClass.TCP_EST, flags & ~TrackFlag.STARTING
            if not flags & TrackFlag.RTX:  # flow_tail: one write, the edge read before it
                self.flow_tail.write(slot, short_end(pkt.tcp_payload, seq_end, edge, p.mss_bytes))
        return replace(t, cls=cls, flags=flags)

    def upstream(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, queue_tat: int, iwa_on: bool,
                 t: Track, link: int = 0) -> Grant:
        if pkt.udp_valid or not pkt.tcp_valid or pkt.tcp_payload < 0:
            return Grant()
        self._first(now)
        slot, f = t.slot, pkt.tcp_flags
        if f & (TCP_SYN | TCP_ACK) == TCP_SYN:
            rec = (t.hash & 0xFFFFFF00) | SYN_SEEN
            if pkt.ws_shift >= 0:
                rec |= SYN_WS | min(pkt.ws_shift, WS_MAX)
            self.flow_syn.write(slot, (rec, now & U32))
            return Grant(syn=True)
        if not t.tracked:
            return Grant()
        if f & (TCP_FIN | TCP_RST):  # the client closes (or resets) the flow
            _, info = self._close(slot)
        else:
            info = self.flow_link.read(slot)
        if info.closed:  # its windows pass as the client wrote them
            return self._unshaped(pkt, slot, info.scale) if f & (TCP_ACK | TCP_RST) == TCP_ACK else Grant(True)
        if f & (TCP_SYN | TCP_ACK) != TCP_ACK:
            return Grant()
        backlog = min(max(queue_tat - now, 0), U32)  # the TNA queue's q_peek (tofino_queue.py: 32 bits)
        return self._ack(p, mtu_ns, pkt, now, backlog, iwa_on, t, link, info)

    # ------------------------------------------------------------------ one pass each

    def _close(self, slot: int) -> tuple[int, Info]:
        """A FIN or RST: flow_link and flow_state get CLOSED (returns both as written), the flow is uncounted on
        its own link."""
        info = self.flow_link.rmw(slot, lambda i: (i._replace(closed=True),) * 2)
        old = self.flow_state.rmw(slot, lambda s: ((s & ~(FLOW_COUNTED | FLOW_FRESH)) | FLOW_CLOSED, s))
        _, epoch = self.iwa_epoch.read(info.link)
        self._uncount(info.link, old, epoch)
        return (old & ~(FLOW_COUNTED | FLOW_FRESH)) | FLOW_CLOSED, info

    def _uncount(self, link: int, state: int, epoch: int) -> None:
        self.iwa_act_cur.rmw(link, lambda c: (uncounted(state, epoch, c, (0, 0))[0], None))
        self.iwa_act.rmw(link, lambda on: (uncounted(state, epoch, 0, on)[1], None))

    def _unshaped(self, pkt: Parsed, slot: int, scale: int) -> Grant:
        """A closed flow's ACK leaves with the client's own window: the edge the server now has (never left)."""
        own = (pkt.ack + scale_down(pkt.window, scale)) & U32
        edge = self.flow_edge.rmw(slot, lambda e: (serial_max(e, own), e))
        new = serial_max(edge, own)
        return Grant(True, False, TrackFlag.TRACKED, None, new, (new - edge) & U32, 0)

    def _roll(self, p: IwaParams, link: int, now32: int, roll: bool) -> tuple[int, int]:
        """iwa_epoch's action: the link's epoch after a roll (if ``roll``), and the roll's step."""
        def action(e: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
            t, n = e
            step = _roll_step(t, now32, p.hold_ns) if roll else 0
            if step:
                t, n = now32, (n + step) & EPOCH_MASK
            return (t, n), (n, step)
        return self.iwa_epoch.rmw(link, action)

    def _act(self, link: int, step: int, count: bool, fresh: bool) -> tuple[int, int]:
        """iwa_act_cur then iwa_act {old, new}: the roll and this flow's count. Returns (old, new) after both."""
        def cur_action(c: int) -> tuple[int, int]:
            return (0 if step else c) + count, c          # outputs the count before the roll: act_old's
        cur_before = self.iwa_act_cur.rmw(link, cur_action)

        def act_action(on: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
            old, new = on
            if step:
                old, new = (cur_before if step == 1 else 0), 0
            new += fresh
            return (old, new), (old, new)
        return self.iwa_act.rmw(link, act_action)

    def _install(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track,
                 link: int) -> None:
        slot, now32 = t.slot, now & U32
        syn, syn_t = self.flow_syn.read(slot)
        state, server_rtt = FLOW_ANNOUNCED, 0
        if syn & SYN_SEEN and (syn ^ t.hash) & 0xFFFFFF00 == 0:
            state |= FLOW_SHAPE
            server_rtt = (now32 - syn_t) & U32
            if syn & SYN_WS and pkt.ws_shift >= 0:
                state |= syn & FLOW_SCALE_MASK
            if scale_down(1, state & FLOW_SCALE_MASK) > p.mss_bytes:  # shaper.coarse, from iwa_scale's row
                state &= ~FLOW_SHAPE
        info = Info(link, bool(state & FLOW_SHAPE), state & FLOW_SCALE_MASK, False)
        old_link = self.flow_link.rmw(slot, lambda o: (info, o.link))
        if iwa_on:
            epoch, step = self._roll(p, link, now32, True)
            self._act(link, step, False, False)
            self.iwa_reserve.rmw(link, lambda r: (self._reserve_roll(r, step, mtu_ns), None))
            if epoch & 1:
                state |= FLOW_EPOCH
        old = self.flow_state.rmw(slot, lambda s: (state, s))
        self.flow_edge.write(slot, t.isn)
        self.flow_end.write(slot, t.isn)
        self.flow_span.write(slot, (0, 0))
        self.flow_srtt.write(slot, server_rtt)
        self.flow_ack.write(slot, t.isn)
        self.flow_mark.write(slot, (t.isn, now32))
        self.flow_tail.write(slot, False)
        if old & FLOW_COUNTED:  # the slot's previous flow never closed: uncounted on its link, in pass 2
            self._resubmit(p, Pass2(Op.UNCOUNT, field=old_link, word=old, slot=slot, link=old_link), now)

    @staticmethod
    def _reserve_roll(r: tuple[int, int], step: int, add: int) -> tuple[int, int]:
        cur, old = r
        if step:
            cur, old = 0, (cur if step == 1 else 0)
        return min(cur + add, U32), old

    def _ack(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, backlog: int, iwa_on: bool, t: Track,
             link: int, info: Info) -> Grant:
        """Pass 1 of an ACK of a tracked, open flow: shaper.py's ``_ack`` in the same order (its registers'
        actions, ``_read``, then the grant from what they gave, ``_grant``), its writes that depend on the room
        left to the second pass (``_pass2``)."""
        return self._grant(p, mtu_ns, pkt, now, backlog, t, link, info, self._read(p, mtu_ns, pkt, now, iwa_on, t,
                                                                                     link, info))

    def _read(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, iwa_on: bool, t: Track, link: int,
              info: Info) -> Read:
        """Pass 1's register actions, each register once, in shaper.py's order: what the grant needs."""
        slot, now32, scale = t.slot, now & U32, info.scale
        counting = iwa_on and info.shape  # shaper.py rolls the epoch and counts the flow
        lead = self.flow_srtt.read(slot)
        mark, mark_t = self.flow_mark.read(slot)
        tail = self.flow_tail.read(slot)
        edge = self.flow_edge.read(slot)
        last_ack = self.flow_ack.rmw(slot, lambda a: (pkt.ack if seq_before(a, pkt.ack) else a, a))
        acked = (pkt.ack - last_ack) & U32 if seq_before(last_ack, pkt.ack) else 0
        epoch, step = self._roll(p, link, now32, counting)
        own = (pkt.ack + scale_down(pkt.window, scale)) & U32  # the client's own right edge
        shaping = counting and not seq_before(own, edge)

        old_state, state, branch, request = self._state(p, pkt, now32, t, epoch, counting, shaping, acked, lead,
                                                        mark, mark_t, tail)
        first = not old_state & FLOW_ACKED
        _, counted_now, fresh = counted(old_state, epoch) if counting else (0, False, False)
        released = first and bool(old_state & FLOW_ANNOUNCED)

        nflows = 0
        if counting:
            act_old, act_new = self._act(link, step, counted_now, fresh)
            nflows = act_old + act_new
        mine_cur = bool(state & FLOW_EPOCH) == bool(epoch & 1)

        res_cur, res_old = self._reserve(link, step, mtu_ns if iwa_on and released else 0, mine_cur)
        span, rtt, end = self._phase(p, t, first, lead, branch)
        vq = self.iwa_vq.read(link)
        starved_t, starved = self.iwa_starved.read(link)
        starving = starved and s32(now32 - starved_t) < rtt  # a flow of the link starved within its RTT
        return Read(shaping, own, mark, edge, acked, state, branch, request, first, released, nflows,
                    mine_cur, res_cur, res_old, span, end, vq, starving)

    def _state(self, p: IwaParams, pkt: Parsed, now32: int, t: Track, epoch: int, counting: bool, shaping: bool,
               acked: int, lead: int, mark: int, mark_t: int, tail: bool) -> tuple[int, int, str, bool]:
        """flow_state: one action; its conditions (the epoch, the ACK, the checkpoint) are known before it.
        Returns the state it had, the state it has, what the server is doing: "restart" (a new start after its
        window was retracted), "idle" (it left its window unused), "retract" (... and all it sent is
        acknowledged: back to one MSS), "request" (a request starts its next response: ``shaper.asks``) or "",
        and whether the ACK is such a request (also with "idle" or "retract": the window it leaves with joins
        the virtual queue)."""
        def action(s: int) -> tuple[int, tuple[int, int, str, bool]]:
            old, branch, request = s, "", False
            if not s & FLOW_ACKED:  # the handshake's ACK
                s = (s | FLOW_ACKED) & ~FLOW_ANNOUNCED
            if counting:
                s = counted(s, epoch)[0]
            if shaping:
                if acked > 0:  # its server sent more since its window last joined the virtual queue
                    s &= ~FLOW_ASKED
                if not old & FLOW_ACKED:
                    s |= FLOW_ASKED  # a first window joins the virtual queue as it is granted
                elif s & FLOW_IDLE and (pkt.tcp_payload > 0 or acked > 0):
                    branch, s = "restart", s & ~FLOW_IDLE | FLOW_ASKED
                else:
                    request = asks(old, pkt.tcp_payload, acked, pkt.ack, t.seqhi)
                    if server_idle(t.seqhi, mark, mark_t, now32, lead, p.mss_bytes, pkt.ack, acked, tail):
                        branch = "idle"
                        if acked > 0 and not seq_before(pkt.ack, t.seqhi):
                            branch, s = "retract", s | FLOW_IDLE
                    elif request:
                        branch = "request"
                    if request:
                        s = s & ~FLOW_IDLE | FLOW_ASKED
            return s, (old, s, branch, request)
        return self.flow_state.rmw(t.slot, action)

    def _reserve(self, link: int, step: int, release: int, mine_cur: bool) -> tuple[int, int]:
        """iwa_reserve: rolled with the epoch (``step``), and the flow's own frame (``release`` ns) given back
        to the generation it was reserved in. Returns both generations after the roll, before the release (the
        room counts its own frame)."""
        def action(r: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
            cur, old = self._reserve_roll(r, step, 0)
            seen = (cur, old)
            if release:
                if mine_cur:
                    cur = cur - release if cur > release else 0
                else:
                    old = old - release if old > release else 0
            return (cur, old), seen
        return self.iwa_reserve.rmw(link, action)

    def _phase(self, p: IwaParams, t: Track, first: bool, lead: int, branch: str) -> tuple[int, int, int]:
        """flow_span and flow_end: the start phase's length and the RTT at the switch it is from (the client's
        side, SYN-ACK to ACK, and the server's), set at the first ACK, and its end (a new start for an idle
        server). Returns the span, the RTT and the end before an idle server's new start."""
        def span_action(sr: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
            if first:  # the RTT at the switch, and the span from it
                rtt = min(min(t.age, U32) + lead, U32)
                sr = (ns_to_bytes(p, min(rtt + p.target_ns, U32)), rtt)
            return sr, sr
        span, rtt = self.flow_span.rmw(t.slot, span_action)

        def end_action(e: int) -> tuple[int, int]:
            if first:
                e = (t.isn + span) & U32
            seen = e
            if branch in ("idle", "retract", "request"):
                e = (t.seqhi + span) & U32
            return e, seen
        return span, rtt, self.flow_end.rmw(t.slot, end_action)

    def _grant(self, p: IwaParams, mtu_ns: int, pkt: Parsed, now: int, backlog: int, t: Track, link: int, info: Info,
               r: Read) -> Grant:
        """The grant, from what pass 1 read (shaper.py's arithmetic, in its order), and the second pass's header."""
        scale, edge = info.scale, r.edge
        flags = TrackFlag.TRACKED | (TrackFlag.FIRST_ACK if r.first else 0)
        op, window, room, word = Op.EDGE, None, 0, 0
        new_edge = r.own if seq_before(edge, r.own) else edge
        if r.shaping:
            if seq_before(edge, r.end):
                flags |= TrackFlag.STARTING
            granted = max(backlog, s32(r.vq - (now & U32)), 0)
            own_frame = mtu_ns if r.released and (r.res_cur if r.mine_cur else r.res_old) > 0 else 0
            room, deficit = room_of(p, r.res_cur, r.res_old, granted, own_frame)
            grant, base, cutting, starves_now = self._opening(p, pkt, r, room, deficit)
            op |= Op.STARVE if starves_now else 0
            want, floor, floored = bounded((base + grant) & U32, r.own, pkt.ack, p.mss_bytes)
            if floored and cutting and seq_before(pkt.ack, r.end):
                op |= Op.END_AT_ACK  # the floor limit: its data is CoDel's from now
            held = at_floor(p, r.state, first=r.first, cutting=cutting, acked=r.acked, payload=pkt.tcp_payload,
                            granted=granted, queue_ns=backlog, mtu_ns=mtu_ns, span=r.span, nflows=r.nflows,
                            ack=pkt.ack, seqhi=t.seqhi, edge=edge) if floored else \
                Floor(None, r.state & ~(FLOW_SHUT | FLOW_HELD))
            want = want if held.want is None else held.want
            shut = bool(held.state & FLOW_SHUT)
            # flow_state's bits that depend on the room, in pass 2: the pause, and the shut window's
            op |= (Op.PAUSE if held.paused else 0) | (Op.HELD if held.state & FLOW_HELD else 0)
            op |= Op.SHUT if shut else Op.OPEN if r.state & (FLOW_SHUT | FLOW_HELD) else 0
            if r.branch == "retract" or shut:
                want, op = (pkt.ack if shut else floor), op | Op.RETRACT  # the edge moves left: set, not max
            elif seq_before(want, edge):  # never moves the right edge left
                want = edge
            fld = scale_up((want - pkt.ack) & U32, scale)
            new_edge = (pkt.ack + scale_down(fld, scale)) & U32
            window = fld if fld < pkt.window else None
            if r.first or r.branch == "restart" or r.request or not seq_before((t.seqhi + p.mss_bytes) & U32, r.mark):
                op |= Op.MARK  # a new start, or the server reached its checkpoint: the next one, in the word
                word = checkpoint(new_edge, t.seqhi, r.acked, p.mss_bytes, r.first)
        elif r.state & (FLOW_SHUT | FLOW_HELD):  # it leaves with the client's own window: open
            op |= Op.OPEN
        advance = (new_edge - edge) & U32 if seq_before(edge, new_edge) else 0
        charge = advance  # what it opened; at a restart the whole window it now has (shaper.py says why)
        if r.shaping and (r.branch == "restart" or r.request):
            charge = (new_edge - pkt.ack) & U32 if seq_before(pkt.ack, new_edge) else 0
        vq_ns = 0
        if r.shaping and charge:  # served at the link rate from now: the queue its data builds
            op, vq_ns = op | Op.VQ, bytes_to_ns(p, min(charge, U32))
        self._resubmit(p, Pass2(op, pkt.window if window is None else window, scale, vq_ns, word, pkt.ack, t.slot,
                                link), now)
        return Grant(True, False, flags, window, new_edge, advance, room)

    @staticmethod
    def _opening(p: IwaParams, pkt: Parsed, r: Read, room: int, deficit: int) -> tuple[int, int, bool, bool]:
        """shaper.py's ``_opening``: the grant beyond its base before the bounds, whether the queue is above
        target, and whether the flow starves (``shaper.starves``: pass 2 marks its link)."""
        edge, acked = r.edge, r.acked
        if r.first:  # a first window: the room, at most RFC 6928's
            return first_window(p, room), pkt.ack, False, False
        if r.branch:  # a new start (a request), or the server left its window unused: no opening
            return 0, edge, False, False
        if deficit:  # above target: replace what left less the excess
            return acked - min(acked, ns_to_bytes(p, min(deficit, U32))), edge, True, False
        # replacement and growth (shaper.growth)
        starved = starves(*window_terms(p, edge, pkt.ack, r.span, r.nflows, room), acked)
        return acked + growth(p, edge, pkt.ack, r.span, r.nflows, acked, room, r.starving), edge, False, starved

    def _pass2(self, p: IwaParams, h: Pass2, now: int) -> None:
        """A packet's second pass: each register once, the values from the header (and the packet's ACK)."""
        self.log.begin()
        assert h.fits(), h
        now32, slot, link = now & U32, h.slot, h.link
        if h.op & Op.UNCOUNT:
            _, epoch = self.iwa_epoch.read(h.field)
            self._uncount(h.field, h.word, epoch)
            return
        new_edge = (h.ack + scale_down(h.field, h.scale)) & U32
        if h.op & Op.EDGE:
            self.flow_edge.rmw(slot, lambda e: (new_edge if h.op & Op.RETRACT else serial_max(e, new_edge), None))
        if h.op & Op.MARK:
            self.flow_mark.write(slot, (h.word, now32))
        if h.op & Op.END_AT_ACK:
            self.flow_end.write(slot, h.ack)
        if h.op & (Op.PAUSE | Op.SHUT | Op.HELD | Op.OPEN):
            self.flow_state.rmw(slot, lambda st: (pass2_state(st, h.op), None))
        if h.op & Op.VQ:
            self.iwa_vq.rmw(link, lambda v: ((serial_max(v, now32) + h.vq_ns) & U32, None))
        if h.op & Op.STARVE:
            self.iwa_starved.write(link, (now32, True))
