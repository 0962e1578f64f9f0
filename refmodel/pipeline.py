"""The whole switch pipeline in Python: the oracle for tests, and a switch when BMv2 is absent.

``Pipeline.process`` takes one frame with its arrival time and ingress port
and returns where it goes, the frame as it leaves (ECN may be set), and the
telemetry record the P4 program would clone, in the order of
``p4src/bottleneck.p4``: parse, forward, classify (flow tracker), predict
(queue model), decide (the selected AQM), commit (admit to the queue),
count, report.

Many access links share the pipeline (issue 12, item 3). ``link_of`` gives each
packet its link from the client's IPv4 address (``links``, the ``link_of``
table; downstream the destination, upstream the source; link 0 without an
entry). Each link has its own queue model and AQM state (``LinkState``: the P4
registers indexed by link; IWA's in ``StartShaper.links``) and may have
parameters of its own (``link_params``: the config tables' entries keyed by
link); a link without them runs on ``params`` (the tables' default actions).
With no entries every packet is link 0: the single-link pipeline.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field

from .codel import Codel
from .constants import COUNTER_SLOTS, N_LINKS, Aqm, Decision, Reason, Telemetry, TrackFlag, TrafficClass
from .fifo import Fifo
from .flows import FlowTracker, Track
from .iwa import Iwa
from .shaper import StartShaper
from .packet import Parsed, parse, set_ecn_ce, set_tcp_window
from .params import TCP_FRAME_OVERHEAD, ClientKey, PipelineParams, check_link, client_key
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
    link: int = 0  # the access link link_of gave the frame


@dataclass
class Counters:
    """Packets and bytes per slot: ``class_decision`` (class * 4 + decision), or with ``per_link()``
    ``link_class_decision`` (link * COUNTER_SLOTS + class * 4 + decision)."""

    packets: list[int] = field(default_factory=lambda: [0] * COUNTER_SLOTS)
    bytes: list[int] = field(default_factory=lambda: [0] * COUNTER_SLOTS)

    @classmethod
    def per_link(cls) -> "Counters":
        return cls([0] * (N_LINKS * COUNTER_SLOTS), [0] * (N_LINKS * COUNTER_SLOTS))

    def count(self, cls: int, decision: int, length: int, link: int = 0) -> None:
        i = link * COUNTER_SLOTS + cls * 4 + decision
        self.packets[i] += 1
        self.bytes[i] += length


@dataclass
class LinkState:
    """One access link's registers: the queue model's and every stateful AQM's (bottleneck.p4's queue_* and
    the AQM controls' registers, indexed by link). FIFO and IWA's downstream decision keep none; IWA's
    start shaping keeps its per-link registers in ``StartShaper.links``."""

    queue: QueueModel = field(default_factory=QueueModel)
    red: Red = field(default_factory=Red)
    codel: Codel = field(default_factory=Codel)
    pie: Pie = field(default_factory=Pie)


class Pipeline:
    def __init__(self, routes: dict[int, Route], params: PipelineParams | None = None, seed: int = 1, *,
                 links: Mapping[int | str, int] | None = None,
                 link_params: Mapping[int, PipelineParams] | None = None) -> None:
        """``params``: what the config tables' default actions hold (every link without entries of its own);
        ``links``: client IPv4 address -> link (``link_of``); ``link_params``: link -> its own parameters."""
        self.routes = dict(routes)
        self.params = params
        self.rng = random.Random(seed)
        self.links: dict[ClientKey, int] = {}
        self.link_params: dict[int, PipelineParams] = {}
        for client, link in (links or {}).items():
            self.assign(client, link)
        for link, lp in (link_params or {}).items():
            self.configure_link(link, lp)
        self.state = [LinkState() for _ in range(N_LINKS)]
        self.flows = FlowTracker()
        self.shaper = StartShaper()
        self.fifo, self.iwa = Fifo(), Iwa()
        self.counters = Counters()
        self.link_counters = Counters.per_link()
        self.telemetry_seq = 0

    # Link 0's registers under the single-link pipeline's names (tests and tools read them).
    @property
    def queue(self) -> QueueModel:
        return self.state[0].queue

    @property
    def red(self) -> Red:
        return self.state[0].red

    @property
    def codel(self) -> Codel:
        return self.state[0].codel

    @property
    def pie(self) -> Pie:
        return self.state[0].pie

    def configure(self, params: PipelineParams) -> None:
        """Like rewriting the config tables' default actions: state (registers) is kept."""
        self.params = params

    def configure_link(self, link: int, params: PipelineParams | None) -> None:
        """Like writing the config tables' entries keyed by ``link`` (None: deleting them, so the link runs on
        the defaults again): state is kept."""
        check_link(link)
        if params is None:
            self.link_params.pop(link, None)
        else:
            self.link_params[link] = params

    def assign(self, client: int | str | ClientKey, link: int | None) -> None:
        """A ``link_of`` entry (an IPv4 client's address, an int or a dotted quad) or a ``link_of6`` entry (an IPv6
        client's prefix) for ``link``; None deletes the entry (the client is on link 0 again)."""
        key = client_key(client)
        if link is None:
            self.links.pop(key, None)
        else:
            self.links[key] = check_link(link)

    def link_of(self, pkt: Parsed, downstream: bool) -> int:
        """The packet's access link: its client's (downstream the destination, upstream the source): the IPv4
        address's entry, or the longest IPv6 prefix holding the address; link 0 for a frame without IP or a
        client without an entry (the tables' default action)."""
        if not pkt.ip_valid:
            return 0
        addr = pkt.dst if downstream else pkt.src
        found = [key for key in self.links if key.holds(pkt.ipver, addr)]
        return self.links[max(found, key=lambda k: k.prefix_len)] if found else 0

    def params_for(self, link: int) -> PipelineParams | None:
        """What the config tables give a packet of ``link``: its own entries, else the default actions."""
        return self.link_params.get(link, self.params)

    def _count(self, link: int, cls: int, decision: int, length: int) -> None:
        self.counters.count(cls, decision, length)
        self.link_counters.count(cls, decision, length, link)

    def process(self, now_ns: int, frame: bytes, ingress: int, rand: int | None = None) -> Result:
        pkt = parse(frame)
        route = self.routes.get(ingress)
        if route is None:
            return Result(None, frame, Decision.DROP, Reason.NONE, TrafficClass.OTHER)
        link = self.link_of(pkt, route.downstream)
        p = self.params_for(link)
        if not route.downstream:
            return self._upstream(p, link, now_ns, frame, pkt, route)
        if rand is None:
            rand = self.rng.getrandbits(32)
        if p is None:
            self._count(link, TrafficClass.OTHER, Decision.BYPASS, pkt.length)
            return Result(route.egress, frame, Decision.BYPASS, Reason.UNCONFIGURED, TrafficClass.OTHER, link=link)

        st = self.state[link]
        iwa_on = p.queue.aqm == Aqm.IWA
        track = self.flows.track(p.iwa, pkt, now_ns)
        unheld_shift = self.shaper.unheld_shift(p.iwa, now_ns, link) if iwa_on else 0
        track = self.shaper.downstream(p.iwa, p.queue.mtu_ns, pkt, now_ns, iwa_on, track, link)
        pred = st.queue.predict(p.queue, now_ns, pkt.length)
        verdict = self._decide(p, st, pred, track, rand, link, unheld_shift)

        decision = Decision.DROP if verdict.drop else Decision.PASS
        out = frame
        if verdict.early and p.queue.ecn and pkt.ip_valid and (pkt.tos & 3) != 0:
            decision, out = Decision.MARK, set_ecn_ce(frame)
        if decision != Decision.DROP:
            st.queue.commit(pred)
        self._count(link, track.cls, decision, pkt.length)

        record = None
        if p.queue.telemetry == Telemetry.ALL or (p.queue.telemetry == Telemetry.DATAGRAMS
                                                  and track.cls == TrafficClass.UDP):
            record = Record(
                aqm=int(p.queue.aqm), decision=int(decision), reason=int(verdict.reason), cls=int(track.cls),
                tflags=int(track.flags), length=pkt.length, seq=self.telemetry_seq, rand=rand, ts_ns=now_ns,
                sojourn_ns=pred.sojourn_ns, backlog_ns=pred.backlog_ns, **record_addresses(pkt),
                sport=pkt.sport, dport=pkt.dport, proto=pkt.proto, s1=verdict.s1, s2=verdict.s2, link=link,
            )
            self.telemetry_seq = (self.telemetry_seq + 1) & 0xFFFFFFFF
        egress = None if decision == Decision.DROP else route.egress
        return Result(egress, out, decision, verdict.reason, track.cls, record, link)

    def _upstream(self, p: PipelineParams | None, link: int, now_ns: int, frame: bytes, pkt: Parsed,
                  route: Route) -> Result:
        """Reverse direction (ACKs, requests): never queued or delayed. The tracker and the start shaper
        follow the client's SYN and ACKs; with IWA, an ACK of a starting flow may leave with a smaller window
        (sized from the queue of its own link)."""
        cls = upstream_class(pkt)
        self._count(link, cls, Decision.BYPASS, pkt.length)
        if p is None:
            return Result(route.egress, frame, Decision.BYPASS, Reason.UPSTREAM, cls, link=link)
        tat = self.state[link].queue.tat
        iwa_on = p.queue.aqm == Aqm.IWA
        track = self.flows.track(p.iwa, pkt, now_ns, downstream=False)
        g = self.shaper.upstream(p.iwa, p.queue.mtu_ns, pkt, now_ns, tat, iwa_on, track, link)
        out, reason = frame, Reason.UPSTREAM
        if g.window is not None:
            out, reason = set_tcp_window(frame, pkt, g.window), Reason.IWA_WINDOW
        record = None
        if iwa_on and p.queue.telemetry == Telemetry.ALL and (g.tracked or g.syn):
            record = Record(
                aqm=int(p.queue.aqm), decision=int(Decision.BYPASS), reason=int(reason), cls=int(cls),
                tflags=int(g.flags), length=pkt.length, seq=self.telemetry_seq, rand=0, ts_ns=now_ns,
                sojourn_ns=0, backlog_ns=tat - now_ns if tat > now_ns else 0, **record_addresses(pkt),
                sport=pkt.sport, dport=pkt.dport, proto=pkt.proto, s1=(track.slot << 32) | g.edge,
                s2=(g.advance << 32) | min(g.room_ns, 0xFFFFFFFF), link=link,
            )
            self.telemetry_seq = (self.telemetry_seq + 1) & 0xFFFFFFFF
        return Result(route.egress, out, Decision.BYPASS, reason, cls, record, link)

    def _decide(self, p: PipelineParams, st: LinkState, q, track: Track, rand: int, link: int = 0,
                unheld_shift: int = 0) -> Verdict:
        aqm = p.queue.aqm
        if aqm == Aqm.RED:
            return st.red.decide(p.red, q, rand)
        if aqm == Aqm.CODEL:
            return st.codel.decide(p.codel, p.queue, q)
        if aqm == Aqm.PIE:
            return st.pie.decide(p.pie, p.queue, q, rand)
        if aqm == Aqm.IWA:
            return self._iwa(p, st, q, track, link, unheld_shift)
        return self.fifo.decide(q)

    def _iwa(self, p: PipelineParams, st: LinkState, q, track: Track, link: int, unheld_shift: int) -> Verdict:
        """IWA's downstream decision (iwa.py), and CoDel's for what no window holds at all times
        (``codel_decides_under_iwa``); CoDel observes every other packet IWA admits (its sojourn measurement
        covers the whole queue)."""
        small = small_frame(q.length, p.iwa.mss_bytes)
        verdict = self.iwa.decide(p.iwa, q, track, small, link, unheld_shift)
        if verdict.drop:
            return verdict
        if codel_decides_under_iwa(track, small):
            return st.codel.decide(p.codel, p.queue, q)
        st.codel.observe(p.codel, p.queue, q)
        return verdict


def record_addresses(pkt: Parsed) -> dict:
    """A record's address fields: IPv4's addresses, or an IPv6 packet's low 32 bits of them and ipver 6."""
    return dict(src=pkt.src & 0xFFFFFFFF, dst=pkt.dst & 0xFFFFFFFF, ipver=6 if pkt.ipv6_valid else 0)


def codel_decides_under_iwa(track: Track, small: bool) -> bool:
    """Under IWA, CoDel (the standing-queue control, at IWA's target) decides for every full-size packet IWA
    admitted that a window does not hold from the start: datagrams (QUIC), flows IWA does not shape (no SYN
    seen, collisions, closed), frames it cannot parse (``iwa.py`` already dropped such a frame above the
    target), and shaped flows past their start phase. IWA itself keeps a shaped flow's start-phase data and its
    retransmissions (the window holds them), control segments (a drop frees next to no queue) and frames smaller
    than a quarter of a full one (``small_frame``): CoDel only observes them."""
    if track.cls == TrafficClass.TCP_CTRL or small:
        return False
    held = track.cls in (TrafficClass.TCP_START, TrafficClass.TCP_RTX) and track.flags & TrackFlag.SHAPED
    return not held


def small_frame(length: int, mss_bytes: int) -> bool:
    """A frame of less than a quarter of a full one (``mss_bytes`` plus TCP/IPv4 headers and Ethernet): never
    CoDel's victim under IWA. The standing queues CoDel breaks are built of full-size frames (TCP, QUIC); a small
    frame's drop frees little link time and falls on the interactive flows that send small frames (the audio:
    94 B, a quarter of 1514 B is 378 B), which CoDel would otherwise drop in proportion to their packets, not
    their bytes: on BMv2 (web6 on pam13radio), 25 of CoDel's 32 drops under IWA were audio packets."""
    return 4 * length < mss_bytes + TCP_FRAME_OVERHEAD


def upstream_class(pkt) -> TrafficClass:
    """Class of a reverse-direction frame, from its headers alone (no flow state)."""
    if pkt.udp_valid:
        return TrafficClass.UDP
    if pkt.tcp_valid and pkt.tcp_payload >= 0:
        return TrafficClass.TCP_EST if pkt.tcp_payload > 0 else TrafficClass.TCP_CTRL
    return TrafficClass.OTHER
