"""RED with ns-2's semantics in byte mode (twin of ``p4src/include/aqm_red.p4``).

ns-2 ``REDQueue::enque`` with ``bytes_ = queue_in_bytes_ = true``,
``gentle_ = false``, ``wait_ = false``, ``setbit_ = false``. The average is
kept as drain time (ns) instead of bytes: every quantity RED compares is a
byte count times the same byte time, so the algorithm is unchanged and no
division is needed. Integer forms:

* EWMA: ``avg += (q - avg) * w`` with ``w`` in Q24 (error of w < 3e-8).
* idle: ns-2 pretends ``m = int(ptc * idle)`` empty arrivals and multiplies
  the average by ``(1 - w)^m``; the factor comes from a range table on the
  idle time built by ``params.red_idle_table`` (at most 3 % off inside an
  entry). The link counts as idle when nothing is ahead (``backlog == 0``),
  since it went idle at ``tat``.
* ``p_b = max_p (avg - th_min) / (th_max - th_min)`` in Q32;
  ``count1 = count_bytes / mean_pktsize`` (integer division, as ns-2) is kept
  incrementally as quotient and remainder (the P4 target cannot divide at run
  time): each packet adds its length to the remainder, which gives up
  ``mean_pktsize`` at most twice, exact whenever frames are at most twice
  ``mean_pktsize`` (1514 B frames with the seeds' 1500);
  ns-2 drops when ``u <= p_b / (1 - count1 p_b) * size / mean_pktsize``; here
  with a 16-bit uniform ``u`` (the top half of the packet's random draw), as
  the overflow-free product ``u * mps * (1 - count1 p_b) <= p_b * size``.

One ``Red`` per access link (``pipeline.LinkState``: the P4 registers indexed by link).
"""

from __future__ import annotations

from .constants import IDLE_KEY_SHIFT, PROB_FRAC, RED_SLOPE_FRAC, RED_W_FRAC, Reason
from .params import RedParams
from .queue import Prediction
from .verdict import Verdict

ONE_Q32 = 1 << PROB_FRAC


def idle_factor(p: RedParams, idle_ns: int) -> int:
    key = min(idle_ns >> IDLE_KEY_SHIFT, 0xFFFFFFFF)
    for lo, hi, factor in p.idle_decay:
        if lo <= key <= hi:
            return factor
    return 1 << RED_W_FRAC  # default action: no decay


def add_bytes(count1: int, rem: int, length: int, mps: int) -> tuple[int, int]:
    """count_bytes as (count_bytes // mps, count_bytes % mps), plus ``length``, without division."""
    rem = (rem + length) & 0xFFFFFFFF
    for _ in range(2):
        if rem >= mps:
            rem -= mps
            count1 = (count1 + 1) & 0xFFFFFFFF
    return count1, rem


class Red:
    def __init__(self) -> None:
        self.avg = 0  # ns of backlog
        self.count1 = 0  # count_bytes // mean_pktsize
        self.rem = 0  # count_bytes % mean_pktsize
        self.old = 0

    def count_bytes(self, p: RedParams) -> int:
        return self.count1 * p.mean_pktsize + self.rem

    def decide(self, p: RedParams, q: Prediction, rand: int) -> Verdict:
        avg = self.avg
        if q.backlog_ns == 0:
            idle = q.now - q.tat if q.now > q.tat else 0
            avg = (avg * idle_factor(p, idle)) >> RED_W_FRAC
        if q.backlog_ns >= avg:
            avg = avg + (((q.backlog_ns - avg) * p.wq_q24) >> RED_W_FRAC)
        else:
            avg = avg - (((avg - q.backlog_ns) * p.wq_q24) >> RED_W_FRAC)
        self.avg = avg
        self.count1, self.rem = add_bytes(self.count1, self.rem, q.length, p.mean_pktsize)

        forced = early = False
        if avg >= p.thmin_ns and q.backlog_ns > 0:
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
        return Verdict(forced or early, reason if (forced or early) else Reason.NONE, avg, self.count_bytes(p))

    def _drop_early(self, p: RedParams, avg: int, size: int, rand: int) -> bool:
        pb = ((avg - p.thmin_ns) * p.slope_q56) >> (RED_SLOPE_FRAC - PROB_FRAC)
        cp = self.count1 * pb
        if cp >= ONE_Q32:
            return True
        u16 = rand >> 16
        return u16 * p.mean_pktsize * (ONE_Q32 - cp) <= (pb * size) << 16
