"""IWA 2 on the reference model: start shaping through the client's receive window, per-flow reserves,
CoDel for established flows, the drop safety net, the option parser, collisions and aging.

Two kinds of tests: single frames through ``Pipeline.process`` (exact expectations), and closed loops in
``tcpsim.py`` (TCP senders and receivers around the pipeline, the lab's HSPA link: 2 Mbit/s, 11 ms server
side, 70 ms client side, RTT 162 ms, a 48-packet buffer, audio every 20 ms, jitter budget 40 ms).
"""

from __future__ import annotations

import dataclasses
import functools
import random
import struct
import zlib

import numpy as np
import pytest
from frames import (
    LINUX_SYN, MACOS_SYN, MSS, NO_WS_SYN, WINDOWS_SYN, audio, client_ack, client_syn, syn_ack, tcp, tcp_fields,
)
from scapy.all import IP, TCP, UDP, Ether, Raw, raw
from tcpsim import Flow, Sim

from experiments.metrics import good_quality, loss_levels
from refmodel import Decision, Pipeline, Reason, Route, TrafficClass
from refmodel.constants import FLOW_HELD, FLOW_PAUSED, FLOW_SHAPE, FLOW_SHUT, FLOW_SLOTS, TrackFlag
from refmodel.flows import flow_hash
from refmodel.packet import parse, window_scale_option
from refmodel.params import ns_to_bytes, pipeline_params
from refmodel.shaper import Floor, at_floor

try:  # the controller's policy derives IWA's target from the jitter budget
    from controller.policy import target_for
except ImportError:  # pragma: no cover
    def target_for(rate_bps, budget_ns):
        return 27_888_000

MS = 1_000_000
NS = 1_000_000_000
U32 = 0xFFFFFFFF
RATE = 2e6
BUDGET_NS = 40 * MS
TARGET_NS = target_for(RATE, BUDGET_NS)  # 27.888 ms at HSPA
IWA = dict(target_s=TARGET_NS / 1e9)
ROUTES = {1: Route(2, True), 2: Route(1, False)}
D_SERVER, D_CLIENT = 11 * MS, 70 * MS
RTT = 2 * (D_SERVER + D_CLIENT)
FRAME_NS = 1514 * 4000  # one full frame at 2 Mbit/s


def params(aqm="iwa", limit=48, **kw):
    return pipeline_params(RATE, aqm, limit_pkts=limit, iwa=dict(IWA), **kw)


def pipe(aqm="iwa", **kw):
    return Pipeline(ROUTES, params(aqm, **kw))


def room(r):
    return getattr(r, "record", r).s2 & U32  # an upstream record: the queue room the grant was sized from


def edge(r):
    return getattr(r, "record", r).s1 & U32  # ... and the right edge the server now has


def window(r):
    return tcp_fields(r.frame).window


def open_flow(p, t=0, port=40000, syn=LINUX_SYN, synack_ws=9, isn=1000, own=502, syn_seen=True, server_port=80):
    """A handshake as the switch sees it: the client's SYN at t, the server's SYN-ACK 2 d_server later, the
    client's first ACK (window field ``own``) one RTT after the SYN. Returns (SYN-ACK, ACK) results."""
    if syn_seen:
        p.process(t, client_syn(5000, syn, sport=port, dport=server_port), 2)
    opts = [("MSS", MSS)] + ([("WScale", synack_ws)] if synack_ws is not None else [])
    sa = p.process(t + 2 * D_SERVER, syn_ack(isn, sport=server_port, dport=port, ack=5001, options=opts), 1)
    return sa, p.process(t + RTT, client_ack(isn + 1, own, sport=port, dport=server_port), 2)


def fill(p, t, n, port=50000):
    """n full segments of an untracked flow into the queue at t (n frame times of queue, but under IWA no more
    than the target and a frame: no window holds it, ``iwa.unheld``)."""
    return [p.process(t, tcp(1 + k * MSS, dport=port), 1) for k in range(n)]


def established(p, t, n, port=45000):
    """n full segments at t of a shaped flow past its start phase (opened RTT before t): CoDel's, not dropped as
    unheld, so it can hold a queue above the target."""
    _, a = open_flow(p, t=t - 2 * RTT, port=port, isn=9_000_000)
    end = 9_000_001 + ns_to_bytes(p.params.iwa, RTT + TARGET_NS) + MSS
    return [p.process(t, tcp(end + k * MSS, dport=port), 1) for k in range(n)]


# --------------------------------------------------------------------------- web6 IW10 at HSPA, closed loop

SIZE = 62_000  # web6: 372 kB in 6 flows


def link_rate_limit_ns(flows=6, size=SIZE):
    """Completion (client SYN to last byte) if the link were busy from the first byte: handshake and request
    (2 RTT) plus every frame of the responses at the link rate."""
    full, last = divmod(size, MSS)
    frame_bytes = flows * (full * (MSS + 54) + (last + 54 if last else 0))
    return 2 * RTT + frame_bytes * 8 * 10**9 / RATE


@functools.lru_cache(maxsize=None)
def web6(aqm, limit=48):
    flows = [Flow(40000 + i, start=10 * MS + i * MS, size=SIZE, isn=1_000_000 * (i + 1)) for i in range(6)]
    return Sim(params(aqm, limit), flows, audio=(0, 6000 * MS)).run(6500 * MS)


def audio_max(sim, until=None):
    return max(s for t, s in sim.audio if until is None or t < until)


def completions(sim):
    return [f.done for f in sim.flows.values()]


def test_fifo_lets_the_web6_burst_delay_the_audio():
    big = web6("fifo", 1000)  # no loss: the simulator fills the link as TCP would
    assert not big.drops and big.audio_drops == 0
    assert audio_max(big) > 200 * MS
    assert max(completions(big)) <= 1.02 * link_rate_limit_ns()
    hspa = web6("fifo", 48)  # the lab's 2*BDP buffer overflows
    assert audio_max(hspa) > 200 * MS
    assert hspa.drops and all(d[3] == Reason.LIMIT for d in hspa.drops)


def test_iwa_web6_is_loss_free_and_starves_nobody():
    s = web6("iwa")
    assert s.drops == [] and s.audio_drops == 0
    for f in s.flows.values():
        assert f.retransmits == 0 and f.rtos == 0
        assert f.done is not None  # every flow completes
        t, ack, field, own, first_edge = f.acks[0]  # the handshake's ACK as the server got it
        assert first_edge - ack >= MSS  # a first window of at least one segment
        assert field < own  # ... shaped
    assert s.rewrites


def test_iwa_keeps_the_audio_within_budget_while_flows_start():
    """The first three RTTs of data (handshakes and requests take 2 RTT from the SYNs at 10 ms)."""
    s, fifo = web6("iwa"), web6("fifo", 48)
    first_rtts = 10 * MS + 5 * RTT
    assert audio_max(fifo, first_rtts) > 200 * MS
    assert audio_max(s, first_rtts) <= BUDGET_NS


def test_iwa_keeps_every_audio_packet_within_budget_through_web6():
    # history in the simulator: 94 ms at a7e777d (the clamp's release let the server send its cwnd back to back),
    # 73 ms at 1e007a1, 41.5 ms (3 of 300 over 40 ms) at 410e416; the queue above target now drains (39.6 ms)
    assert audio_max(web6("iwa")) <= BUDGET_NS


def test_iwa_keeps_the_audio_within_budget_when_clients_delay_their_acks():
    """Linux acks every second segment once its 16 quick ACKs are spent: each ACK then lets the server send
    up to four segments back to back. The audio still stays within its budget, loss-free."""
    flows = [Flow(40000 + i, start=10 * MS + i * MS, size=SIZE, isn=1_000_000 * (i + 1), delack=True)
             for i in range(6)]
    s = Sim(params(), flows, audio=(0, 6000 * MS)).run(6500 * MS)
    quick = web6("iwa")
    assert sum(len(f.acks) for f in s.flows.values()) < 0.8 * sum(len(f.acks) for f in quick.flows.values())
    assert not s.drops and all(f.done for f in s.flows.values())
    assert audio_max(s) <= BUDGET_NS


def test_the_product_tables_move_iwa_little_on_web6(monkeypatch):
    """IWA's conversions between queue time and bytes come from product tables (refmodel/arith.py: mul,
    never above the exact product, < 1/64 below). Their measured effect on web6 in the simulator, against
    the exact products: the audio's worst sojourn and the last completion."""
    import refmodel.shaper as shaper
    approx = web6("iwa")
    monkeypatch.setattr(shaper, "ns_to_bytes", lambda p, ns: (ns * p.bytes_per_ns_q32) >> 32)
    monkeypatch.setattr(shaper, "bytes_to_ns", lambda p, n: (n * p.payload_ns_q16) >> 16)
    flows = [Flow(40000 + i, start=10 * MS + i * MS, size=SIZE, isn=1_000_000 * (i + 1)) for i in range(6)]
    exact = Sim(params(), flows, audio=(0, 6000 * MS)).run(6500 * MS)
    a, e = audio_max(approx), audio_max(exact)
    ca, ce = max(completions(approx)), max(completions(exact))
    print(f"web6 iwa: audio max {a / MS:.1f} ms (exact {e / MS:.1f}), last completion {ca / MS:.0f} ms "
          f"(exact {ce / MS:.0f})")
    assert a <= BUDGET_NS and e <= BUDGET_NS
    assert abs(ca - ce) <= 0.05 * ce


@pytest.mark.xfail(strict=True, reason="design: the last flow finishes at 3.98 s (a7e777d: the aggregate window "
                   "grew by about one target per RTT and flows were served one after another), 2.70 s at 410e416, "
                   "3.0 s once a queue above target drains, 2.37 s (1.27 x the link-rate limit of 1.87 s) with the "
                   "share; docs/iwa-results.md works out the bound the budget sets: 2.22 s (FIFO without loss: "
                   "1.88 s, with 48 packets: 3.76 s)")
def test_iwa_web6_completes_near_the_link_rate():
    """Issue 11 asks for <= 2.0 s where the link-rate limit is 1.88 s (two RTTs plus the frames at the link
    rate; 1.87 s with the simulator's segments, which carry no timestamps: 2.0 s is 1.07 x); 1.25 x here."""
    assert max(completions(web6("iwa"))) <= 1.25 * link_rate_limit_ns()


# --------------------------------------------------------------------------- windows: every rewritten ACK

@functools.lru_cache(maxsize=None)
def mixed():
    """Stacks and corner cases side by side: each flow's ACKs checked as the server gets them."""
    k = dict(size=SIZE, iw=10)
    flows = [
        Flow(40000, 0, syn_options=LINUX_SYN, **k),
        Flow(40001, 1 * MS, syn_options=WINDOWS_SYN, **k),
        Flow(40002, 2 * MS, syn_options=MACOS_SYN, **k),
        Flow(40003, 3 * MS, syn_options=NO_WS_SYN, rwnd=64240, **k),  # no window scaling
        Flow(40004, 4 * MS, syn_options=LINUX_SYN, synack_ws=None, rwnd=64240, **k),  # the server declines it
        Flow(40005, 5 * MS, rwnd=4 * MSS, **k),  # a client whose own window is smaller than any grant
        Flow(40006, 6 * MS, hidden=("syn",), **k),  # the switch never saw the SYN
        Flow(40007, 7 * MS, lose_synacks=1, **k),  # the first SYN-ACK is lost on the access link
        Flow(40008, 8 * MS, isn=U32 - 20_000, **k),  # sequence numbers wrap during the start phase
    ]
    return Sim(params(), flows, audio=(0, 5000 * MS)).run(6000 * MS)


def test_windows_in_closed_loop_stay_within_floor_own_window_and_never_move_left():
    s = mixed()
    # no segment of a shaped starting flow is lost; past their start phase, flows are CoDel's; the flow whose SYN
    # the switch never saw (40006) is held by no window: its new data is dropped above the target
    assert all((d[3], d[4]) == (Reason.CODEL, TrafficClass.TCP_EST) or (d[1], d[3]) == (40006, Reason.IWA_UNHELD)
               for d in s.drops)
    for f in s.flows.values():
        assert f.done is not None and f.rtos <= (1 if f.port == 40006 else 0), f.port
        prev = None
        for t, ack, field, own, e in f.acks:
            assert field <= own  # never above the client's own window
            # a pause (the floor limit): the edge stays where it was (rounded up to the scale), or is shut at
            # an ACK of all the server sent
            paused = prev is not None and (prev <= e < prev + (1 << f.shift) or e == ack)
            assert e - ack >= min(MSS, own << f.shift) or paused  # never below one MSS (unless the client's own is)
            # the right edge never moves left, but for one retraction: to one MSS (rounded up to the scale)
            # beyond an ACK of all the server sent, once it had left its window unused (docs/iwa.md, "Restarts"),
            # and a pause's shutting
            assert prev is None or e >= prev or (ack == f.end and e - ack < MSS + (1 << f.shift)) or e == ack, \
                (f.port, t)
            prev = e


def test_rewrites_touch_only_the_window_and_keep_the_checksum_valid():
    s = mixed()
    assert len(s.rewrites) > 50
    for port, before, after in s.rewrites:
        at = parse(before).tcp_at
        changed = {i for i in range(len(before)) if before[i] != after[i]}
        assert changed and changed <= set(range(at + 14, at + 18)), port  # window and checksum only
        seg = Ether(after)
        sent = seg[TCP].chksum
        del seg[TCP].chksum
        assert Ether(raw(seg))[TCP].chksum == sent, port  # Scapy recomputes the checksum it lacks
        assert tcp_fields(after).window < tcp_fields(before).window  # only ever lowered


def test_switch_and_server_agree_on_every_edge():
    """The edge the switch keeps (telemetry) is the one the server computes from the forwarded window with the
    scale it negotiated: the switch read the scale right for every stack, unscaled when either side lacks it."""
    s = mixed()
    for port, f in s.flows.items():
        if port == 40006:
            continue  # never shaped: the switch does not know its scale
        switch = [edge(r) for t, p, r in s.grants if p == port]
        assert switch == [e & U32 for _, _, _, _, e in f.acks], port
    shifts = {p: f.shift for p, f in s.flows.items()}
    assert shifts == {40000: 7, 40001: 8, 40002: 6, 40003: 0, 40004: 0, 40005: 7, 40006: 7, 40007: 7, 40008: 7}


def test_closed_loop_corner_cases_are_left_alone():
    s = mixed()
    rewritten = {port for port, _, _ in s.rewrites}
    assert 40006 not in rewritten  # SYN unseen: fail open
    small = [r for t, port, r in s.grants if port == 40005 and r.tflags & TrackFlag.STARTING]
    # a window smaller than the grant passes as the client wrote it (the switch only ever lowers it)
    assert any(r.reason == Reason.UPSTREAM for r in small)
    assert {40000, 40001, 40002, 40003, 40004, 40007, 40008} <= rewritten
    assert s.flows[40007].synacks == 2


@pytest.mark.parametrize("syn,shift", [(LINUX_SYN, 7), (WINDOWS_SYN, 8), (MACOS_SYN, 6)],
                         ids=["linux", "windows", "macos"])
def test_first_window_is_the_room_rounded_up_to_the_client_scale(syn, shift):
    p = pipe()
    _, a = open_flow(p, syn=syn, own=1000)
    assert a.reason == Reason.IWA_WINDOW and a.record.tflags & TrackFlag.FIRST_ACK
    assert room(a) == TARGET_NS  # empty queue, no other flow: all of it (its own reserved frame released)
    want = ns_to_bytes(p.params.iwa, TARGET_NS)
    field = window(a)
    assert (field - 1) << shift < want <= field << shift  # rounded up to the scale: never below the room
    assert edge(a) == 1001 + (field << shift)


@pytest.mark.parametrize("syn,synack_ws", [(NO_WS_SYN, 9), (LINUX_SYN, None)], ids=["syn-without", "synack-without"])
def test_windows_are_unscaled_unless_both_sides_scale(syn, synack_ws):
    p = pipe()
    _, a = open_flow(p, syn=syn, synack_ws=synack_ws, own=64240)
    assert window(a) == ns_to_bytes(p.params.iwa, TARGET_NS)  # bytes, exactly
    assert edge(a) == 1001 + window(a)


def test_a_shift_above_14_counts_as_14():
    """(And a shift that large is too coarse to shape: the client's window passes as it wrote it.)"""
    p = pipe()
    _, a = open_flow(p, syn=[("MSS", 1460), ("WScale", 15)], own=4)
    assert a.reason != Reason.IWA_WINDOW and window(a) == 4 and edge(a) == 1001 + (4 << 14)


@pytest.mark.parametrize("shift,shaped", [(10, True), (11, False), (14, False)])
def test_a_scale_whose_smallest_window_exceeds_one_mss_is_not_shaped(shift, shaped):
    """2^10 = 1024 B <= one MSS (1460 B): windows can still hold a floor; 2^11 = 2048 B cannot."""
    p = pipe()
    _, a = open_flow(p, syn=[("MSS", 1460), ("WScale", shift)], own=1000)
    assert (a.reason == Reason.IWA_WINDOW) == shaped
    data = p.process(RTT + 1 * MS, tcp(1001), 1)
    assert data.cls == (TrafficClass.TCP_START if shaped else TrafficClass.TCP_EST)


def test_a_client_window_smaller_than_the_grant_is_never_raised():
    p = pipe()
    frame = client_ack(1001, 20)  # 2560 B, below the 6.7 kB the room allows
    _, a = open_flow(p, own=20)
    assert a.reason == Reason.UPSTREAM and a.frame == frame and edge(a) == 1001 + (20 << 7)
    p2 = pipe()
    _, b = open_flow(p2, own=5)  # even below one MSS: the floor never raises it either
    assert b.reason == Reason.UPSTREAM and window(b) == 5


def test_the_edge_never_moves_left_when_the_room_is_gone():
    p = pipe()
    _, a = open_flow(p)
    e = edge(a)
    fill(p, RTT + 1 * MS, 12)  # 73 ms of queue: no room for anyone
    for k in range(1, 8):  # the client acks the first segments
        ack = 1001 + k * MSS
        r = p.process(RTT + 2 * MS + k * MS, client_ack(ack, 502), 2)
        assert r.reason == Reason.IWA_WINDOW  # still shaped: not the client's own 64 kB
        new = ack + (window(r) << 7)
        assert new >= e and edge(r) == new  # never left of what the server was given
        assert new - ack >= MSS  # never below one MSS
        e = new


def test_a_flow_whose_syn_the_switch_never_saw_is_never_shaped():
    """Its ACKs pass as the client wrote them, its data is never BEYOND an edge (it was given none), and the part
    of its initial window that would queue beyond the target on its own is dropped (no window holds it)."""
    p = pipe()
    frame = client_ack(1001, 502)
    _, a = open_flow(p, syn_seen=False)
    assert a.reason == Reason.UPSTREAM and a.frame == frame
    res = [p.process(RTT + 2 * MS, tcp(1001 + k * MSS), 1) for k in range(10)]
    assert not any(r.record.tflags & (TrackFlag.BEYOND | TrackFlag.SHAPED) for r in res)
    own = [k * FRAME_NS for k in range(10)]  # its own queue ahead of each frame, alone on the link
    assert [r.decision for r in res] == [Decision.DROP if o > TARGET_NS else Decision.PASS for o in own]
    assert {r.reason for r in res if r.decision == Decision.DROP} == {Reason.IWA_UNHELD}


def test_a_retransmitted_synack_keeps_the_edge_the_server_was_given():
    p = pipe()
    _, a = open_flow(p)  # the client's ACK passes the switch, then is lost on its way to the server
    e, field = edge(a), window(a)
    r = p.process(1022 * MS, syn_ack(1000, ack=5001, options=[("MSS", MSS), ("WScale", 9)]), 1)
    assert r.record.tflags & TrackFlag.TRACKED and not r.record.tflags & TrackFlag.NEW_FLOW
    fill(p, 1161 * MS, 12)  # no room now
    dup = p.process(1162 * MS, client_ack(1001, 502), 2)  # the client answers the retransmission
    assert window(dup) == field and edge(dup) == e


def test_a_retransmitted_synack_reserves_no_second_frame():
    p = pipe()
    p.process(0, client_syn(5000, sport=40000), 2)
    opts = [("MSS", MSS), ("WScale", 9)]
    assert p.process(22 * MS, syn_ack(1000, ack=5001, options=opts), 1).record.tflags & TrackFlag.NEW_FLOW
    again = p.process(400 * MS, syn_ack(1000, ack=5001, options=opts), 1)  # its retransmission
    assert not again.record.tflags & TrackFlag.NEW_FLOW
    _, b = open_flow(p, t=500 * MS, port=40001)  # another flow: A's one frame is still reserved, not two
    assert room(b) == TARGET_NS - FRAME_NS


# --------------------------------------------------------------------------- the share: shaped flows counted

def test_shaped_flows_are_counted_from_their_first_ack_to_the_clients_fin():
    p = pipe()
    open_flow(p, port=40000)
    open_flow(p, t=1 * MS, port=40001)
    assert p.shaper.nflows == 2
    open_flow(p, t=2 * MS, port=40002, syn_seen=False)  # never shaped: not counted
    assert p.shaper.nflows == 2
    p.process(500 * MS, client_ack(1001, flags="FA", sport=40000), 2)
    assert p.shaper.nflows == 1
    p.process(510 * MS, client_ack(1001, flags="FA", sport=40000), 2)  # its FIN again: counted once
    assert p.shaper.nflows == 1
    p.process(520 * MS, client_ack(1001, flags="R", sport=40001), 2)  # a reset flow
    assert p.shaper.nflows == 0
    p.process(530 * MS, client_ack(1001, flags="R", sport=40001), 2)
    assert p.shaper.nflows == 0  # never below zero


def test_a_flow_that_never_closed_is_uncounted_when_its_slot_is_reused():
    p = pipe()
    open_flow(p, port=40000)  # goes silent without a FIN (a keep-alive connection, a killed client)
    assert p.shaper.nflows == 1
    age = params().iwa.age_ns
    open_flow(p, t=age + 1000 * MS, port=40000, isn=77_000)  # the same slot, a new flow after the age
    assert p.shaper.nflows == 1


def test_the_share_is_at_most_one_nth_of_the_path_and_budget():
    from refmodel.shaper import share_shift
    for n in range(1, 300):
        assert 1 / n >= 2.0 ** -share_shift(n) > 0.5 / n  # a power of two: at most 1/n, more than half of it
    assert share_shift(0) == 0


def test_web6_flows_share_the_link_and_finish_together():
    """Without the share the flow whose ACKs came first after the queue drained took the room every round:
    the six flows finished one after another (1.22 to 3.01 s), and after each finish the rest needed rounds
    to fill the link again. With it they finish within 0.7 s of each other (2.01 to 2.65 s with the margin at
    half the share, 2.03 to 2.51 s with IWA 3's at the average window; on BMv2, with Linux's delayed ACKs,
    the half-share margin brought the flows' last segments within 0.5-0.9 s of each other where the average's
    left 0.5-1.7 s: docs/iwa-results.md)."""
    s = web6("iwa")
    done = completions(s)
    assert max(done) - min(done) <= 700 * MS
    assert s.p.shaper.nflows == 0  # every flow closed: none is counted any more


# --------------------------------------------------------------------------- the reserve (issue 11's leak)

@functools.lru_cache(maxsize=None)
def small_responses_then_iw10():
    """40 flows of 400 B, one every 0.5 s (every other one closes, the rest go silent), then an IW10 flow."""
    flows = [Flow(41000 + i, i * 500 * MS, 400, close=i % 2 == 0, isn=10_000 * (i + 1)) for i in range(40)]
    flows.append(Flow(40000, 20_500 * MS, SIZE, isn=5_000_000))
    return Sim(params(), flows).run(23_000 * MS)


def test_small_responses_leak_no_reserve():
    s = small_responses_then_iw10()
    assert s.drops == []
    assert all(f.done is not None for f in s.flows.values())
    first = next(r for t, port, r in s.grants if port == 40000 and r.tflags & TrackFlag.FIRST_ACK)
    assert room(first) == TARGET_NS  # the whole room: nothing left reserved by the 40 earlier flows
    f = s.flows[40000]
    assert f.acks[0][4] - f.acks[0][1] >= ns_to_bytes(params().iwa, TARGET_NS)
    assert f.retransmits == 0


def test_a_handshake_that_never_completes_is_forgotten():
    p = pipe()
    p.process(0, client_syn(5000, sport=40000), 2)
    p.process(22 * MS, syn_ack(1000, ack=5001, options=[("MSS", MSS), ("WScale", 9)]), 1)  # no ACK ever
    _, b = open_flow(p, t=300 * MS, port=40001)
    assert room(b) == TARGET_NS - FRAME_NS  # its frame is held while it may still start
    hold = p.params.iwa.hold_ns
    _, c = open_flow(p, t=3 * hold + 100 * MS, port=40002)
    assert room(c) == TARGET_NS  # ... and forgotten after the hold


def test_an_abandoned_handshake_cannot_be_pinned_by_later_syn_acks():
    """Issue 11: no counter that silent flows can pin. Flows keep starting every 0.5 s (each completes its
    handshake); the one that never did is forgotten within 3 hold_s of its SYN-ACK all the same."""
    p = pipe()
    p.process(0, client_syn(5000, sport=40000), 2)
    p.process(22 * MS, syn_ack(1000, ack=5001, options=[("MSS", MSS), ("WScale", 9)]), 1)  # no ACK ever
    hold = p.params.iwa.hold_ns
    rooms = [room(open_flow(p, t=k * 500 * MS, port=40000 + k)[1]) for k in range(1, 2 * (3 * hold // NS) + 1)]
    assert rooms[0] == TARGET_NS - FRAME_NS  # held at first
    assert rooms[-1] == TARGET_NS  # gone by 3 hold_s


def test_a_first_ack_after_its_frame_was_forgotten_gets_no_more_than_the_target():
    """A handshake longer than the reserve's life (the SYN-ACK retransmitted after 1 s and 2 s): its first
    ACK gives back no frame that is no longer reserved (it did, target + one frame, before 410e416)."""
    p = pipe()
    p.process(0, client_syn(5000, sport=40000), 2)
    opts = [("MSS", MSS), ("WScale", 9)]
    for t in (22 * MS, 1022 * MS, 3022 * MS):  # the SYN-ACK and its retransmissions, lost after the switch
        p.process(t, syn_ack(1000, ack=5001, options=opts), 1)
    a = p.process(3162 * MS, client_ack(1001, 502), 2)
    assert room(a) <= TARGET_NS


# --------------------------------------------------------------------------- established flows

BULK = 10**7


@functools.lru_cache(maxsize=None)
def bulk(aqm, hidden=()):
    """A bulk flow whose client window (80 kB) holds a standing queue of about 160 ms under FIFO."""
    flows = [Flow(41000, 0, BULK, rwnd=80_000, hidden=hidden, close=False)]
    return Sim(params(aqm, 1000 if aqm == "fifo" else 48), flows, audio=(0, 4000 * MS)).run(4000 * MS)


def sojourns(sim, after):
    return sorted(s for t, s in sim.audio if t >= after)


def acked_between(sim, port, t0, t1):
    """Bytes the server saw acknowledged between t0 and t1 (its goodput, from its own ACK record)."""
    acks = [a for t, a, *_ in sim.flows[port].acks if t0 <= t <= t1]
    return acks[-1] - acks[0]


def test_a_shaped_bulk_incumbent_is_held_by_its_window_at_full_throughput():
    """Past its start phase a shaped flow is still window-shaped: the window holds the queue under the target,
    so CoDel (whose target under IWA is IWA's) has nothing to drop and the link stays full."""
    fifo, s = bulk("fifo"), bulk("iwa")
    assert sojourns(fifo, 2000 * MS)[0] > 150 * MS  # FIFO: the audio waits behind the standing queue
    assert not s.drops and s.audio_drops == 0 and s.flows[41000].rtos == 0
    late = sojourns(s, 2000 * MS)
    assert late[-1] <= TARGET_NS  # the standing queue is the window's: under the target, every audio packet
    assert acked_between(s, 41000, 2000 * MS, 4000 * MS) >= 0.95 * acked_between(fifo, 41000, 2000 * MS, 4000 * MS)


def test_an_untracked_bulk_incumbent_is_held_by_drops():
    """A flow whose handshake the switch never saw has no window IWA could shape: its slow start's bursts beyond
    the target are dropped (IWA_UNHELD), CoDel decides for the rest, and the audio stays within its budget. The
    price is the flow's: after the drops of its slow start it regrows by a segment a round trip (Reno) and keeps
    a fraction of FIFO's goodput over the next two seconds (28 %; 66 % under CoDel alone, whose drops come an
    interval later, while the audio waits behind the slow start's queue)."""
    fifo, s = bulk("fifo"), bulk("iwa", ("syn", "synack"))
    assert s.drops and {(d[3], d[4]) for d in s.drops} <= {(Reason.IWA_UNHELD, TrafficClass.TCP_EST),
                                                           (Reason.CODEL, TrafficClass.TCP_EST)}
    assert any(d[3] == Reason.IWA_UNHELD for d in s.drops) and s.audio_drops == 0
    assert audio_max(s) <= BUDGET_NS and audio_max(fifo) > 150 * MS
    assert s.flows[41000].rtos == 0


EDGE_RATE, EDGE_D_CLIENT = 160e3, 250 * MS  # EDGE: one 1514 B frame takes 75.7 ms, IWA's target is that frame


def loss_level2_share(sojourns_ns, budget_ns):
    """The share of audio packets at loss period level >= 2 when those waiting more than ``budget_ns`` are lost
    (the metrics' own levels: ``experiments.metrics.loss_levels``)."""
    return 1 - good_quality(loss_levels(np.array(sojourns_ns) > budget_ns))


def edge_params():
    """IWA at EDGE with the 14-packet (2*BDP) buffer, its target from the 40 ms budget (one frame)."""
    return pipeline_params(EDGE_RATE, "iwa", limit_pkts=14, iwa=dict(target_s=target_for(EDGE_RATE, BUDGET_NS) / NS))


def test_a_lone_flow_at_edge_grows_to_fill_the_link():
    """At EDGE the target is one frame, so the room is never twice what an ACK acknowledges: the margin
    (``margin_holds``) must not hold a flow back when the whole target is free, or a lone flow (with IWA 3's
    margin, always above its own lagging average window) stays at one segment per round trip: 20 kbit/s of
    160 here before the rule looked at the free target. Filling the link costs the audio: delayed ACKs send
    segments in pairs, 150 ms behind one pair now and then. Here 11.4 % of the audio at level >= 2 (judged
    at 80 ms; FIFO about 50 %) with the margin at half the share, 1.3 % with the average window's; on BMv2
    (a bulk flow alone at EDGE, IW10, 3 replications) the other way round: 1.3 % with the half-share margin
    and 112 kbit/s, 10.5 % and 104 kbit/s with the average's (docs/iwa-results.md). Why the simulator's lone flow
    differs from Linux's is not known yet."""
    flow = Flow(41000, 0, BULK, close=False, delack=True)
    s = Sim(edge_params(), [flow], audio=(0, 30_000 * MS), d_client=EDGE_D_CLIENT).run(30_000 * MS)
    goodput = acked_between(s, 41000, 10_000 * MS, 30_000 * MS) * 8 / 20
    assert goodput > 100e3  # of 160 kbit/s, the audio taking about 38 (FIFO here: about 100)
    assert not s.drops and flow.rtos == 0
    assert loss_level2_share(sojourns(s, 10_000 * MS), 80 * MS) < 0.15  # judged at 80 ms: one frame is 75.7


BIG_UDP = raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP(sport=9, dport=9) / Raw(b"x" * 1472))


def test_codel_forgets_a_standing_queue_the_established_flows_did_not_see_end():
    """CoDel's interval starts afresh after the queue was below target, even if only audio saw it."""
    above = TARGET_NS // FRAME_NS + 2  # frames: a queue above CoDel's target (IWA's, under IWA)
    p = pipe()
    t0 = 1000 * MS
    established(p, t0, above)  # an established flow above CoDel's target: its interval starts
    for t in range(50, 1000, 20):
        p.process(t0 + t * MS, audio(), 1)  # ~1 s of empty queue, seen by the audio only
    res = established(p, t0 + 1000 * MS, above + 15, port=45001)  # a queue above CoDel's target again
    assert all(r.decision == Decision.PASS for r in res)  # above target for less than an interval: no drop
    assert all(r.cls == TrafficClass.TCP_EST and r.record.tflags & TrackFlag.SHAPED for r in res)


def flood_times(rng, gap_ns, until_ns):
    """Arrival times of a datagram flood, a gap of U(0.5, 1.5) x ``gap_ns`` apart."""
    t, out = 0, []
    while t < until_ns:
        out.append(t)
        t += int(rng.uniform(0.5, 1.5) * gap_ns)
    return out


def test_datagrams_are_the_standing_queue_controls():
    """IWA cannot shape a datagram flow (QUIC, UDP bulk): it gets the standing-queue control, CoDel at IWA's
    target, as under the codel AQM with the same knobs (no plain tail drop). CoDel's drops fall on full-size
    frames only: the audio's small ones, which the codel AQM drops as readily as any, pass (refmodel.pipeline's
    small_frame)."""
    rng = random.Random(1)  # a flood a little above the link rate, at jittered times, and the audio every 20 ms
    times = [(k * 20 * MS, False) for k in range(200)] + [(t, True) for t in flood_times(rng, 5.2 * MS, 4000 * MS)]
    frames = [(t, BIG_UDP if big else audio()) for t, big in sorted(times)]
    iwa, codel = pipe(), Pipeline(ROUTES, params("codel", codel=dict(target_s=TARGET_NS / 1e9)))
    a = [iwa.process(t, f, 1) for t, f in frames]
    c = [codel.process(t, f, 1) for t, f in frames]
    assert all(r.cls == TrafficClass.UDP for r in a)
    big = [r.reason for (_, f), r in zip(frames, a) if f is BIG_UDP and r.decision == Decision.DROP]
    assert Reason.CODEL in big
    small = [(ri, rc) for (_, f), ri, rc in zip(frames, a, c) if f is not BIG_UDP]
    assert any(rc.reason == Reason.CODEL for _, rc in small)  # the codel AQM drops audio ...
    assert not any(ri.reason == Reason.CODEL for ri, _ in small)  # ... CoDel under IWA never does


# --------------------------------------------------------------------------- the safety net

def ignoring_sender(p, ecn=False):
    """A shaped flow whose sender ignores the window: its whole IW10 right after the first ACK, with the
    queue already at the target (another flow's data). Returns the results of the 10 segments."""
    _, a = open_flow(p)
    fill(p, RTT + 1 * MS, 6)  # 36 ms of queue: above the 27.9 ms target
    return a, [p.process(RTT + 2 * MS, tcp(1001 + k * MSS, tos=2 if ecn else 0), 1) for k in range(10)]


def test_data_beyond_the_edge_is_dropped_while_above_target():
    p = pipe()
    a, res = ignoring_sender(p)
    e = edge(a)
    for k, r in enumerate(res):
        beyond = 1001 + (k + 1) * MSS > e
        assert bool(r.record.tflags & TrackFlag.BEYOND) == beyond
        if beyond:
            assert r.decision == Decision.DROP and r.reason == Reason.IWA_SURPLUS
        else:
            assert r.decision == Decision.PASS
    assert any(r.reason == Reason.IWA_SURPLUS for r in res)


def test_with_ecn_surplus_is_still_dropped():
    p = pipe(ecn=True)
    _, res = ignoring_sender(p, ecn=True)
    assert any(r.reason == Reason.IWA_SURPLUS for r in res)
    assert all(r.decision != Decision.MARK for r in res)
    assert all(r.decision == Decision.DROP for r in res if r.reason == Reason.IWA_SURPLUS)


def test_retransmissions_of_a_starting_flow_pass():
    p = pipe()
    _, res = ignoring_sender(p)
    dropped = [k for k, r in enumerate(res) if r.reason == Reason.IWA_SURPLUS]
    rtx = [p.process(RTT + 3 * MS, tcp(1001 + k * MSS), 1) for k in dropped]  # still above target
    assert all(r.cls == TrafficClass.TCP_RTX and r.decision == Decision.PASS for r in rtx)
    assert all(r.reason == Reason.IWA_RTX for r in rtx)


@functools.lru_cache(maxsize=None)
def web6_ignoring():
    """Six senders that obey their congestion windows only. Their surplus is dropped above target, each loses
    its tail at most twice (two RTOs: 1 + 2 s), so they are done within 8 s."""
    flows = [Flow(40000 + i, 10 * MS + i * MS, SIZE, isn=1_000_000 * (i + 1), ignore_window=True)
             for i in range(6)]
    return Sim(params(), flows, audio=(0, 5000 * MS)).run(8000 * MS)


def test_senders_ignoring_the_window_lose_only_surplus_and_still_complete():
    s = web6_ignoring()
    assert s.drops and {d[3] for d in s.drops} <= {Reason.IWA_SURPLUS, Reason.CODEL}
    assert any(d[3] == Reason.IWA_SURPLUS for d in s.drops)
    assert all(f.done is not None for f in s.flows.values())
    assert s.audio_drops == 0


# --------------------------------------------------------------------------- the option parser

def syn_with_raw_options(opts: bytes, flags="S") -> bytes:
    pad = opts + b"\x00" * (-len(opts) % 4)
    return raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1")
               / TCP(sport=40000, dport=80, flags=flags, dataofs=5 + len(pad) // 4, options=[]) / pad)


@pytest.mark.parametrize("opts,shift", [
    (b"\x03\x03\x07", 7),
    (b"\x01\x01\x03\x03\x07", 7),  # NOPs are one byte
    (b"\x02\x04\x05\xb4\x03\x03\x07", 7),  # MSS, then WS
    (b"\x00\x03\x03\x07", -1),  # EOL ends the list
    (b"\x02\x00\x03\x03\x07", -1),  # length 0: malformed, the walk ends
    (b"\x02\x01\x03\x03\x07", -1),  # length 1: the same
    (b"\x02\x0a\x05\xb4\x03\x03\x07\x01", -1),  # an option running past the end swallows the WS
    (b"\x03\x04\x07\x00", -1),  # a window-scale of another length is skipped, not read
    (b"\x03\x03\x07\x03\x03\x09", 9),  # the last one counts
    (b"\x08\x0a" + b"\x00" * 8 + b"\x01\x03\x03\x0e", 14),  # Linux's TS, NOP, WS 14
], ids=["ws", "nops", "mss-ws", "eol", "len0", "len1", "past-end", "ws-len4", "two-ws", "ts-ws"])
def test_window_scale_option_walk(opts, shift):
    f = syn_with_raw_options(opts)
    assert parse(f).ws_shift == shift
    assert window_scale_option(f, 34 + 20, 40) == shift  # the walk stops at the end of the frame, too


@pytest.mark.parametrize("cut,shift", [(0, 7), (1, -1), (2, -1), (3, -1)])
def test_window_scale_option_in_a_truncated_frame(cut, shift):
    """The frame ends inside the options (the header claims more): read up to the end of the frame only."""
    opts = b"\x02\x04\x05\xb4\x01\x03\x03\x07"
    f = syn_with_raw_options(opts)
    f = f[:34 + 20 + len(opts) - cut]
    assert parse(f).ws_shift == shift
    assert window_scale_option(f, 34 + 20, len(opts)) == shift


def test_window_scale_option_from_the_scapy_layouts_and_only_on_syns():
    assert parse(client_syn(options=LINUX_SYN)).ws_shift == 7
    assert parse(client_syn(options=WINDOWS_SYN)).ws_shift == 8
    assert parse(client_syn(options=MACOS_SYN)).ws_shift == 6
    assert parse(client_syn(options=NO_WS_SYN)).ws_shift == -1
    assert parse(syn_with_raw_options(b"\x03\x03\x07", flags="A")).ws_shift == -1  # not a SYN: not walked
    assert window_scale_option(b"\x03", 0, 5) == -1 and window_scale_option(b"\x03\x03", 0, 5) == -1
    assert window_scale_option(b"", 0, 40) == -1


# --------------------------------------------------------------------------- collisions and aging

@functools.lru_cache(maxsize=None)
def colliding_flow(base=40000) -> tuple[int, int]:
    """(client port, server port) of a flow between the same two hosts that lands in the slot of client port
    ``base`` with server port 80 (with another signature). The server port differs too: with the client port
    alone no two flows share a slot (``test_connections_between_two_hosts_never_share_a_slot``)."""
    pkt = parse(syn_ack(dport=base))
    ref = flow_hash(pkt)
    for server in range(81, 65535):
        for port in range(base + 1, base + 257):
            h = flow_hash(dataclasses.replace(pkt, sport=server, dport=port))
            if h & (FLOW_SLOTS - 1) == ref & (FLOW_SLOTS - 1) and h >> 8 != ref >> 8:
                return port, server
    raise AssertionError("no collision found")


def test_connections_between_two_hosts_never_share_a_slot():
    """The slot is the CRC-32's low bits, linear in the 5-tuple: two flows share one when their keys differ by a
    value the map sends to 0. With FLOW_SLOTS = 2^16 no client-port difference is such a value, so the
    connections of a client to one server port (a browser's keep-alive pool, each port held for minutes) never
    collide; with 2^12 slots 15 differences did, e.g. 0x7054 (40000 and 40000 ^ 0x7054 share a slot there).
    Checked with zlib's CRC-32 over every client port, not with the tracker."""
    key = lambda port: struct.pack("!IIHHB", 0x0A000001, 0x0A000002, 80, port, 6)  # noqa: E731
    slots = {zlib.crc32(key(port)) & (FLOW_SLOTS - 1) for port in range(65536)}
    assert len(slots) == 65536
    assert zlib.crc32(key(40000)) & 0xFFF == zlib.crc32(key(40000 ^ 0x7054)) & 0xFFF  # the 12-bit slot's collision
    sa = parse(syn_ack(sport=80, dport=40000, src="10.0.0.1", dst="10.0.0.2"))
    assert flow_hash(sa) == zlib.crc32(key(40000))  # the tracker's hash is that CRC


def test_hash_collision_fails_open_and_aging_frees_the_slot():
    p = Pipeline(ROUTES, pipeline_params(RATE, "iwa", limit_pkts=48, iwa=dict(IWA, hold_s=1.0, age_s=2.0)))
    other, server = colliding_flow()
    sa, a = open_flow(p, port=40000)
    assert sa.record.tflags & TrackFlag.NEW_FLOW and a.reason == Reason.IWA_WINDOW
    sb, b = open_flow(p, t=200 * MS, port=other, server_port=server)
    assert sb.record.tflags & TrackFlag.COLLISION
    assert b.reason == Reason.UPSTREAM and b.record is None  # the slot is taken: never shaped, no record
    fill(p, 400 * MS, 8)  # above target
    burst = [p.process(401 * MS, tcp(1001 + k * MSS, sport=server, dport=other), 1) for k in range(10)]
    assert all(r.cls == TrafficClass.TCP_EST and r.reason != Reason.IWA_SURPLUS for r in burst)
    assert p.process(402 * MS, tcp(1001, dport=40000), 1).cls == TrafficClass.TCP_START  # still the owner's
    sb, _ = open_flow(p, t=2_500 * MS, port=other, server_port=server)  # after age_s the slot is free again
    assert sb.record.tflags & TrackFlag.NEW_FLOW


def test_a_flow_that_keeps_sending_keeps_its_slot_and_its_shaping_past_age():
    """Slots age from a flow's latest downstream packet. IWA 2's first version aged them from the SYN-ACK: on
    BMv2 a bulk flow lost its shaping ten seconds in, the server sent its congestion window back to back and
    the audio waited 211 ms."""
    prm = pipeline_params(RATE, "iwa", limit_pkts=48, iwa=dict(IWA, age_s=1.0))
    s = Sim(prm, [Flow(39000, start=10 * MS, size=10**9, isn=7)], audio=(0, 4000 * MS)).run(4000 * MS)
    assert [t for t, _, r in s.grants if t > 3000 * MS and r.reason == Reason.IWA_WINDOW]  # still shaped at 3 s
    assert not s.drops and audio_max(s) <= BUDGET_NS


def test_a_colliding_syn_leaves_both_flows_unshaped():
    """The SYN register is per slot: a colliding SYN before the first flow's SYN-ACK overwrites it, and the
    first flow then starts unshaped (fail open) instead of with the wrong scale."""
    p = pipe()
    other, server = colliding_flow()
    p.process(0, client_syn(5000, sport=40000), 2)
    p.process(1 * MS, client_syn(5000, WINDOWS_SYN, sport=other, dport=server), 2)
    opts = [("MSS", MSS), ("WScale", 9)]
    p.process(22 * MS, syn_ack(1000, dport=40000, ack=5001, options=opts), 1)
    a = p.process(RTT, client_ack(1001, 502, sport=40000), 2)
    assert a.reason == Reason.UPSTREAM and window(a) == 502


def test_start_phase_ends_one_rtt_plus_target_after_the_first_byte():
    p = pipe()
    _, a = open_flow(p)  # RTT at the switch: SYN to first ACK
    end = 1001 + ns_to_bytes(p.params.iwa, RTT + TARGET_NS)
    before = p.process(RTT + 1 * MS, tcp(end - MSS), 1)
    after = p.process(RTT + 2 * MS, tcp(end), 1)
    assert before.cls == TrafficClass.TCP_START and after.cls == TrafficClass.TCP_EST


def test_data_before_the_first_ack_is_starting():
    p = pipe()
    p.process(0, client_syn(5000), 2)
    p.process(22 * MS, syn_ack(1000, ack=5001, options=[("MSS", MSS), ("WScale", 9)]), 1)
    assert p.process(30 * MS, tcp(1001 + 100 * MSS), 1).cls == TrafficClass.TCP_START


def test_window_field_offset_is_where_scapy_puts_it():
    f = client_ack(1001, 502)
    at = parse(f).tcp_at
    assert struct.unpack_from("!H", f, at + 14)[0] == 502 == tcp_fields(f).window


# --------------------------------------------------------------------------- a window at its floor: at_floor's rules


def floor_case(**kw) -> Floor:
    """``at_floor`` for an ACK at 1000 of a flow that sent up to 1000, its edge at the ACK; ``beyond``: sixteen flows
    whose span is ten MSS (each one's share below one MSS), else one; ``full``: also the grants more than a frame
    above target."""
    p = params()
    beyond, full = kw.pop("beyond", True), kw.pop("full", True)
    args = dict(state=FLOW_SHAPE, first=False, cutting=False, acked=0, payload=0,
                granted=p.iwa.target_ns + 2 * p.queue.mtu_ns if full else 0, queue_ns=0, mtu_ns=p.queue.mtu_ns,
                span=10 * MSS, nflows=16 if beyond else 1, ack=1000, seqhi=1000, edge=1000)
    args.update(kw)
    return at_floor(p.iwa, args.pop("state"), **args)


def test_a_first_window_without_room_is_shut_and_only_beyond_the_floor_limit():
    assert floor_case(first=True) == Floor(1000, FLOW_SHAPE | FLOW_SHUT)
    assert floor_case(first=True, full=False).want is None  # room for its floor
    assert floor_case(first=True, beyond=False).want is None  # below the floor limit: its floor, whatever the queue


def test_a_shut_window_is_held_once_by_a_probes_answer_then_reopened():
    shut = FLOW_SHAPE | FLOW_SHUT
    assert floor_case(state=shut) == Floor(1000, shut | FLOW_HELD)  # no room: held
    assert floor_case(state=shut | FLOW_HELD) == Floor(None, FLOW_SHAPE)  # the next answer reopens it
    assert floor_case(state=shut, full=False) == Floor(None, FLOW_SHAPE)  # room: reopened at once


def test_a_request_on_a_shut_window_reopens_it_once_there_is_room_but_never_holds_it():
    shut = FLOW_SHAPE | FLOW_SHUT
    assert floor_case(state=shut, payload=120) == Floor(1000, shut)  # no room: still shut, not held
    assert floor_case(state=shut | FLOW_HELD, payload=120) == Floor(1000, shut | FLOW_HELD)
    assert floor_case(state=shut, payload=120, full=False) == Floor(None, FLOW_SHAPE)
    assert floor_case(state=shut, payload=120, beyond=False) == Floor(None, FLOW_SHAPE)


def test_a_floor_that_would_overflow_the_buffer_waits_even_below_the_floor_limit():
    """The floor cap (``IwaParams.floor_cap_ns``, 48 packets here: a quarter of them as frames): a first
    window whose floor would join more grants than that is shut, and a shut window stays shut (its probe's
    answer holds it, the next too) until the grants are back within it, whatever the floor limit says."""
    p = params()
    cap, shut = p.iwa.floor_cap_ns, FLOW_SHAPE | FLOW_SHUT
    assert cap == 48 * p.queue.mtu_ns // 4
    assert floor_case(first=True, beyond=False, granted=cap + 1) == Floor(1000, shut)
    assert floor_case(first=True, beyond=False, granted=cap).want is None
    assert floor_case(state=shut | FLOW_HELD, granted=cap + 1) == Floor(1000, shut | FLOW_HELD)  # not reopened
    assert floor_case(state=shut | FLOW_HELD, granted=cap) == Floor(None, FLOW_SHAPE)
    assert floor_case(state=shut, payload=120, beyond=False, granted=cap + 1) == Floor(1000, shut)
    assert floor_case(state=shut, beyond=False, granted=cap + 1) == Floor(1000, shut | FLOW_HELD)


def test_the_floor_cap_is_a_quarter_of_a_packet_buffer_half_of_a_byte_buffer_never_below_the_room():
    from refmodel.params import pipeline_params
    pkts = pipeline_params(2e6, "iwa", limit_pkts=48)
    assert pkts.iwa.floor_cap_ns == 12 * pkts.queue.mtu_ns  # 24 floors of two half-size segments, halved
    byte = pipeline_params(2e6, "iwa", limit_bytes=72_000)
    assert byte.iwa.floor_cap_ns == byte.queue.limit_ns // 2
    tiny = pipeline_params(2e6, "iwa", limit_pkts=6)  # pam13radio's 2 BDP: the cap would be below the room
    assert tiny.iwa.floor_cap_ns == tiny.iwa.target_ns + tiny.queue.mtu_ns
    assert pipeline_params(2e6, "iwa").iwa.floor_cap_ns == 0  # no buffer limit: no cap


def test_a_pause_keeps_the_edge_and_shuts_the_window_once_all_sent_is_acknowledged():
    p = params()
    above = dict(cutting=True, acked=MSS, queue_ns=p.iwa.target_ns + 2 * p.queue.mtu_ns, beyond=False)
    assert floor_case(**above) == Floor(1000, FLOW_SHAPE | FLOW_PAUSED | FLOW_SHUT, True)
    assert floor_case(**above, seqhi=3000, edge=1500) == Floor(1500, FLOW_SHAPE | FLOW_PAUSED, True)
    assert floor_case(**above, state=FLOW_SHAPE | FLOW_PAUSED).want is None  # once an epoch below the limit
    assert floor_case(**{**above, "beyond": True}, state=FLOW_SHAPE | FLOW_PAUSED).paused  # beyond it, again
    assert floor_case(**{**above, "queue_ns": p.iwa.target_ns}).want is None  # the real queue at target: no pause


# --------------------------------------------------------------------------- a page beyond the floor limit


def page50(spacing_ns: int) -> Sim:
    """A 1 MB page over 50 parallel connections at HSPA (48 packets), opened ``spacing_ns`` apart."""
    flows = [Flow(40000 + i, start=10 * MS + i * spacing_ns, size=20_000, isn=1_000_000 * (i + 1), delack=True,
                  half_wnd=True) for i in range(50)]
    return Sim(params(), flows, audio=(0, 8_000 * MS)).run(12_000 * MS)


def test_a_page_of_50_connections_waits_for_its_probes_instead_of_overflowing():
    """Fifty connections are beyond the floor limit at HSPA (about 30 floors fill the path and the target). As a
    browser opens them, a few milliseconds apart, the first windows that find no room are shut and their servers
    wait for their zero-window probes (docs/iwa.md, "At the floor"): no drop, no retransmission, and the audio
    within its budget but for 1.6 % of it at level >= 2. When every first window was its floor, the queue stayed
    high enough for CoDel to drop three segments (three timeouts), and 7.2 % of the audio was at level >= 2."""
    s = page50(4 * MS)
    flows = list(s.flows.values())
    assert all(f.done for f in flows)
    assert not s.drops and sum(f.retransmits for f in flows) == 0
    assert sum(1 for f in flows if f.probes) >= 10  # shut windows, reopened by probes' answers
    end = max(f.start + f.done for f in flows)
    assert loss_level2_share([x for t, x in s.audio if t <= end], 40 * MS) < 0.03


# --------------------------------------------------------------------------- Linux's half-size segments at EDGE

def edge_web6(half_wnd):
    flows = [Flow(40000 + i, start=1000 * MS, size=SIZE, isn=1_000_000 * (i + 1), delack=True, half_wnd=half_wnd)
             for i in range(6)]
    return Sim(edge_params(), flows, audio=(0, 40_000 * MS), d_client=EDGE_D_CLIENT).run(40_000 * MS)


def test_half_size_segments_no_longer_overload_edge():
    """At EDGE six flows are beyond the floor limit (each one's share of path and budget below one MSS). A Linux
    server halves its segments for the flow's life while the largest window it saw is under two MSS
    (tcpsim's ``half_wnd``): twice the headers on a link the floors already fill. When every first window was
    its floor (IWA before the shut first windows), that put the audio (judged at 80 ms) at 7.1 % at level >= 2
    against 1.4 % with full-size segments. Now the first windows that find no room are shut and wait for
    their server's zero-window probe, and the half-size case is within a point of the full-size one (1.8 %
    and 1.5 % here), without a retransmission; the shut flows probed."""
    shares = {}
    for half_wnd in (False, True):
        s = edge_web6(half_wnd)
        assert sum(f.retransmits for f in s.flows.values()) == 0
        assert any(f.probes for f in s.flows.values())
        mean_segment = 6 * SIZE / len(s.data)  # (no retransmission: every segment is new data)
        assert (mean_segment < 0.75 * MSS) if half_wnd else (mean_segment > 0.95 * MSS), mean_segment
        end = 1000 * MS + max(f.done for f in s.flows.values())
        shares[half_wnd] = loss_level2_share([x for t, x in s.audio if 1000 * MS <= t <= end], 80 * MS)
    assert shares[False] < 0.03 and shares[True] < 0.03 and abs(shares[True] - shares[False]) < 0.01, shares
