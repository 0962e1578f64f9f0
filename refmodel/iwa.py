"""The initial-window-aware AQM (twin of ``p4src/include/aqm_iwa.p4``).

See ``docs/iwa.md`` for the design. A segment of new data from a *starting*
flow (``TCP_START``, from the flow tracker) beyond the flow's first
``allowance_bytes`` is the surplus of a starting flow; it is dropped (or
ECN-marked) when the queue delay it would see, plus a *reserve*, exceeds
``target_ns``. The reserve is the drain time of the allowances that flows
announced (their SYN-ACK passed) but have not sent yet, so the first flow of a
parallel start cannot fill the room its siblings' first segments need. The
reserve is forgotten ``window_ns`` after the last SYN-ACK, so a flow that
never sends cannot hold it for long.

Everything else passes unless the buffer is full: datagrams (the audio),
established flows (their ACK clock), retransmissions (so recovery never
meets a second loss from us), control segments.
"""

from __future__ import annotations

from .constants import BYTE_TIME_FRAC, Reason, TrackFlag, TrafficClass
from .flows import Track
from .params import IwaParams, QueueParams
from .queue import Prediction
from .verdict import Verdict

U32 = 0xFFFFFFFF


class Iwa:
    def __init__(self) -> None:
        self.pending = 0  # bytes of announced allowances not yet sent
        self.last_start = 0  # time of the last SYN-ACK

    def decide(self, p: IwaParams, qp: QueueParams, q: Prediction, t: Track) -> Verdict:
        pending = self.pending if ((q.now - self.last_start) & (2**64 - 1)) <= p.window_ns else 0
        if t.flags & TrackFlag.NEW_FLOW:
            pending = min(pending + p.allowance_bytes, U32)
            self.last_start = q.now
        if t.cls == TrafficClass.TCP_START and t.progress < p.allowance_bytes:
            used = min(t.payload, p.allowance_bytes - t.progress)
            pending = pending - used if pending > used else 0
        self.pending = pending
        reserve_ns = (pending * qp.byte_time_q16) >> BYTE_TIME_FRAC

        s1 = (t.slot << 32) | t.progress
        if q.over_limit:
            return Verdict(True, Reason.LIMIT, s1, pending)
        above = q.sojourn_ns + reserve_ns > p.target_ns
        if t.cls == TrafficClass.TCP_START and above:
            if t.progress >= p.allowance_bytes:
                return Verdict(True, Reason.IWA_SURPLUS, s1, pending)
            return Verdict(False, Reason.IWA_ALLOWANCE, s1, pending)
        if t.cls == TrafficClass.TCP_RTX and above:
            return Verdict(False, Reason.IWA_RTX, s1, pending)
        return Verdict(False, Reason.NONE, s1, pending)
