"""The whole switch pipeline in Python: the oracle for tests, and a switch when BMv2 is absent.

``Pipeline.process`` takes one frame with its arrival time and ingress port
and returns where it goes, the frame as it leaves (ECN may be set), and the
telemetry record the P4 program would clone, in the order of
``p4src/bottleneck.p4``: parse, forward, classify (flow tracker), predict
(queue model), decide (the selected AQM), commit (admit to the queue),
count, report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .codel import Codel
from .constants import COUNTER_SLOTS, Aqm, Decision, Reason, TrafficClass
from .fifo import Fifo
from .flows import FlowTracker, Track
from .iwa import Iwa
from .shaper import StartShaper
from .packet import parse, set_ecn_ce, set_tcp_window
from .params import PipelineParams
from .pie import Pie
from .queue import QueueModel
from .red import Red
from .telemetry import Record
from .verdict import Verdict


@dataclass(frozen=True)
class Route:
    egress: int
    downstream: bool  # towards the access link: through the bottleneck


@dataclass(frozen=True)
class Result:
    egress: int | None  # None: dropped (or no route)
    frame: bytes
    decision: Decision
    reason: Reason
    cls: TrafficClass
    record: Record | None = None  # telemetry, for bottleneck frames


@dataclass
class Counters:
    packets: list[int] = field(default_factory=lambda: [0] * COUNTER_SLOTS)
    bytes: list[int] = field(default_factory=lambda: [0] * COUNTER_SLOTS)

    def count(self, cls: int, decision: int, length: int) -> None:
        i = cls * 4 + decision
        self.packets[i] += 1
        self.bytes[i] += length


class Pipeline:
    def __init__(self, routes: dict[int, Route], params: PipelineParams | None = None, seed: int = 1) -> None:
        self.routes = dict(routes)
        self.params = params
        self.rng = random.Random(seed)
        self.queue = QueueModel()
        self.flows = FlowTracker()
        self.shaper = StartShaper()
        self.fifo, self.red, self.codel, self.pie, self.iwa = Fifo(), Red(), Codel(), Pie(), Iwa()
        self.counters = Counters()
        self.telemetry_seq = 0

    def configure(self, params: PipelineParams) -> None:
        """Like rewriting the config tables: state (registers) is kept."""
        self.params = params

    def process(self, now_ns: int, frame: bytes, ingress: int, rand: int | None = None) -> Result:
        pkt = parse(frame)
        route = self.routes.get(ingress)
        if route is None:
            return Result(None, frame, Decision.DROP, Reason.NONE, TrafficClass.OTHER)
        p = self.params
        if not route.downstream:
            return self._upstream(p, now_ns, frame, pkt, route)
        if rand is None:
            rand = self.rng.getrandbits(32)
        if p is None:
            self.counters.count(TrafficClass.OTHER, Decision.BYPASS, pkt.length)
            return Result(route.egress, frame, Decision.BYPASS, Reason.UNCONFIGURED, TrafficClass.OTHER)

        iwa_on = p.queue.aqm == Aqm.IWA
        track = self.flows.track(p.iwa, pkt, now_ns)
        track = self.shaper.downstream(p.iwa, p.queue.mtu_ns, pkt, now_ns, iwa_on, track)
        pred = self.queue.predict(p.queue, now_ns, pkt.length)
        verdict = self._decide(p, pred, track, rand)

        decision = Decision.DROP if verdict.drop else Decision.PASS
        out = frame
        if verdict.early and p.queue.ecn and pkt.ipv4_valid and (pkt.tos & 3) != 0:
            decision, out = Decision.MARK, set_ecn_ce(frame)
        if decision != Decision.DROP:
            self.queue.commit(pred)
        self.counters.count(track.cls, decision, pkt.length)

        record = None
        if p.queue.telemetry:
            record = Record(
                aqm=int(p.queue.aqm), decision=int(decision), reason=int(verdict.reason), cls=int(track.cls),
                tflags=int(track.flags), length=pkt.length, seq=self.telemetry_seq, rand=rand, ts_ns=now_ns,
                sojourn_ns=pred.sojourn_ns, backlog_ns=pred.backlog_ns, src=pkt.src, dst=pkt.dst,
                sport=pkt.sport, dport=pkt.dport, proto=pkt.proto, s1=verdict.s1, s2=verdict.s2,
            )
            self.telemetry_seq = (self.telemetry_seq + 1) & 0xFFFFFFFF
        egress = None if decision == Decision.DROP else route.egress
        return Result(egress, out, decision, verdict.reason, track.cls, record)

    def _upstream(self, p: PipelineParams | None, now_ns: int, frame: bytes, pkt, route: Route) -> Result:
        """Reverse direction (ACKs, requests): never queued or delayed. The tracker and the start shaper
        follow the client's SYN and ACKs; with IWA, an ACK of a starting flow may leave with a smaller window."""
        cls = upstream_class(pkt)
        self.counters.count(cls, Decision.BYPASS, pkt.length)
        if p is None:
            return Result(route.egress, frame, Decision.BYPASS, Reason.UPSTREAM, cls)
        iwa_on = p.queue.aqm == Aqm.IWA
        track = self.flows.track(p.iwa, pkt, now_ns, downstream=False)
        g = self.shaper.upstream(p.iwa, p.queue.mtu_ns, pkt, now_ns, self.queue.tat, iwa_on, track)
        out, reason = frame, Reason.UPSTREAM
        if g.window is not None:
            out, reason = set_tcp_window(frame, pkt, g.window), Reason.IWA_WINDOW
        record = None
        if iwa_on and p.queue.telemetry and (g.tracked or g.syn):
            backlog = self.queue.tat - now_ns if self.queue.tat > now_ns else 0
            record = Record(
                aqm=int(p.queue.aqm), decision=int(Decision.BYPASS), reason=int(reason), cls=int(cls),
                tflags=int(g.flags), length=pkt.length, seq=self.telemetry_seq, rand=0, ts_ns=now_ns,
                sojourn_ns=0, backlog_ns=backlog, src=pkt.src, dst=pkt.dst, sport=pkt.sport, dport=pkt.dport,
                proto=pkt.proto, s1=(track.slot << 32) | g.edge, s2=(g.advance << 32) | min(g.room_ns, 0xFFFFFFFF),
            )
            self.telemetry_seq = (self.telemetry_seq + 1) & 0xFFFFFFFF
        return Result(route.egress, out, Decision.BYPASS, reason, cls, record)

    def _decide(self, p: PipelineParams, q, track: Track, rand: int) -> Verdict:
        aqm = p.queue.aqm
        if aqm == Aqm.RED:
            return self.red.decide(p.red, q, rand)
        if aqm == Aqm.CODEL or (aqm == Aqm.IWA and track.cls == TrafficClass.TCP_EST):
            return self.codel.decide(p.codel, p.queue, q)
        if aqm == Aqm.PIE:
            return self.pie.decide(p.pie, p.queue, q, rand)
        if aqm == Aqm.IWA:
            verdict = self.iwa.decide(p.iwa, q, track)
            if not verdict.drop:
                self.codel.observe(p.codel, p.queue, q)  # CoDel's sojourn measurement covers every packet
            return verdict
        return self.fifo.decide(q)


def upstream_class(pkt) -> TrafficClass:
    """Class of a reverse-direction frame, from its headers alone (no flow state)."""
    if pkt.udp_valid:
        return TrafficClass.UDP
    if pkt.tcp_valid and pkt.tcp_payload >= 0:
        return TrafficClass.TCP_EST if pkt.tcp_payload > 0 else TrafficClass.TCP_CTRL
    return TrafficClass.OTHER
