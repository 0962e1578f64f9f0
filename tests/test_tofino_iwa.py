"""IWA's start shaper cut into Tofino 2 passes (refmodel/tofino_iwa.py) against the v1model IWA (refmodel/shaper.py,
the oracle), in tcpsim's closed loop (tools/iwa_twin.py: the seeds' HSPA workloads) and frame by frame: every
register touched at most once per pass, the grants packet for packet when a packet's second pass follows its
first at once, the 32-bit times kept serial by ticks, and what the race between the passes changes."""

from __future__ import annotations

import functools

import pytest
from frames import LINUX_SYN, MSS, client_ack, client_syn, syn_ack, tcp
from tcpsim import ROUTES, Flow, Sim

from refmodel import Pipeline
from refmodel.constants import FLOW_PAUSED
from refmodel.params import ConfigError, bytes_to_ns, pipeline_params
from refmodel.tofino_iwa import TICK_PERIOD_MAX, Op, Pass2, PassViolation, TnaShaper, check_hold, scale_up
from tools.iwa_twin import RATE, TARGET_S, WORKLOADS, flows, run, seeds

MS = 1_000_000
US = 1_000
PARAMS = pipeline_params(RATE, "iwa", limit_pkts=48, iwa=dict(target_s=TARGET_S))
D_SERVER, RTT = 11 * MS, 162 * MS
AUDIO_POINTS = 0.5   # issue 34: the audio at level >= 2 within half a point of the v1model IWA's
COMPLETION = 0.05    # ... and the web completions within 5 %


@functools.lru_cache(maxsize=None)
def outcome(workload: str, lag_ns: int | None, seed: int = 1):
    return run(workload, lag_ns, seed)


def grants(flows: list[Flow], until: int, twin: TnaShaper | None, ticks: bool = True) -> list[tuple]:
    """Every tracked upstream ACK's telemetry (time, port, slot and edge, advance and room) in tcpsim."""
    pipe = Pipeline(ROUTES, PARAMS)
    sim = Sim(None, flows, audio=(0, until), pipeline=pipe)
    if twin is not None:
        pipe.shaper = twin
        for t in range(0, until, TICK_PERIOD_MAX) if ticks else ():
            sim.at(t, twin.tick, PARAMS.iwa, 0, t)
    sim.run(until)
    return [(t, port, r.s1, r.s2) for t, port, r in sim.grants]


def web6(t0: int) -> list[Flow]:
    return [Flow(40000 + i, start=t0 + i * MS, size=62_000, isn=1_000_000 * (i + 1), delack=True) for i in range(6)]


# --------------------------------------------------------------------------- the passes' rules


@pytest.mark.parametrize("workload", ["web6", "web6-bulk"])
def test_with_its_second_pass_at_once_the_twin_grants_as_the_v1model(workload):
    """Packet for packet: every ACK's edge, advance and room. The web6-bulk run lasts 10 s, so its 32-bit times
    wrap twice (2^32 ns = 4.3 s) and the ticks' pull-ups are exercised."""
    fl, until = flows(workload)
    v1 = grants(fl, until, None)
    fl, until = flows(workload)
    twin = TnaShaper(0)
    assert grants(fl, until, twin) == v1
    assert len(v1) > 200 and twin.between == 0 and twin.log.passes > len(v1)


def test_ticks_keep_the_virtual_queue_serial_across_a_silence():
    """Two pages 5.5 s apart: the link's virtual queue, last moved by the first page's grants (before 2.7 s),
    is about 3 s in the past at the second page's first ACKs. The v1model's is 64-bit. With ticks (every
    100 ms: a virtual queue in the past is pulled up to now) the twin grants as the v1model; without them, 3 s
    back as a 32-bit serial number reads 1.2 s ahead, and the second page's flows see no room."""
    until = 9_000 * MS

    def pages() -> list[Flow]:  # (tcpsim's flows keep their state: new ones for every run)
        return web6(10 * MS) + [Flow(40100 + i, start=5_500 * MS + i * MS, size=62_000, isn=7_000_000 * (i + 1),
                                     delack=True) for i in range(6)]
    v1 = grants(pages(), until, None)
    assert grants(pages(), until, TnaShaper(0)) == v1
    assert grants(pages(), until, TnaShaper(0), ticks=False) != v1


def test_a_second_access_in_one_pass_is_caught(monkeypatch):
    """The checker is live: an ACK's first pass that read its flow's edge twice is refused."""
    twin = TnaShaper(0)
    read = twin.flow_edge.read
    monkeypatch.setattr(twin.flow_edge, "read", lambda i: (read(i), read(i))[1])
    with pytest.raises(PassViolation, match="flow_edge"):
        grants(web6(10 * MS), 1_000 * MS, twin)


def test_the_second_pass_header_fits_tofino_2s_resubmission():
    """op (12 bits: every Op), the window field, the scale, the virtual queue's addition and UNCOUNT's word:
    96 of 96 bits, none to spare (every header of every run is checked as its second pass runs: ``_pass2``)."""
    every = Op(0)
    for op in Op:
        every |= op
    assert every < 1 << 12 and Pass2(every, 0xFFFF, 14, 0xFFFFFFFF, 0xFFFFFFFF).fits()
    assert not Pass2(Op(0x1000)).fits() and not Pass2(Op.UNCOUNT, word=1 << 32).fits()
    assert not Pass2(Op.EDGE, 1 << 16).fits() and not Pass2(Op.VQ, vq_ns=1 << 32).fits()


def test_a_hold_beyond_serial_time_is_refused():
    check_hold(1_000_000_000)
    with pytest.raises(ConfigError, match="2\\^31"):
        check_hold(1_050_000_000)


@pytest.mark.parametrize("scale", range(15))
def test_the_scale_table_rounds_up_as_the_shift(scale):
    for n in (0, 1, MSS, 62_000, (1 << 30) - 1):
        f = scale_up(n, scale)
        assert f << scale >= n and (f - 1) << scale < n if n else f == 0


# --------------------------------------------------------------------------- the race between the passes


def handshake(p: Pipeline, t: int, port: int, isn: int) -> None:
    """A client's SYN at t and the server's SYN-ACK 2 d_server later (the first ACK is the caller's)."""
    p.process(t, client_syn(5000, LINUX_SYN, sport=port), 2)
    p.process(t + 2 * D_SERVER, syn_ack(isn, dport=port, ack=5001, options=[("MSS", MSS), ("WScale", 9)]), 1)


def first_acks(lag_ns: int | None) -> tuple[int, int, Pipeline]:
    """Two flows whose first ACKs come 1 µs apart: the edges each is given (bytes beyond its ISN)."""
    p = Pipeline(ROUTES, PARAMS)
    if lag_ns is not None:
        p.shaper = TnaShaper(lag_ns)
    handshake(p, 0, 40000, 1000)
    handshake(p, 0, 40001, 900_000)
    a = p.process(RTT, client_ack(1001, 502, sport=40000), 2).record.s1 & 0xFFFFFFFF
    b = p.process(RTT + US, client_ack(900_001, 502, sport=40001), 2).record.s1 & 0xFFFFFFFF
    return a - 1001, b - 900_001, p


def test_a_grant_between_anothers_passes_sees_the_room_before_it():
    """Flow B's first ACK comes between flow A's two passes: B's first pass reads the virtual queue before A's
    grant is in it and takes the same room. The excess is bounded by A's grant; once both second passes ran,
    the virtual queue holds both grants (added, not overwritten), so the next ACK sees the queue they build."""
    a1, b1, _ = first_acks(None)
    a0, b0, _ = first_acks(0)
    assert (a0, b0) == (a1, b1) and b1 < a1
    ar, br, pr = first_acks(10 * US)
    assert ar == a1 and b1 < br <= b1 + a1
    assert pr.shaper.between == 1
    pr.shaper.settle(RTT + 20 * US)
    assert not pr.shaper.pending
    # both grants are in the virtual queue: it reaches as far as the two windows' drain times from their ACKs
    vq = pr.shaper.iwa_vq.cells[0]
    assert vq >= RTT + bytes_to_ns(PARAMS.iwa, ar) + bytes_to_ns(PARAMS.iwa, br) - 2 * MSS * 4000


def one_flows_two_acks(lag_ns: int | None) -> tuple[int, int, int, int, Pipeline]:
    """A flow's first ACK, four segments of data, then two ACKs 1 µs apart: (slot, the edge after the first ACK,
    the edges the two ACKs report)."""
    p = Pipeline(ROUTES, PARAMS)
    if lag_ns is not None:
        p.shaper = TnaShaper(lag_ns)
    handshake(p, 0, 40000, 1000)
    r = p.process(RTT, client_ack(1001, 502, sport=40000), 2).record
    slot, e0 = r.s1 >> 32, r.s1 & 0xFFFFFFFF
    for k in range(4):
        p.process(RTT + 2 * D_SERVER + k * US, tcp(1001 + k * MSS), 1)
    t = 2 * RTT
    e1 = p.process(t, client_ack(1001 + MSS, 502, sport=40000), 2).record.s1 & 0xFFFFFFFF
    e2 = p.process(t + US, client_ack(1001 + 2 * MSS, 502, sport=40000), 2).record.s1 & 0xFFFFFFFF
    if lag_ns:
        p.shaper.settle(t + MS)
    return slot, e0, e1, e2, p


def test_two_acks_of_one_flow_between_its_passes_never_move_its_edge_left():
    """The second ACK's first pass reads the edge before the first's second pass wrote it: its grant is worked
    out from the old edge, and pass 2 keeps the larger edge. So the server is never given less than before, and
    no more than the v1model gives it; what an ACK acknowledged is counted once (flow_ack: pass 1's
    read-modify-write)."""
    _, v0, v1, v2, _ = one_flows_two_acks(None)
    assert one_flows_two_acks(0)[1:4] == (v0, v1, v2) and v0 < v1 < v2
    slot, e0, e1, e2, p = one_flows_two_acks(10 * US)
    twin = p.shaper
    assert twin.flow_ack.cells[slot] == 1001 + 2 * MSS and twin.between == 1
    assert (e0, e1) == (v0, v1) and e0 <= e2 < v2
    assert twin.flow_edge.cells[slot] == max(e1, e2) <= v2


# --------------------------------------------------------------------------- against the v1model IWA, closed loop


@pytest.mark.parametrize("workload", WORKLOADS)
def test_the_twin_meets_issue_34s_targets_with_a_resubmissions_lag(workload):
    """With its second passes 1 µs late (a resubmission's order) the twin's audio at level >= 2 is within half a
    point of the v1model IWA's and its mean web completion within 5 %, over the workload's draws (users5: three,
    tools/iwa_twin.py says why); as many flows complete, no drops, no RTOs. tools/iwa_twin.py prints these
    numbers and the 1 ms stress case for docs/tofino.md."""
    v1 = [outcome(workload, None, s) for s in seeds(workload)]
    twin = [outcome(workload, US, s) for s in seeds(workload)]
    print(f"{workload}: v1model {v1}\n  twin 1 us {twin}")

    def mean(os: list, key: str) -> float:
        return sum(getattr(o, key) for o in os) / len(os)
    assert abs(mean(twin, "level2") - mean(v1, "level2")) <= AUDIO_POINTS
    assert abs(mean(twin, "mean_done") - mean(v1, "mean_done")) <= COMPLETION * mean(v1, "mean_done")
    assert all(t.incomplete == v.incomplete == 0 for t, v in zip(twin, v1))
    assert all(t.drops == v.drops and t.rtos <= v.rtos for t, v in zip(twin, v1))


# --------------------------------------------------------------------------- the rarer paths, against the v1model


def test_keepalive_restarts_and_retractions_are_granted_as_the_v1model():
    """Six kept-alive connections asked for a page every 2 s (each response a new start after idle): the idle
    server's ACKs open nothing, its window is retracted once all it sent is acknowledged (pass 2 sets the edge
    instead of taking the larger), and the next request restarts it from one MSS; packet for packet."""
    def conns() -> list[Flow]:
        return [Flow(40000 + i, start=1_000 * MS + i * MS // 5, size=30_000, isn=1_000_000 * (i + 1), delack=True,
                     half_wnd=True, more=[(2_000 * MS, 30_000)] * 3) for i in range(6)]
    until = 9_000 * MS
    twin = TnaShaper(0)
    ops: list[Op] = []
    pass2 = twin._pass2
    twin._pass2 = lambda p, h, now: (ops.append(h.op), pass2(p, h, now))[1]
    assert grants(conns(), until, twin) == grants(conns(), until, None)
    assert sum(bool(op & Op.RETRACT) for op in ops) >= 6


def test_flows_whose_scale_is_too_coarse_are_left_unshaped_as_the_v1model():
    """web6 with two clients whose window scale is 12 (every window a multiple of 4 kB): the twin leaves them
    unshaped (iwa_scale's row says 2^12 > one MSS) and grants the other four as the v1model does."""
    def page() -> list[Flow]:
        fl = web6(10 * MS)
        for f in fl[:2]:
            f.syn_options = [("MSS", 1460), ("WScale", 12)]
        return fl
    twin = TnaShaper(0)
    assert grants(page(), 4_000 * MS, twin) == grants(page(), 4_000 * MS, None)
    assert sum(1 for info in twin.flow_link.cells if info and info.shape) == 4


@pytest.mark.parametrize("nflows", [20, 50])
def test_pauses_beyond_the_floor_limit_are_granted_as_the_v1model(nflows):
    """Pages of 20 and 50 parallel connections: flows at their floor pause (pass 2 sets FLOW_PAUSED, and sets a
    shut window's edge instead of taking the larger), packet for packet as the v1model; beyond the floor limit
    (50 flows at HSPA; 20 are at its edge) a flow pauses again within an epoch, first windows are shut (SHUT),
    probes' answers held (HELD) and shut windows reopened (OPEN), each written by pass 2."""
    def page() -> list[Flow]:
        return [Flow(40000 + i, start=10 * MS + i * 300 * US, size=1_000_000 // nflows, isn=1_000_000 * (i + 1),
                     delack=True, half_wnd=True) for i in range(nflows)]
    until = 8_000 * MS
    twin = TnaShaper(0)
    again: list[bool] = []  # per pause: the flow had paused in this epoch already (its state as pass 2 found it)
    pass2 = twin._pass2

    ops = Op(0)

    def spy(p, h, now):
        nonlocal ops
        ops |= h.op
        if h.op & Op.PAUSE:
            again.append(bool(twin.flow_state.cells[h.slot] & FLOW_PAUSED))
        return pass2(p, h, now)
    twin._pass2 = spy
    assert grants(page(), until, twin) == grants(page(), until, None)
    assert again and (nflows < 50 or any(again))
    assert nflows < 50 or ops & (Op.SHUT | Op.HELD | Op.OPEN) == Op.SHUT | Op.HELD | Op.OPEN


def open_flow(p: Pipeline, t: int, port: int, isn: int) -> None:
    handshake(p, t, port, isn)
    p.process(t + RTT, client_ack(isn + 1, 502, sport=port), 2)


@pytest.mark.parametrize("lag_ns", [0, 10 * US])
def test_a_slot_reused_by_a_new_flow_uncounts_the_old_one_in_a_second_pass(lag_ns):
    """A flow that sent no data for the slot's age but still ACKs (so it is counted) when a new flow takes its
    slot: the SYN-ACK rolls its own link's counts in pass 1 and uncounts the displaced flow in pass 2, leaving
    the v1model's counts. The 11 s between them need the ticks (the epoch's start is a 32-bit time)."""
    age, t = PARAMS.iwa.age_ns, PARAMS.iwa.age_ns + 1_000 * MS
    counts = []
    for twin in (None, TnaShaper(lag_ns)):
        p = Pipeline(ROUTES, PARAMS)
        if twin is not None:
            p.shaper = twin
        open_flow(p, 0, 40000, 1000)
        open_flow(p, 0, 40001, 500_000)
        seen = [p.shaper.nflows]
        for tick in range(TICK_PERIOD_MAX, t, TICK_PERIOD_MAX):
            if twin is not None:
                twin.tick(PARAMS.iwa, 0, tick)
        p.process(t - 2 * MS, client_ack(1001, 502, sport=40000), 2)      # both still ACK: counted
        p.process(t - MS, client_ack(500_001, 502, sport=40001), 2)
        seen.append(p.shaper.nflows)
        handshake(p, t - 2 * D_SERVER, 40000, 77_000)                     # the same slot, a new flow
        if twin is not None:
            twin.settle(t + MS)
            assert not twin.pending
        seen.append(p.shaper.nflows)
        counts.append(seen)
    assert counts[0] == counts[1] == [2, 2, 1]
