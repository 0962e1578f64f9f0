"""RED with ns-2's semantics in byte mode (twin of ``p4src/include/aqm_red.p4``).

ns-2 ``REDQueue::enque`` with ``bytes_ = queue_in_bytes_ = true``,
``gentle_ = false``, ``wait_ = false``, ``setbit_ = false``. The average is
kept as drain time (ns) instead of bytes: every quantity RED compares is a
byte count times the same byte time, so the algorithm is unchanged and no
division is needed. The average and the backlog it follows are 32-bit (4.29 s
of drain time; a longer backlog counts as 4.29 s).

Every product is a sum of logarithms (``arith.log2_q``, ``arith.exp2_q``: tables
a Tofino can hold, the same for every link), and the factors are the link's
constants as logs (``params.RedParams``):

* EWMA: ``avg += (q - avg) * w_q`` as ``Exp2(Log2(|q - avg|) + log2 w_q)``.
* idle: ns-2 pretends ``m = int(ptc * idle)`` empty arrivals and multiplies
  the average by ``(1 - w_q)^m``; a range table on the idle time gives the
  factor's log (``params.red_idle_table``: at most 3 % off inside an entry).
  The link counts as idle when nothing is ahead (``backlog == 0``), since it
  went idle at ``tat``.
* ``count1 = count_bytes / mean_pktsize`` (integer division, as ns-2) is kept
  incrementally as quotient and remainder: each packet adds its length to the
  remainder, which gives up ``mean_pktsize`` at most twice, exact whenever
  frames are at most twice ``mean_pktsize`` (1514 B frames with the seeds' 1500).
* ns-2 drops early when ``u <= p_b / (1 - count1 p_b) * size / mean_pktsize``
  with ``p_b = max_p (avg - th_min) / (th_max - th_min)``. Here, with a 16-bit
  uniform ``u`` (the top half of the packet's random draw) and every factor a
  log: ``log2 p_b = Log2(avg - th_min) + log_slope`` (Q32), the product
  ``count1 p_b = Exp2(Log2(count1) + log2 p_b)`` (1 or more: drop), and the
  test ``Log2(u) + log2 mps + Log2(1 - count1 p_b) <= log2 p_b + Log2(size) + 16``.
  Each side is within about 0.005 of its exact log2 (docs/arithmetic.md), so
  the probability is within about 1 % of ns-2's.

One ``Red`` per access link (``pipeline.LinkState``: the P4 registers indexed by link).
"""

from __future__ import annotations

from .arith import LOG_FRAC, LOG_ONE_BITS, LOG_ZERO, exp2_q, log2_q
from .constants import IDLE_KEY_SHIFT, Reason
from .params import RedParams
from .queue import Prediction
from .verdict import Verdict

U32 = 0xFFFFFFFF


def idle_log(p: RedParams, idle_ns: int) -> int:
    """log2 of the idle decay's factor (Q12) for ``idle_ns``; 0 (no decay) when no entry matches."""
    key = min(idle_ns >> IDLE_KEY_SHIFT, 0xFFFFFFFF)
    for lo, hi, log_factor in p.idle_decay:
        if lo <= key <= hi:
            return log_factor
    return 0  # default action: no decay


def add_bytes(count1: int, rem: int, length: int, mps: int) -> tuple[int, int]:
    """count_bytes as (count_bytes // mps, count_bytes % mps), plus ``length``, without division."""
    rem = (rem + length) & 0xFFFFFFFF
    for _ in range(2):
        if rem >= mps:
            rem -= mps
            count1 = (count1 + 1) & 0xFFFFFFFF
    return count1, rem


def ewma(avg: int, q: int, log_wq: int) -> int:
    """avg moved towards q by w_q of the difference (a 32-bit average and backlog)."""
    if q >= avg:
        return min(U32, avg + exp2_q(log2_q(q - avg) + log_wq))
    return avg - min(avg, exp2_q(log2_q(avg - q) + log_wq))


class Red:
    def __init__(self) -> None:
        self.avg = 0  # ns of backlog, 32-bit
        self.count1 = 0  # count_bytes // mean_pktsize
        self.rem = 0  # count_bytes % mean_pktsize
        self.old = 0

    def count_bytes(self, p: RedParams) -> int:
        return self.count1 * p.mean_pktsize + self.rem

    def decide(self, p: RedParams, q: Prediction, rand: int) -> Verdict:
        return self.judge(p, q, self.average(p, q), rand)

    def average(self, p: RedParams, q: Prediction) -> int:
        """ns-2's per-packet average: the idle decay when nothing is ahead, then the EWMA step; stored."""
        avg = self.avg
        backlog = min(q.backlog_ns, U32)
        if backlog == 0:
            idle = q.now - q.tat if q.now > q.tat else 0
            decay = idle_log(p, idle)
            if decay != 0:
                avg = exp2_q(log2_q(avg) + decay)
        self.avg = ewma(avg, backlog, p.log_wq)
        return self.avg

    def judge(self, p: RedParams, q: Prediction, avg: int, rand: int) -> Verdict:
        """The drop decision for this packet with average ``avg`` (count_bytes and the old flag kept)."""
        backlog = min(q.backlog_ns, U32)
        self.count1, self.rem = add_bytes(self.count1, self.rem, q.length, p.mean_pktsize)

        forced = early = False
        if avg >= p.thmin_ns and backlog > 0:
            if avg >= p.thmax_ns:
                forced = True
            elif self.old == 0:
                # just crossed th_min: count_bytes = this packet's size
                self.count1, self.rem = add_bytes(0, 0, q.length, p.mean_pktsize)
                self.old = 1
            else:
                early = self._drop_early(p, avg, q.length, rand)
        else:
            self.old = 0
        if q.over_limit:
            forced = True
        if forced or early:
            self.count1 = self.rem = 0
        reason = Reason.LIMIT if q.over_limit else Reason.RED_FORCED if forced else Reason.RED_EARLY
        return Verdict(forced or early, reason if (forced or early) else Reason.NONE, avg,
                       (self.count1 << 32) | self.rem)  # count_bytes as quotient and remainder

    def _drop_early(self, p: RedParams, avg: int, size: int, rand: int) -> bool:
        u16 = rand >> 16
        if u16 == 0:
            return True  # u = 0 is below any probability
        if avg == p.thmin_ns:
            return False  # p_b = 0
        log_pb = log2_q(avg - p.thmin_ns) + p.log_slope  # log2 of p_b in Q32
        log_cp = log2_q(self.count1) + log_pb  # LOG_ZERO's sum when count1 = 0
        if log_cp >= LOG_ONE_BITS:
            return True  # count1 * p_b >= 1
        cp = exp2_q(log_cp)
        log_rest = log2_q((1 << 32) - cp) if cp else LOG_ONE_BITS  # log2 of (1 - count1 p_b) in Q32
        return log2_q(u16) + p.log_mps + log_rest <= log_pb + log2_q(size) + (16 << LOG_FRAC)
