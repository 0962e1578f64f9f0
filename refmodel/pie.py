"""PIE, RFC 8033 core (twin of ``p4src/include/aqm_pie.p4``).

The drop probability ``p`` (Q32) is updated every ``tupdate`` from the queue
delay, which the model knows exactly (the backlog's drain time, the RFC's
timestamp variant). Updates run on the first packet at least ``tupdate``
after the previous one (a quiet queue gets one update when traffic resumes,
not one per elapsed period). Scaling of alpha/beta by the size of ``p``, the
2 % cap above p = 10 %, the 1/64 decay when the delay stays zero and the
burst allowance are the RFC's; the +2 % step above 250 ms of delay is Linux
``sch_pie``'s. Derandomisation and ECN-by-probability are not implemented.
alpha * dq and beta * dq_old are computed as a Tofino can (``arith.mul``: the
delay difference's 7 leading bits times the constant, from a table): each term
is rounded towards zero by less than 1/64 of it; |dq| saturates at 2^32 - 1 ns.
State is 32-bit, as a Tofino register holds it: ``p`` at most P_MAX = 1 - 2^-32
(the drop test ``rand < p`` then spares one draw in 2^32), the queue delay and
``qdelay_old`` saturated at 2^32 - 1 ns; ``last_update`` is a time, 64-bit
until the programs' time base is (docs/arithmetic.md).
One ``Pie`` per access link (``pipeline.LinkState``: the P4 registers indexed by link).
"""

from __future__ import annotations

from . import arith
from .constants import PROB_FRAC, Reason
from .params import PieParams, QueueParams
from .queue import Prediction
from .verdict import Verdict

P_MAX = (1 << PROB_FRAC) - 1  # p's largest value: 1 - 2^-32 (a 32-bit register)
TWO_PERCENT = 85_899_346  # 0.02 in Q32
TENTH = 429_496_730  # 0.1
FIFTH = 858_993_459  # 0.2
DELAY_250MS = 250_000_000

# (p below this, shift alpha/beta right by): RFC 8033 section 4.2
SCALE_STEPS = ((4_295, 11), (42_950, 9), (429_497, 7), (4_294_967, 5), (42_949_673, 3), (TENTH, 1))


U32 = (1 << 32) - 1


def term(d: int, k: int) -> int:
    """k * d as p4src/include/aqm_pie.p4 computes it: the product of |d|'s leading bits, with d's sign."""
    t = arith.mul(min(abs(d), U32), k)
    return -t if d < 0 else t


def scale_shift(p: int) -> int:
    for bound, shift in SCALE_STEPS:
        if p < bound:
            return shift
    return 0


class Pie:
    def __init__(self) -> None:
        self.p = 0
        self.qdelay_old = 0
        self.burst_used = 0  # burst allowance spent; the allowance starts full (RFC: MAX_BURST)
        self.last_update = 0

    def burst_left(self, pp: PieParams) -> int:
        return pp.max_burst_ns - self.burst_used if self.burst_used < pp.max_burst_ns else 0

    def decide(self, pp: PieParams, qp: QueueParams, q: Prediction, rand: int) -> Verdict:
        qdelay = min(q.backlog_ns, U32)
        if q.now - self.last_update >= pp.tupdate_ns:
            self._update(pp, qdelay)
            self.last_update = q.now
        burst = self.burst_left(pp)
        if q.over_limit:
            return Verdict(True, Reason.LIMIT, self.p, burst)
        if burst > 0:
            return Verdict(False, Reason.PIE_BURST, self.p, burst)
        if (self.qdelay_old < pp.target_ns // 2 and self.p < FIFTH) or qdelay < 2 * qp.mtu_ns:
            return Verdict(False, Reason.NONE, self.p, burst)
        drop = rand < self.p
        return Verdict(drop, Reason.PIE if drop else Reason.NONE, self.p, burst)

    def _update(self, pp: PieParams, qdelay: int) -> None:
        delta = (term(qdelay - pp.target_ns, pp.alpha_q48) + term(qdelay - self.qdelay_old, pp.beta_q48)) >> 16
        delta >>= scale_shift(self.p)  # arithmetic shift, as on P4 int<64>
        if self.p >= TENTH and delta > TWO_PERCENT:
            delta = TWO_PERCENT
        if qdelay > DELAY_250MS:
            delta += TWO_PERCENT
        p = min(max(self.p + delta, 0), P_MAX)
        if qdelay == 0 and self.qdelay_old == 0:
            p -= p >> 6
        if self.burst_used < pp.max_burst_ns:
            self.burst_used += pp.tupdate_ns
        if p == 0 and qdelay < pp.target_ns // 2 and self.qdelay_old < pp.target_ns // 2:
            self.burst_used = 0
        self.qdelay_old = qdelay
        self.p = p
