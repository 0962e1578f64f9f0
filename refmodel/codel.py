"""CoDel, RFC 8289 (twin of ``p4src/include/aqm_codel.p4``).

CoDel decides at dequeue. The queue model knows at arrival when each packet
will be dequeued (``release``) and how long it will have waited
(``sojourn``), and FIFO order makes dequeue times monotonic, so running the
RFC's state machine once per packet at its release time, in arrival order,
is the dequeue-time algorithm. Dropping at arrival frees exactly the link
time that dropping at the head would. Two documented deviations:

* the RFC's "bytes left in the queue <= MTU" guard uses the backlog ahead of
  the packet at its arrival (what is behind it at dequeue is not known yet);
* ``interval / sqrt(count)`` comes from a range table (``params.codel_law_table``,
  within +-1 %); counts beyond the table use its last value.

Its times (t, first_above, drop_next, the interval and the steps) are in units of
2^CODEL_TIME_SHIFT ns (16 ns), t = (now >> 4) + (sojourn >> 4): the TNA program keeps them
in 32 bits, and 2^31 such units (34 s) hold 16 intervals of look-back beside any buffer a
link has (``tofino_codel.py``). The queue's tests (sojourn, backlog) stay in ns.

One ``Codel`` per access link (``pipeline.LinkState``: the P4 registers indexed by link).
"""

from __future__ import annotations

from .constants import CODEL_TIME_SHIFT, Reason
from .params import CodelParams, QueueParams
from .queue import Prediction
from .verdict import Verdict


def control_law_step(p: CodelParams, count: int) -> int:
    """interval / sqrt(count) in ns, from the control law's ranges."""
    for lo, hi, step in p.control_law:
        if lo <= count <= hi:
            return step
    return p.control_law[-1][2] if p.control_law else p.interval_ns


def coarse(ns: int) -> int:
    """ns in CoDel's time unit (floored)."""
    return ns >> CODEL_TIME_SHIFT


def judged_at(q: Prediction) -> int:
    """t: the packet's predicted dequeue time in CoDel's unit, (now >> 4) + (sojourn >> 4)."""
    return coarse(q.now) + coarse(q.sojourn_ns)


class Codel:
    def __init__(self) -> None:
        self.first_above = 0
        self.dropping = False
        self.drop_next = 0
        self.count = 0
        self.lastcount = 0

    def decide(self, p: CodelParams, qp: QueueParams, q: Prediction) -> Verdict:
        if q.over_limit:  # never enters the queue, so CoDel never sees it
            return Verdict(True, Reason.LIMIT, self._s1(), self._s2())
        t = judged_at(q)
        interval = coarse(p.interval_ns)
        if q.sojourn_ns < p.target_ns or q.backlog_ns <= qp.mtu_ns:
            self.first_above = 0
            ok_to_drop = False
        elif self.first_above == 0:
            self.first_above = t + interval
            ok_to_drop = False
        else:
            ok_to_drop = t >= self.first_above

        drop = False
        if self.dropping:
            if not ok_to_drop:
                self.dropping = False
            elif t >= self.drop_next:
                drop = True
                self.count = (self.count + 1) & 0xFFFFFFFF
                self.drop_next = self.drop_next + coarse(control_law_step(p, self.count))
        elif ok_to_drop:
            drop = True
            self.dropping = True
            delta = (self.count - self.lastcount) & 0xFFFFFFFF
            recent = t < self.drop_next + 16 * interval
            self.count = delta if (1 < delta < 0x80000000 and recent) else 1
            self.drop_next = t + coarse(control_law_step(p, self.count))
            self.lastcount = self.count
        return Verdict(drop, Reason.CODEL if drop else Reason.NONE, self._s1(), self._s2())

    def observe(self, p: CodelParams, qp: QueueParams, q: Prediction) -> None:
        """An admitted packet CoDel may not drop (under IWA: anything but established flows' data) still
        dequeues through the same queue: below target it ends the interval and the dropping state, as the
        RFC's state machine does for every packet. Without it, state from a standing queue long gone
        (``first_above``, ``drop_next``) drops the next established segment at once, and a burst of them."""
        if q.sojourn_ns < p.target_ns or q.backlog_ns <= qp.mtu_ns:
            self.first_above = 0
            self.dropping = False

    def _s2(self) -> int:
        """The record's s2: drop_next in ns (to 16 ns)."""
        return (self.drop_next << CODEL_TIME_SHIFT) & 0xFFFFFFFFFFFFFFFF

    def _s1(self) -> int:
        return (int(self.dropping) << 32) | self.count
