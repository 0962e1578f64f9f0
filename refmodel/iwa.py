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
* so is a burst no window holds: a full-size frame of new data of a flow IWA
  does not shape (QUIC and other datagrams, TCP whose SYN the switch did not
  see), while the queue is above the target and all such traffic together
  would queue beyond the target on its own at its share of the link
  (``unheld_tat``: its frames as a virtual queue served at 1/2^shift of the
  link rate, per link; ``shift`` counts it as one flow beside the link's active
  shaped ones, ``LinkShaping.unheld_shift``). Nothing else keeps such senders'
  bursts from the audio's budget (a QUIC page's initial window alone is 48 ms
  at 2 Mbit/s), and CoDel, which decides for their other frames, waits an
  interval; traffic that comes no faster than its share, whatever queue it
  holds, is CoDel's alone (an unshaped bulk flow kept 66 % of FIFO's goodput
  under CoDel in ``tests/tcpsim.py``, 28 % when every frame above the target
  was dropped). The share matters where shaped flows are active: their windows
  yield the queue's room while the target is exceeded, and a rate-based sender
  beside them (a WebRTC flow's delay-based control sees no queue growing) would
  otherwise take the whole link from them and keep the queue at the target;
* on a link whose rate changes, the budget cap (``budget_cap_ns``, the
  audio's budget, at least the target and its margin; the controller arms it,
  ``controller.policy.cap_for``): a full-size
  frame of new data that would leave more queue than the cap behind it is
  dropped. What a rate drop leaves in flight was granted at the old rate, and
  no window can recall it: without the cap, the data the ACK clock of the fast
  slot releases into the slow one (two round trips of it, the deficit rule
  halving the inflow each) waited up to 100 ms ahead of the audio on
  ``pam13radio``;
* a shaped flow's retransmissions and control segments pass; the buffer limit
  applies to everything.
"""

from __future__ import annotations

from .constants import N_LINKS, Reason, TrackFlag, TrafficClass
from .flows import Track
from .params import IwaParams
from .queue import Prediction
from .verdict import Verdict


U32 = 0xFFFFFFFF


class Iwa:
    def __init__(self) -> None:
        # per link: the virtual link-free time (ns) of the frames no window holds, at their share (aqm_iwa.p4)
        self.unheld_tat = [0] * N_LINKS

    def decide(self, p: IwaParams, q: Prediction, t: Track, small: bool = False, link: int = 0,
               unheld_shift: int = 0) -> Verdict:
        """``small``: the frame is below a quarter of a full one (``pipeline.small_frame``); ``unheld_shift``:
        the share of the link what no window holds gets (``LinkShaping.unheld_shift``)."""
        s1 = (t.slot << 32) | t.progress
        if q.over_limit:
            return Verdict(True, Reason.LIMIT, s1)
        if p.budget_cap_ns and not small and capped(t) and q.tat_new - q.now > p.budget_cap_ns:
            return Verdict(True, Reason.IWA_CAP, s1)
        above = q.sojourn_ns > p.target_ns
        if t.cls == TrafficClass.TCP_START and t.flags & TrackFlag.BEYOND and above:
            return Verdict(True, Reason.IWA_SURPLUS, s1)
        if unheld(t) and not small:
            own = max(self.unheld_tat[link] - q.now, 0)  # its queue, alone on the link at its share
            if above and own > p.target_ns:
                return Verdict(True, Reason.IWA_UNHELD, s1)
            # + its frame, at its share of the link; what queued beyond the target while the real queue was below
            # it is forgotten (at most one frame is kept above it: no more than the next drop needs)
            self.unheld_tat[link] = q.now + min(own, p.target_ns) + ((q.tat_new - max(q.tat, q.now)) << unheld_shift)
        if t.cls == TrafficClass.TCP_RTX and above:
            return Verdict(False, Reason.IWA_RTX, s1)
        return Verdict(False, Reason.NONE, s1)


def capped(t: Track) -> bool:
    """New data, held by a window or not (not control, not a retransmission): what the budget cap applies to."""
    return t.cls not in (TrafficClass.TCP_CTRL, TrafficClass.TCP_RTX)


def unheld(t: Track) -> bool:
    """New data of a flow no window holds: not control, not a retransmission, not a shaped flow's (datagrams, TCP
    whose SYN the switch did not see, collisions, closed flows, frames it cannot parse)."""
    return capped(t) and not t.flags & TrackFlag.SHAPED
