"""The byte-accurate bottleneck queue (twin of ``p4src/include/queue_model.p4``).

The queue is not stored packet by packet: one number, ``tat``, is the time
the link will have sent everything admitted so far at rate R (the "theoretical
arrival time" of GCRA). For a frame of L bytes arriving at ``now``:

    tx       = L * byte_time                      (serialisation at R)
    backlog  = max(0, tat - now)                  (drain time of what is ahead)
    tat'     = max(tat, now) + tx
    release  = max(now, tat' - bucket)            (when the drain shaper lets it go)
    sojourn  = release - now

With ``bucket = 0`` the release is the instant its last bit leaves a pure-rate
link. With ``bucket = B`` it is exactly when a token bucket of depth B bytes
at rate R releases the frame: the lab's drain (the access link's delay line,
``controller/shaper.py``) releases each frame by this very formula, which is
what really delays packets here, so prediction and reality agree.

Buffer limits follow Linux: in packets like ``pfifo`` (drop when ``limit``
packets are still queued), in bytes like ``bfifo`` (drop when the backlog plus
this frame would exceed the limit). The packet count comes from a ring of the
release times of the last admitted packets: the queue holds at least N packets
exactly when the N-th most recently admitted one has not been released yet.

The transmit time is what a Tofino can compute (``arith.tx_split``): two
table lookups per rate class, ``hi[L >> 6] + lo[L & 63]``, each floored, so tx
is ``L * byte_time`` rounded down or one ns less. A frame longer than the
tables (``arith.MAX_FRAME``) cannot be timed: it is over the limit.

One ``QueueModel`` per access link (``pipeline.LinkState``): in P4 the
registers are indexed by the link, the ring in a slice of ``RING_SIZE`` per link.
"""

from __future__ import annotations

from dataclasses import dataclass

from functools import lru_cache

from . import arith
from .constants import RING_SIZE
from .params import QueueParams

U64 = (1 << 64) - 1


@lru_cache(maxsize=128)
def _split(byte_time_q16: int) -> arith.TxSplit:
    return arith.tx_split(byte_time_q16)


def tx_ns(byte_time_q16: int, length: int) -> int | None:
    """The data plane's transmit time of a ``length``-byte frame (p4src/include/queue_model.p4's
    tx_time_hi + tx_time_lo), or None for a frame longer than its tables."""
    if length > arith.MAX_FRAME:
        return None
    return _split(byte_time_q16).tx_ns(length)


@dataclass(frozen=True)
class Prediction:
    now: int
    length: int
    tat: int  # link-free time before this packet
    tat_new: int  # ... after it, if admitted
    backlog_ns: int
    sojourn_ns: int
    release_ns: int
    over_limit: bool


class QueueModel:
    def __init__(self) -> None:
        self.tat = 0
        self.ring = [0] * RING_SIZE
        self.seq = 0  # admitted packets so far (bit<32> in P4)

    def predict(self, p: QueueParams, now: int, length: int) -> Prediction:
        tx = tx_ns(p.byte_time_q16, length)
        too_long = tx is None
        if too_long:
            tx = 0
        backlog = self.tat - now if self.tat > now else 0
        tat_new = (max(self.tat, now) + tx) & U64
        release = tat_new - p.bucket_ns if tat_new > now + p.bucket_ns else now
        over = too_long
        if p.limit_ns != 0 and tat_new - now > p.limit_ns:
            over = True
        if p.limit_pkts != 0 and self.ring[(self.seq - p.limit_pkts) & (RING_SIZE - 1)] > now:
            over = True
        return Prediction(now, length, self.tat, tat_new, backlog, release - now, release, over)

    def commit(self, pred: Prediction) -> None:
        """Admit the predicted packet: the link is busy for it."""
        self.tat = pred.tat_new
        self.ring[self.seq & (RING_SIZE - 1)] = pred.release_ns
        self.seq = (self.seq + 1) & 0xFFFFFFFF
