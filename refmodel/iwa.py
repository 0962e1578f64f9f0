"""IWA, the initial-window-aware AQM, its downstream decision (twin of ``p4src/include/aqm_iwa.p4``).

See ``docs/iwa.md``. IWA's main lever is upstream and loss-free:
``shaper.py`` sizes the windows of starting flows to the queue room the
audio's budget leaves. Here:

* everything no window holds is CoDel's (the pipeline runs ``codel.py`` on it,
  with ``codel_cfg``: ``pipeline.codel_decides_under_iwa``): datagrams, flows
  IWA does not shape, frames it cannot parse, and shaped flows past their start
  phase, so no traffic meets a plain FIFO;
* the safety net: new data of a starting flow beyond the window it was given
  (a sender that ignores the window) is dropped while its sojourn exceeds the
  target; a mark would not shrink that queue, so ECN or not, it is a drop;
* a shaped flow's retransmissions and control segments pass; the buffer limit
  applies to everything.
"""

from __future__ import annotations

from .constants import Reason, TrackFlag, TrafficClass
from .flows import Track
from .params import IwaParams
from .queue import Prediction
from .verdict import Verdict


class Iwa:
    def decide(self, p: IwaParams, q: Prediction, t: Track) -> Verdict:
        s1 = (t.slot << 32) | t.progress
        if q.over_limit:
            return Verdict(True, Reason.LIMIT, s1)
        above = q.sojourn_ns > p.target_ns
        if t.cls == TrafficClass.TCP_START and t.flags & TrackFlag.BEYOND and above:
            return Verdict(True, Reason.IWA_SURPLUS, s1)
        if t.cls == TrafficClass.TCP_RTX and above:
            return Verdict(False, Reason.IWA_RTX, s1)
        return Verdict(False, Reason.NONE, s1)
