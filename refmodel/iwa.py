"""IWA, the initial-window-aware AQM (twin of ``p4src/include/aqm_iwa.p4``).

See ``docs/iwa.md`` for the design and the derivation of every knob. Two
levers on one sojourn measurement (the queue model's):

* **Start shaping** (upstream, no loss): while a flow is in its start phase
  (``flows.py``), each ACK the client sends may open the server's window
  only by the *room* the queue has for starting flows:

      room = target - queue - grants - reserve

  ``queue`` is the modelled backlog, ``grants`` the drain time of the window
  openings already given (a virtual queue that drains at the link rate from
  the moment of the grant, so a grant the server never uses is forgotten by
  itself), and ``reserve`` one frame for every flow whose SYN-ACK passed but
  whose first ACK has not (so the first flow of a parallel start cannot take
  the room its siblings' first segments need; a flow's frame is released by
  its own first ACK, and the whole reserve is forgotten ``hold_ns`` after the
  last SYN-ACK, so handshakes that never complete cannot pin it). Windows
  never go below one MSS and never above the client's own.
* **Established flows** (downstream): CoDel (``codel.py``, same state
  machine, its knobs from ``codel_cfg``) on the segments of flows past their
  start phase, so a bulk incumbent cannot hold the audio's queue either.

The drop path stays as a safety net: new data of a starting flow beyond the
window it was given (a sender that ignores the window) is dropped while the
queue is above target. Datagrams (the audio), retransmissions and control
segments are never early-dropped; the buffer limit applies to everything.
"""

from __future__ import annotations

from .codel import Codel
from .constants import Reason, TrackFlag, TrafficClass
from .flows import Grant, Track
from .params import CodelParams, IwaParams, QueueParams, bytes_to_ns
from .queue import Prediction
from .verdict import Verdict

U32 = 0xFFFFFFFF


class Iwa:
    def __init__(self, codel: Codel) -> None:
        self.codel = codel  # the established flows' standing-queue control (shares CoDel's state)
        self.grant_tat = 0  # when the grants given so far would have drained at the link rate
        self.reserve_ns = 0  # one frame per announced flow (SYN-ACK seen, first ACK not yet)
        self.reserve_t = 0  # time of the last SYN-ACK

    # ------------------------------------------------------------------ upstream: start shaping

    def _reserve(self, p: IwaParams, now: int) -> int:
        return self.reserve_ns if now - self.reserve_t <= p.hold_ns else 0

    def room_base(self, p: IwaParams, queue_tat: int, now: int) -> int:
        """target - queue - grants - reserve, in ns (negative: no room beyond the one-MSS floor)."""
        queue = queue_tat - now if queue_tat > now else 0
        grants = self.grant_tat - now if self.grant_tat > now else 0
        return p.target_ns - queue - grants - self._reserve(p, now)

    def commit_grant(self, p: IwaParams, qp: QueueParams, now: int, g: Grant) -> None:
        if g.flags & TrackFlag.STARTING and g.advance:
            self.grant_tat = max(self.grant_tat, now) + bytes_to_ns(p, g.advance)
        if g.released:
            r = self._reserve(p, now)
            self.reserve_ns = r - qp.mtu_ns if r > qp.mtu_ns else 0

    def announce(self, p: IwaParams, qp: QueueParams, now: int) -> None:
        """A new flow's SYN-ACK: reserve one frame for its first window."""
        self.reserve_ns = min(self._reserve(p, now) + qp.mtu_ns, U32)
        self.reserve_t = now

    # ------------------------------------------------------------------ downstream: the decision

    def decide(self, p: IwaParams, cp: CodelParams, qp: QueueParams, q: Prediction, t: Track) -> Verdict:
        if t.flags & TrackFlag.NEW_FLOW:
            self.announce(p, qp, q.now)
        if t.cls == TrafficClass.TCP_EST:
            return self.codel.decide(cp, qp, q)
        s1 = (t.slot << 32) | t.progress
        s2 = self.grant_tat
        if q.over_limit:
            return Verdict(True, Reason.LIMIT, s1, s2)
        above = q.sojourn_ns > p.target_ns
        if t.cls == TrafficClass.TCP_START and t.flags & TrackFlag.BEYOND and above:
            return Verdict(True, Reason.IWA_SURPLUS, s1, s2)
        if t.cls == TrafficClass.TCP_RTX and above:
            return Verdict(False, Reason.IWA_RTX, s1, s2)
        return Verdict(False, Reason.NONE, s1, s2)
