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
"""

from __future__ import annotations

import math

from .params import RedParams
from .queue import Prediction
from .red import U32, Red
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
