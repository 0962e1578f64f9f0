"""RED with its average on the packet generator's ticks: the TNA design's RED (docs/tofino-design.md §3.6),
measured here before it is built.

ns-2's RED (``red.py``, the v1model program's) moves the average on every arriving packet by w_q of the
backlog's distance from it, and decays it by (1 - w_q)^m over an idle period, m the mean-size packets the
link could have sent meanwhile. On a Tofino a data packet cannot do that in one pass: the register must be
read, the step computed from it (log and exp tables, several stages), and written back, and a stateful ALU
touches its register once per pass and cannot multiply or shift the register's value. The design moves the
average to the ticks: each tick of a link (every ``tick_ns``, the packet generator's period) reads the
average and the queue's backlog (``q_tick``'s delay) in its first pass and adds the signed step
``(backlog - avg) >> k`` in its second; data packets only read it.

``tick_shift`` picks ``k`` so that the ticks' time constant ``tick_ns * 2^k`` is ns-2's at the link's full
rate, one step of w_q per mean-size packet time: ``mean_pktsize * 8 / rate / w_q``. At full rate both
averages then move alike, and over an idle period the ticks decay the average towards the empty queue as
ns-2's idle decay does (by the link's packet times, not by arrivals). Below full rate ns-2's average moves
once per arriving packet, more slowly than the ticks'.

Everything else is ``red.py``'s own arithmetic (``Red.judge``: count_bytes, the thresholds, the early-drop
test as sums of logs), so that what this twin changes is the average alone. The probability's tables the
TNA program would need are a separate approximation (§3.6 bounds it at 5.7 %).

``tick_weighted`` is a variant that counts the link's arrivals between ticks and moves the average by as many
of ns-2's steps; ``SecondPassRed`` keeps ns-2's per-packet average in a second pass of every packet.
``tools/red_clock.py`` measures all three against ns-2's (docs/tofino.md, "RED's average on a Tofino").

``TnaRed`` is the whole of RED cut for the TNA program (p4src/tofino/red.p4), the second-pass design the
measurements chose: one step per register action, each register touched once per pass. The first pass
only reads what the previous packet's second pass left (the average, and the *gate*: RED's test for the
next packet, already reduced to one signed word); its second pass moves the average, counts the bytes and
works out the gate again. ``tools/red_clock.py`` measures it against ns-2's as well.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .params import ConfigError, RedParams, red_idle_steps
from .queue import Prediction
from .arith import LOG_FRAC, LOG_ONE_BITS, exp2_q, log2_q
from .constants import Reason
from .red import U32, Red, ewma
from .verdict import Verdict


def tick_shift(w_q: float, rate_bps: float, mean_pktsize: int, tick_ns: int) -> int:
    """k for a tick every ``tick_ns``: 2^k ticks make ns-2's time constant at full rate (rounded in log2)."""
    tau_ns = mean_pktsize * 8 / rate_bps / w_q * 1e9
    return max(0, round(math.log2(tau_ns / tick_ns)))


class TickRed(Red):
    """One link's RED: the average from ``tick``, the decision as ``Red``'s."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals = 0   # since the last tick (a per-link counter: data packets add, the tick takes)

    def tick(self, backlog_ns: int, k: int) -> None:
        """A tick's two passes: avg += (backlog - avg) >> k (signed 32-bit, the shift rounding down)."""
        step = (min(backlog_ns, U32) - self.avg) >> k
        self.avg = min(U32, max(0, self.avg + step))
        self.arrivals = 0

    def tick_weighted(self, backlog_ns: int, w_q: float, idle_arrivals: float) -> None:
        """A tick that moves the average as ns-2's per-packet steps would have, had the backlog stood at
        ``backlog_ns`` for each arrival since the last tick: avg = q + (avg - q)(1 - w_q)^n, n the arrivals
        counted, or, when none came and the queue is empty, ``idle_arrivals`` (ns-2's idle decay: the
        mean-size packets the link could have sent in a tick period)."""
        n = self.arrivals if self.arrivals or backlog_ns else idle_arrivals
        q = min(backlog_ns, U32)
        self.avg = min(U32, max(0, round(q + (self.avg - q) * (1 - w_q) ** n)))
        self.arrivals = 0

    def decide(self, p: RedParams, q: Prediction, rand: int) -> Verdict:
        self.arrivals += 1
        return self.judge(p, q, self.avg, rand)


class SecondPassRed(Red):
    """The average per packet, as ns-2's, in a second pass: the first pass decides with the average as the
    previous packet left it, and the second pass (every packet of the link resubmitted) adds this packet's
    step. The decision misses its own packet's step, w_q of the distance: nothing else changes."""

    def decide(self, p: RedParams, q: Prediction, rand: int) -> Verdict:
        v = self.judge(p, q, self.avg, rand)
        self.average(p, q)
        return v


# The gate's words that are not a threshold. Every threshold the
# arithmetic forms lies strictly between T_BELOW and T_ALWAYS (logs in Q12 are within +-2^25).
T_BELOW = -(1 << 30)       # avg < th_min: no early drop, and the old flag clears
T_ALWAYS = 1 << 30         # count1 * p_b >= 1: every packet of the early test drops
T_FORCED = (1 << 30) + 1   # avg >= th_max: a forced drop


def gate_of(p: RedParams, avg: int, count_bytes: int) -> int:
    """What the next packet's first pass tests, from the average and count_bytes a second pass left.

    ns-2 drops early when Log2(u) + log2 mps + Log2(1 - count1 p_b) <= log2 p_b + Log2(size) + 16 (``Red``),
    u and size being the next packet's: the rest is known now, so the gate is
    T = log2 p_b - Log2(1 - count1 p_b) - log2 mps + 16, and the next packet drops when Log2(u) - Log2(size)
    <= T. count1 is the next packet's, which ns-2 takes after adding that packet's bytes: here it is
    (count_bytes + mps) / mps, the next packet taken as mean-size and the quotient not floored (a log has
    no floor); both only raise count1, by less than 2 for frames up to mps. Log2(1 - count1 p_b) is one
    table on Log2(count1 p_b)'s leading bits (``rest_of``)."""
    if avg < p.thmin_ns:
        return T_BELOW
    if avg >= p.thmax_ns:
        return T_FORCED
    log_pb = log2_q(avg - p.thmin_ns) + p.log_slope   # Log2(0) when avg = th_min: no early drop but u = 0's
    log_cp = log2_q(min(count_bytes + p.mean_pktsize, U32)) - p.log_mps + log_pb
    if log_cp >= LOG_ONE_BITS:
        return T_ALWAYS
    return log_pb - rest_of(log_cp) - p.log_mps + (16 << LOG_FRAC)


def rest_of(log_cp: int) -> int:
    """Log2(1 - count1 p_b) in Q32 from Log2(count1 p_b), as ``Red._drop_early`` forms it (Exp2, then Log2 of
    the complement): a function of log_cp >> 2 alone (Exp2 reads the fraction's 10 leading bits), so the TNA
    program holds it as one table the controller writes."""
    cp = exp2_q(log_cp)
    return log2_q((1 << 32) - cp) if cp else LOG_ONE_BITS


@dataclass(frozen=True)
class TnaRedKnobs:
    """What the TNA program's RED needs beside RedParams (the controller writes both into red_cfg)."""
    log_halvings: int  # Log2 of the idle decay's halvings per ns, Q12 of Q12: Exp2(Log2(idle ns) + this)
    idle_min_ns: int   # shorter idle times do not decay the average (dm packet times)

    def halvings(self, idle_ns: int) -> int:
        """The idle decay's halvings (Q12) after ``idle_ns`` on an empty queue: none below idle_min_ns."""
        return exp2_q(log2_q(idle_ns) + self.log_halvings) if idle_ns >= self.idle_min_ns else 0


def tna_red_knobs(p: RedParams, byte_time_q16: int) -> TnaRedKnobs:
    """ns-2's idle decay multiplies the average by (1 - w_q)^m, m = int(ptc * idle), ptc the link's
    mean-size packets per second: it halves the average m * -log2(1 - w_q) times. The v1model program reads
    the factor from a range table per link whose entries step by dm packets (``params.red_idle_table``:
    m rounded down to a multiple of dm, no decay below dm). Here the halvings, in Q12, are
    Exp2(Log2(idle) + log_halvings), with no decay below dm packet times either: one product as a sum of
    logs (bf-p4c takes no 32-bit range key) and one compare. Between two of the table's entries this
    decays as ns-2 (up to dm packets more than the table, whose factor changes by 3 % per entry).
    A factor this near 1 cannot be applied as a log: Log2's rounding (0.0016) is as large as
    log2(1 - w_q) for w_q = 0.002. So no decay is no lookup.
    From what the data plane holds: w_q as 2^(log_wq / 2^12) (within 0.01 %), the link's rate as its byte
    time."""
    w_q = 2 ** (p.log_wq / (1 << LOG_FRAC))
    if not 0 < w_q < 1:
        raise ConfigError(f"red: w_q = {w_q:g}: the TNA program's idle decay needs 0 < w_q < 1")
    dm, _ = red_idle_steps(w_q)
    q = 1 << LOG_FRAC
    ptc_ns = 65536 / (p.mean_pktsize * byte_time_q16)   # mean-size packets per ns
    return TnaRedKnobs(round(math.log2(ptc_ns * -math.log2(1 - w_q) * q) * q), math.ceil(dm / ptc_ns))


def tna_red_config(p: RedParams, byte_time_q16: int) -> dict[str, int]:
    """red_cfg's action parameters for a link (p4src/tofino/link.p4: set_red; signed ones as they are,
    the controller writes them in two's complement)."""
    k = tna_red_knobs(p, byte_time_q16)
    if k.idle_min_ns >= 1 << 31:
        raise ConfigError(f"red: the idle decay starts after {k.idle_min_ns} ns, beyond 2^31 ns (serial time)")
    return dict(thmin=p.thmin_ns, thmax=p.thmax_ns, mps=p.mean_pktsize, log_wq=p.log_wq, log_slope=p.log_slope,
                cp_offset=-p.log_mps, gate_offset=(16 << LOG_FRAC) - p.log_mps, log_halvings=k.log_halvings,
                idle_min=k.idle_min_ns)


def exp_rows() -> list[tuple[int, int]]:
    """The rows of every RedExp table (p4src/tofino/red.p4): (l >> 2, Exp2(l)) for 0 <= l < 2^17, the v1model's
    Exp2 (which reads no more of l than l >> 2)."""
    return [(k, exp2_q(k << 2)) for k in range(LOG_ONE_BITS >> 2)]


def rest_rows() -> list[tuple[int, int]]:
    """red_rest's rows (p4src/tofino/red.p4): (Log2(count1 p_b) >> 2, rest_of) for 0 <= Log2 < 2^17 (beyond,
    the gate is T_ALWAYS; below 0, the table's default LOG_ONE_BITS)."""
    return [(k, rest_of(k << 2)) for k in range(LOG_ONE_BITS >> 2)]


@dataclass(frozen=True)
class RedPass2:
    """What a RED packet's first pass leaves its second (the resubmit header's RED words)."""
    delta: int      # the average's step: ns-2's idle decay and EWMA for this packet, from the average it read
    reset: bool     # dropped: count_bytes = 0
    cross: bool     # crossed th_min: count_bytes = this frame's length
    length: int


class TnaRed:
    """One link's RED as the TNA program runs it: ``first_pass`` decides, ``second_pass`` updates.

    What differs from ns-2's (``Red``, the v1model program's), each measured by ``tools/red_clock.py``:
    the decision uses the average and count_bytes the previous packet left (its own step and bytes come
    in its second pass), count1 is taken as above (``gate_of``), count_bytes is kept in bytes, and the idle
    decay's halvings are one product of logs (``tna_red_knobs``). A frame longer than
    the whole buffer on an idle link is dropped without a second pass (nothing was committed): RED's state
    misses it. Everything else is ``Red``'s arithmetic, table for table."""

    def __init__(self, knobs: TnaRedKnobs) -> None:
        self.knobs = knobs
        self.avg = 0            # red_avg
        self.count_bytes = 0    # red_bytes
        self.gate = T_BELOW     # red_gate
        self.old = 0            # red_old

    def first_pass(self, p: RedParams, q: Prediction, rand: int) -> tuple[Verdict, RedPass2]:
        avg = self.avg                                   # red_avg: read
        backlog = min(q.backlog_ns, U32)
        idle = q.now - q.tat if q.now > q.tat else 0
        if backlog == 0 and idle >= self.knobs.idle_min_ns:
            # ns-2's idle decay, then its step towards the empty queue (w_q of the decayed average), both
            # from the decayed average's log: Log2(avg) less the halvings (at least dm packets' worth)
            l_decayed = log2_q(avg) - self.knobs.halvings(idle)
            new = max(0, exp2_q(l_decayed) - exp2_q(l_decayed + p.log_wq))
        else:
            new = ewma(avg, backlog, p.log_wq)
        gate = self.gate                                 # red_gate: read
        above = gate != T_BELOW and backlog > 0
        forced = above and gate == T_FORCED
        old, self.old = self.old, (self.old if forced else 1) if above else 0   # red_old: swap
        early = cross = False
        if above and not forced:
            if old == 0:
                cross = True
            else:
                u16 = rand >> 16
                early = u16 == 0 or log2_q(u16) - log2_q(q.length) <= gate
        forced = forced or q.over_limit
        drop = forced or early
        reason = Reason.LIMIT if q.over_limit else Reason.RED_FORCED if forced else Reason.RED_EARLY
        return (Verdict(drop, reason if drop else Reason.NONE, avg, self.count_bytes),
                RedPass2(new - avg, drop, cross and not drop, q.length))

    def second_pass(self, p: RedParams, r: RedPass2) -> None:
        self.avg = min(U32, max(0, self.avg + r.delta))                          # red_avg: add, saturating
        if r.reset or r.cross:                                                   # red_bytes
            self.count_bytes = r.length if r.cross else 0
        else:
            self.count_bytes = min(U32, self.count_bytes + r.length)
        self.gate = gate_of(p, self.avg, self.count_bytes)                       # red_gate: write

    def decide(self, p: RedParams, q: Prediction, rand: int) -> Verdict:
        """Both passes, the second right after the first."""
        v, r = self.first_pass(p, q, rand)
        if not (q.over_limit and q.backlog_ns == 0):
            self.second_pass(p, r)
        return v
