"""The initial-window-aware AQM on constructed bursts (the seeds' web6 case at HSPA)."""

from frames import MSS, audio, iw_burst, syn_ack, tcp

from refmodel import Decision, Pipeline, Reason, Route, TrafficClass
from refmodel.constants import FLOW_SLOTS
from refmodel.flows import flow_hash
from refmodel.packet import parse
from refmodel.params import pipeline_params

MS = 1_000_000
ROUTES = {1: Route(2, True), 2: Route(1, False)}
IWA = dict(target_s=0.040, allowance_bytes=MSS)


def web6_burst(aqm, flows=6, iw=10, audio_n=40, **iwa):
    """SYN-ACKs at t = 0, then all initial windows at once at t = 80 ms (one RTT later),
    with 20 ms CBR audio throughout; HSPA, 2*BDP = 48 packets of buffer."""
    p = Pipeline(ROUTES, pipeline_params(2e6, aqm, limit_pkts=48, iwa=iwa or IWA))
    syn_acks, segs = iw_burst(flows, iw)
    events = [(0, f) for f in syn_acks] + [(80 * MS, s) for s in segs]
    events += [(i * 20 * MS + 1, audio(i)) for i in range(audio_n)]
    events.sort(key=lambda e: e[0])
    return p, [(t, f, p.process(t, f, 1)) for t, f in events]


def audio_results(res):
    return [r for _, f, r in res if r.cls == TrafficClass.UDP]


def test_fifo_lets_the_burst_delay_the_audio():
    _, res = web6_burst("fifo")
    worst = max(r.record.sojourn_ns for r in audio_results(res))
    assert worst > 200 * MS


def test_iwa_keeps_the_audio_under_target_through_6_x_iw10():
    _, res = web6_burst("iwa")
    aud = audio_results(res)
    assert all(r.decision == Decision.PASS for r in aud)
    assert max(r.record.sojourn_ns for r in aud) <= 40 * MS


def test_iwa_gives_every_starting_flow_its_allowance():
    _, res = web6_burst("iwa")
    passed_per_flow = {}
    for _, f, r in res:
        if r.cls == TrafficClass.TCP_START and r.decision == Decision.PASS:
            port = parse(f).dport
            passed_per_flow[port] = passed_per_flow.get(port, 0) + 1
    assert len(passed_per_flow) == 6 and min(passed_per_flow.values()) >= 1
    surplus = [r for _, _, r in res if r.reason == Reason.IWA_SURPLUS]
    assert surplus and all(r.cls == TrafficClass.TCP_START for r in surplus)


def test_retransmissions_of_dropped_segments_pass():
    p, res = web6_burst("iwa", audio_n=4)  # stop at t = 80 ms: the queue is still full
    dropped = [f for _, f, r in res if r.reason == Reason.IWA_SURPLUS]
    # retransmit them immediately, while the queue is still above target
    rtx = [p.process(81 * MS, f, 1) for f in dropped[:5]]
    assert all(r.cls == TrafficClass.TCP_RTX and r.decision == Decision.PASS for r in rtx)
    assert any(r.reason == Reason.IWA_RTX for r in rtx)


def test_established_flows_are_never_early_dropped():
    # a flow whose SYN-ACK the switch never saw, sending a big burst
    p = Pipeline(ROUTES, pipeline_params(2e6, "iwa", limit_pkts=48, iwa=IWA))
    res = [p.process(0, tcp(seq=1 + k * MSS, dport=50000), 1) for k in range(40)]
    assert all(r.cls == TrafficClass.TCP_EST and r.decision == Decision.PASS for r in res)


def test_flow_leaves_start_phase_after_window_and_start_bytes():
    iwa = dict(target_s=0.040, allowance_bytes=MSS, window_s=0.5, start_bytes=10 * MSS)
    p = Pipeline(ROUTES, pipeline_params(2e6, "iwa", iwa=iwa))
    p.process(0, syn_ack(1000), 1)
    assert p.process(1 * MS, tcp(1001), 1).cls == TrafficClass.TCP_START
    assert p.process(1 * MS, tcp(1001 + 10 * MSS), 1).cls == TrafficClass.TCP_EST  # beyond start_bytes
    p.process(0, syn_ack(5000, dport=40001), 1)
    assert p.process(600 * MS, tcp(5001, dport=40001), 1).cls == TrafficClass.TCP_EST  # beyond window


def colliding_port(base=40000):
    ref = flow_hash(parse(syn_ack(dport=base))) & (FLOW_SLOTS - 1)
    for port in range(base + 1, 65535):
        if flow_hash(parse(syn_ack(dport=port))) & (FLOW_SLOTS - 1) == ref:
            return port
    raise AssertionError("no collision found")


def test_hash_collision_fails_open_and_aging_frees_the_slot():
    iwa = dict(target_s=0.040, allowance_bytes=MSS, window_s=1.0, age_s=2.0)
    p = Pipeline(ROUTES, pipeline_params(2e6, "iwa", iwa=iwa))
    other = colliding_port()
    assert p.process(0, syn_ack(dport=40000), 1).record.tflags & 8  # NEW_FLOW
    r = p.process(1 * MS, syn_ack(dport=other), 1)
    assert r.record.tflags & 16  # COLLISION
    # the colliding flow is treated as established: never early-dropped
    burst = [p.process(2 * MS, tcp(1001 + k * MSS, dport=other), 1) for k in range(30)]
    assert all(b.cls == TrafficClass.TCP_EST and b.decision == Decision.PASS for b in burst)
    # the first flow still owns the slot
    assert p.process(3 * MS, tcp(1001 + 5 * MSS, dport=40000), 1).cls == TrafficClass.TCP_START
    # after age_s the slot is free again
    assert p.process(2_500 * MS, syn_ack(dport=other), 1).record.tflags & 8
