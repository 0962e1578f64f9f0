"""The access link's queue as the TNA program runs it (twin of ``p4src/tofino/queue.p4``).

``queue.py`` is the v1model program's queue: tat read, a decision, tat' = max(tat, now) + tx written
only for an admitted frame. A Tofino's stateful ALU adds a packet word only to the register's own
value and touches the register once per pass, so queue.p4 commits first and corrects in a second
pass: one method here per RegisterAction (named as there), ``first_pass`` and ``second_pass`` as
QueuePredictTna decides, on 32-bit serial times.

* ``q_admit``: a busy link's tat' = tat + tx; an idle link's is ``now`` (the second pass adds tx);
* ``q_add`` / ``q_refund``: the second pass adds an idle link's tx, or takes a dropped frame's back;
* ``q_tick``: the packet generator pulls an idle link's tat up to now (so that it never falls 2^31
  ns behind) and returns the queue's delay.

A packet limit (pfifo: ``queue.py``'s ring of release times, RING_SIZE cells per link) is not in
queue.p4: ``link_limit_ns`` gives the byte limit the controller writes instead, the one that decides as
the packet limit while every frame is full-size (docs/tofino-design.md §3.3).

When the second pass follows the first at once (as here, by default, and on BMv2), the decisions,
backlog and sojourn are ``queue.py``'s for the bfifo limit (``tests/test_tofino_queue.py``). On a
Tofino another packet of the link may come between the passes; queue.p4 states what that costs, and
the test shows it with the numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

from .arith import s32
from .constants import Decision, Reason
from .params import ConfigError, PipelineParams, QueueParams
from .queue import tx_ns

MASK = 0xFFFFFFFF
NO_LIMIT_NS = (1 << 31) - 1  # a link without a byte limit (serial time's largest): the controller writes it
MTU_FRAME = 1514  # the full-size frame a packet limit is counted in
# The packet generator's period per link, at most (ns): an idle link's tat, pulled up to now by each tick, must
# not fall 2^31 ns behind the clock before the next (a second's margin below 2.1 s).
TICK_PERIOD_MAX = 1_000_000_000
PASS2_ADD = 1  # types.p4's pass2_h.op flags
PASS2_REFUND = 2


def tick_period_bounds(p: PipelineParams) -> tuple[int, int]:
    """The packet generator's periods (ns, least and most) the queue of a link with these parameters allows,
    whatever its AQM (controller/pktgen.py intersects them with the AQM's, ``AqmSpec.tofino_ticks``)."""
    return 1, TICK_PERIOD_MAX


def link_limit_ns(q: QueueParams, mtu_frame: int = MTU_FRAME) -> int:
    """link_cfg's limit_ns for this buffer: its byte limit, NO_LIMIT_NS for none, and for a packet limit L
    the byte limit that decides as it does while every frame is full-size.

    pfifo drops a frame when the L-th frame admitted before it has not left the queue: its release (tat'
    minus the bucket: the frame in the tbf's bucket is no longer queued) is after now. In a busy period of
    full frames of ``tx`` each, that release is tat - (L - 1) tx - bucket, so pfifo drops exactly when
    busy = tat - now + tx > L tx + bucket, queue.p4's test with limit_ns = L tx + bucket. Smaller frames
    count as whole packets in pfifo and only by their bytes here, so this limit then admits more (each
    queued frame of s bytes leaves room for 1514 - s more): tools/pfifo_bytes.py measures it."""
    if q.limit_pkts:
        tx = tx_ns(q.byte_time_q16, mtu_frame)
        assert tx is not None
        limit = q.limit_pkts * tx + q.bucket_ns
    else:
        limit = q.limit_ns or NO_LIMIT_NS
    if limit > NO_LIMIT_NS:
        raise ConfigError(f"buffer: {limit} ns to drain (limit and bucket) is beyond serial time's 2^31 ns")
    return limit


@dataclass(frozen=True)
class Pass1:
    """What a frame's first pass decided: the record's numbers and the second pass it asks for."""
    decision: Decision
    reason: Reason
    backlog_ns: int
    sojourn_ns: int
    pass2: int  # PASS2_ADD, PASS2_REFUND or 0 (none)


class TnaQueue:
    """One link's ``q_tat`` register (time_t: the low 32 bits of ns) and its four actions."""

    def __init__(self) -> None:
        self.tat = 0

    def q_admit(self, now: int, tx: int) -> int:
        if s32(self.tat - now) > 0:
            self.tat = (self.tat + tx) & MASK
        else:
            self.tat = now & MASK
        return self.tat

    def q_add(self, tx: int) -> None:
        self.tat = (self.tat + tx) & MASK

    def q_refund(self, tx: int) -> None:
        self.tat = (self.tat - tx) & MASK

    def q_tick(self, now: int) -> int:
        if s32(self.tat - now) < 0:
            self.tat = now & MASK
        return s32(self.tat - now)

    def first_pass(self, now: int, tx: int, bucket_ns: int, limit_ns: int) -> Pass1:
        """q_admit, then QueuePredictTna's arithmetic: busy = tat' - now (an idle link's: tx), backlog,
        sojourn beyond the bucket, and the buffer's tail drop (busy over the limit)."""
        busy = s32(self.q_admit(now, tx) - now)
        idle = busy == 0
        if idle:
            busy = tx
        backlog, sojourn = busy - tx, max(busy - bucket_ns, 0)
        if limit_ns - busy < 0:  # q_short: it does not fit
            # an idle link's time was never added (nothing to refund): dropped at once
            return Pass1(Decision.DROP, Reason.LIMIT, backlog, sojourn, 0 if idle else PASS2_REFUND)
        return Pass1(Decision.PASS, Reason.NONE, backlog, sojourn, PASS2_ADD if idle else 0)

    def second_pass(self, op: int, tx: int) -> None:
        if op & PASS2_ADD:
            self.q_add(tx)
        elif op & PASS2_REFUND:
            self.q_refund(tx)
