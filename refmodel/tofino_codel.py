"""CoDel as the TNA program runs it (twin of ``p4src/tofino/codel.p4``).

``codel.py`` is RFC 8289's state machine as the v1model program runs it: five registers read,
decided on, written. A Tofino's stateful ALU touches a register once per pass with a few
conditions, so codel.p4 cuts the machine into such steps, on 32-bit serial times. This module
is those steps, one method per RegisterAction (named as in codel.p4) and one function per
stage of arithmetic, so that ``tests/test_tofino_codel.py`` can show, packet for packet, that
they make ``codel.py``'s decisions on the same queue.

What makes the cut possible:

* ``dropping`` after a judged packet always equals that packet's ``ok_to_drop``: a register
  of its own, set or cleared by ok, returning what it was;
* ``codel_lc`` keeps count - lastcount (0 after an entry, +1 per continuing drop), so an
  entry's new count needs no difference of two registers;
* the control law (a table) runs in the drop's second pass (the resubmission that takes the
  frame's time back from the queue); meanwhile ``codel_dn`` is PENDING;
* times are 32-bit, in codel.py's 16 ns units, and compared serially: ticks pull a stale
  ``first_above`` or ``drop_next`` up (``tick``), so no stored time falls 2^31 units behind.

The second pass follows the first at once here, as in BMv2; on a Tofino a packet of the
same link could come between them (codel.p4 says what then differs).
"""

from __future__ import annotations

from dataclasses import dataclass

from .arith import s32
from .codel import coarse, control_law_step
from .params import CodelParams, ConfigError, PipelineParams

MASK = 0xFFFFFFFF
PENDING = 0x80000000  # codel_dn.count: a drop awaits its second pass
FRESH = 0x40000000  # ... and this packet is that drop (in what dn_* return)
NOT_RECENT = 0x20000000  # an entry long after the last drop: count 1
FLAGS = PENDING | FRESH | NOT_RECENT
COUNT_MAX = 0xFFFF  # pass2_h.count: 16 bits
TICK_PERIOD_MAX = 1_000_000_000  # the packet generator's period per link, at most (ns)
SERIAL_MAX = (1 << 31) - 1  # the farthest apart two serial times may be (CoDel's 16 ns units: 34 s)


@dataclass(frozen=True)
class CodelKnobs:
    """codel_cfg's action data for one link (p4src/tofino/types.p4: codel_cfg_t): CoDel's target as a
    bound on the queue's busy time (ns), so that no stage waits for the sojourn, and its interval in
    CoDel's 16 ns units (codel.py: coarse)."""

    below_busy: int  # target + bucket - 1 (ns): below target while busy <= this
    fa_offset: int  # interval: first_above = t + interval
    recent_offset: int  # -16 intervals: "recent" looks back to t - 16 intervals
    law: int  # the control law's profile


def codel_knobs(p: CodelParams, bucket_ns: int, limit_ns: int, law: int) -> CodelKnobs:
    """The knobs of a link with this bucket and buffer (``limit_ns``). Its stored times span from 16
    intervals and a tick period before now (ticks keep older ones there) to the buffer and an interval
    after it: 2^31 of CoDel's units must hold that."""
    interval = coarse(p.interval_ns)
    span = 17 * interval + coarse(bucket_ns + limit_ns + TICK_PERIOD_MAX)
    if span > SERIAL_MAX:
        raise ConfigError(f"codel: 17 intervals, the buffer and a tick period ({span << 4} ns) must stay under "
                          "2^35 ns on Tofino (serial time in 16 ns units, p4src/tofino/codel.p4): a shorter "
                          "interval")
    return CodelKnobs(p.target_ns + bucket_ns - 1, interval, -16 * interval, law)


def tick_period_bounds(p: PipelineParams) -> tuple[int, int]:
    """The packet generator's periods (ns) a CoDel link allows: ``codel_knobs`` counts a tick period of up to
    TICK_PERIOD_MAX into the span of its serial times."""
    return 1, TICK_PERIOD_MAX


@dataclass(frozen=True)
class Pass2:
    """What a CoDel drop's first pass leaves for its second (p4src/tofino/types.p4: pass2_h)."""

    enter: bool  # PASS2_CODEL_ENTER, else PASS2_CODEL_STEP
    count: int  # saturated to 16 bits: the control law's key


class TnaCodel:
    """One link's four registers: codel_fa, codel_drop, codel_dn {drop_next, count | flags}, codel_lc."""

    def __init__(self) -> None:
        self.fa = 0
        self.dropping = 0
        self.drop_next = 0
        self.count = 0
        self.since = 0  # count - lastcount

    # --- codel_fa
    def fa_clear(self) -> int:
        self.fa = 0
        return 0

    def fa_check(self, tfa: int, t: int) -> int:
        if self.fa == 0:
            self.fa = tfa
            return 0
        return 1 if s32(self.fa - t) <= 0 else 0

    def fa_tick(self, back: int) -> None:
        if self.fa != 0 and s32(self.fa - back) < 0:
            self.fa = back

    # --- codel_drop
    def drop_set(self) -> int:
        was, self.dropping = self.dropping, 1
        return was

    def drop_clear(self) -> None:
        self.dropping = 0

    # --- codel_dn
    def dn_continue(self, t: int) -> int:
        if s32(self.count) >= 0 and s32(self.drop_next - t) <= 0:
            self.count = (self.count + (PENDING | FRESH | 1)) & MASK
        return self.count

    def dn_enter(self, t: int, t16: int) -> int:
        self.count |= PENDING | FRESH if s32(self.drop_next - t16) > 0 else FLAGS
        self.drop_next = t
        return self.count

    def dn_pass2(self, step: int, count: int) -> None:
        self.drop_next = (self.drop_next + step) & MASK
        self.count = count

    def dn_tick(self, back: int) -> None:
        if s32(self.drop_next - back) < 0:
            self.drop_next = back

    # --- codel_lc
    def lc_inc(self) -> None:
        self.since = (self.since + 1) & MASK

    def lc_read(self) -> int:
        return self.since

    def lc_zero(self) -> None:
        self.since = 0

    # --- a packet
    def first_pass(self, k: CodelKnobs, tat: int, now: int, tx: int, mtu_ns: int, bucket_ns: int) -> Pass2 | None:
        """A frame that fits the buffer, judged: ``tat`` is what q_admit returned (tat', or now when the
        link was idle, 32 bits), ``now`` the switch's clock (ns, its 48 bits). Returns the second pass of
        a drop, or None."""
        now32, now_c = now & MASK, coarse(now) & MASK
        busy = s32(tat - now32)
        limit = max(s32(tx + mtu_ns), k.below_busy)
        over = max(s32(busy - limit), 0)
        sojourn = coarse(s32(tat - (now32 + bucket_ns)))  # (an arithmetic shift, as int<32> >> 4)
        t = (now_c + sojourn) & MASK
        tfa = (t + k.fa_offset) & MASK
        t16 = (t + k.recent_offset) & MASK
        ok = self.fa_clear() if over == 0 else self.fa_check(tfa, t)
        if not ok:
            self.drop_clear()
            return None
        if self.drop_set():
            r = self.dn_continue(t)
            if not r & FRESH:
                return None
            self.lc_inc()
            return Pass2(False, min(r & ~FLAGS, COUNT_MAX))
        r = self.dn_enter(t, t16)
        since = self.lc_read()
        count = max(since, 1) if not r & NOT_RECENT else 1
        return Pass2(True, min(count, COUNT_MAX))

    def second_pass(self, p: CodelParams, p2: Pass2) -> None:
        self.dn_pass2(coarse(control_law_step(p, p2.count)), p2.count)
        if p2.enter:
            self.lc_zero()

    def tick(self, k: CodelKnobs, now: int) -> None:
        """A packet-generator tick for the link (``now`` the switch's clock, ns)."""
        back = (coarse(now) + k.recent_offset) & MASK
        self.fa_tick(back | 1)  # never 0: first_above 0 means "none"
        self.dn_tick(back)
