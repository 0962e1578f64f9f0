"""The P4 program on BMv2 against the reference model, packet for packet.

Each test starts a fresh BMv2 (all registers reset), configures it over
P4Runtime, sends Scapy frames into port 1, and replays the same frames through
the model with the arrival times and random draws BMv2 recorded in its
telemetry: every record (decision, reason, class, sojourn, backlog, AQM
state) and every forwarded frame must be identical. Skipped, with the reason
shown, where the P4 toolchain is missing.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections import Counter

import pytest
from accessnet.bmv2_veth import ROOT, ROUTES, Bmv2, build_p4, missing_toolchain
from frames import (
    CLIENT, LINUX_SYN, MACOS_SYN, MSS, NO_WS_SYN, WINDOWS_SYN, audio, client_ack, client_syn, iw_burst, syn_ack, tcp,
)
from scapy.all import IP, TCP, UDP, Ether, IPOption_NOP, Raw, raw

from refmodel import Decision, Pipeline, Reason, TrafficClass
from refmodel.params import pipeline_params

REASON = missing_toolchain()
pytestmark = [pytest.mark.bmv2, pytest.mark.skipif(REASON is not None, reason=REASON or "")]

RED_HSPA = dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)
REDOK_HSPA = dict(w_q=0.02, max_p=0.65, th_min=3, th_max=50)


@pytest.fixture(scope="module")
def compiled():
    build_p4()


@pytest.fixture
def sw(compiled):
    # A fresh BMv2 per test: BMv2 duplicates clone sessions when a pipeline is pushed twice
    # into one running switch, so state is reset by restarting, not by re-pushing.
    s = Bmv2(k=0).start()
    yield s
    s.close()


def run_differential(sw, params, frames, gap_s=0.0, links=None, clients=None):
    """``links`` (link -> its own parameters) and ``clients`` (client address -> link), the same to both."""
    sw.configure(params, links=links, clients=clients)
    sw.listen()
    sw.send(frames, gap_s=gap_s)
    out, records = sw.collect(len(frames), timeout=10 + len(frames) * gap_s)
    assert len(records) == len(frames), f"{len(records)} telemetry records for {len(frames)} frames"
    assert [r.seq for r in records] == list(range(len(frames)))
    model = Pipeline(ROUTES, params, links=clients, link_params=links)
    expected_out = []
    for i, (f, rec) in enumerate(zip(frames, records)):
        res = model.process(rec.ts_ns, f, 1, rand=rec.rand)
        assert res.record == rec, f"frame {i}: model {res.record} != bmv2 {rec}"
        if res.egress == 2:
            expected_out.append(res.frame)
    assert out[2] == expected_out
    return records, model


def run_mixed(sw, params, items, gap_s=0.002, links=None, clients=None):
    """Frames in both directions, ``items`` = [(ingress port, frame)], in this order. Every frame that
    yields a telemetry record (downstream ones; with IWA, upstream ACKs of tracked flows) is replayed
    with BMv2's arrival time and random draw; the others (a client's SYN, ACKs of untracked flows) with
    the next record's time: their processing does not depend on the time. Both directions' output
    frames, byte for byte, and every record must agree. An item ("sleep", s) lets time pass; an item
    ("link", (link, params)) writes a link's own parameters at run time, state kept (a rate change: once BMv2
    has shown everything sent before it, ``BottleneckSwitch.configure_link``; the model at the same point).
    ``links`` and ``clients`` as in run_differential."""
    sw.configure(params, links=links, clients=clients)
    sw.listen()
    frames = [it for it in items if it[0] not in ("sleep", "link")]
    # What each frame leaves behind, from the model with any timestamps: whether it yields a record, and,
    # upstream, whether it is forwarded (neither depends on the time; a downstream frame's fate does).
    probe = Pipeline(ROUTES, params, links=clients, link_params=links)
    shown = [(0, 0)]  # before frame k: (records, upstream frames out) the frames before it leave
    for port, f in (it for it in items if it[0] != "sleep"):
        if port == "link":
            probe.configure_link(*f)
            continue
        r = probe.process((len(shown) - 1) * 1_000_000, f, port)
        shown.append((shown[-1][0] + (r.record is not None), shown[-1][1] + (port == 2 and r.egress == 1)))
    n = shown[-1][0]
    # Frames are sent on a schedule, one every gap_s, not with a sleep after each: a host that sends one late
    # (a loaded machine, a collection pause) then sends the next ones at once, so the sequence keeps its rate
    # (e.g. a standing queue stays built) instead of drifting slower with every late frame.
    last_port, sent, due = None, 0, time.monotonic()
    for it in items:
        if it[0] == "sleep":  # ("sleep", seconds): time passes, e.g. an RTT before the client's ACK
            due = max(due, time.monotonic()) + it[1]
            continue
        if it[0] == "link":
            sw.wait_for(*shown[sent])
            sw.control(lambda s, change=it[1]: s.configure_link(*change))
            continue
        if last_port is not None and it[0] != last_port:
            # BMv2 reads its ports in turn: frames on two ports sent close together can be processed in either
            # order, and the model must see them in BMv2's order. So the direction changes only once BMv2 has
            # shown everything sent so far: its records and its upstream output.
            sw.wait_for(*shown[sent])
        if (wait := due - time.monotonic()) > 0:
            time.sleep(wait)
        sw.send([it[1]], port=it[0])
        last_port, sent, due = it[0], sent + 1, due + gap_s
    model = Pipeline(ROUTES, params, links=clients, link_params=links)
    out, records = sw.collect(n, timeout=10 + len(frames) * gap_s)
    assert len(records) == n, f"{len(records)} telemetry records, the model expects {n}"
    expected = {1: [], 2: []}
    k = 0
    for i, (port, f) in enumerate(it for it in items if it[0] != "sleep"):
        if port == "link":
            model.configure_link(*f)
            continue
        rec = records[min(k, len(records) - 1)]
        res = model.process(rec.ts_ns, f, port, rand=rec.rand if port == 1 else None)
        if res.record is not None:
            assert res.record == rec, f"item {i} (port {port}): model {res.record} != bmv2 {rec}"
            k += 1
        if res.egress is not None:
            expected[res.egress].append(res.frame)
    assert out[2] == expected[2], "downstream frames differ"
    assert out[1] == expected[1], "upstream frames (window rewrites) differ"
    return records, model


def test_p4info_has_config_tables_and_counters():
    build_p4()
    info = (ROOT / "build" / "bottleneck.p4info.txtpb").read_text()
    for name in ("bottleneck_cfg", "red_cfg", "codel_cfg", "pie_cfg", "iwa_cfg", "red_idle_decay",
                 "codel_control_law", "forward", "class_decision", "link_of", "link_class_decision"):
        assert re.search(rf'name: "[\w.]*{name}"', info), name


def test_audio_behind_ten_segments(sw):
    params = pipeline_params(2e6, "fifo", limit_pkts=48, bucket_bytes=1514)
    frames = [tcp(seq=1 + k * MSS) for k in range(10)] + [audio()]
    records, _ = run_differential(sw, params, frames)
    a, first = records[-1], records[0]
    # 54.88 ms behind ten 1514 B frames at 2 Mbit/s (drain bucket 1514), minus the time the frames took to arrive
    assert a.sojourn_ns == pytest.approx(54_880_000 - (a.ts_ns - first.ts_ns), abs=20_000)


def test_fifo_drops_exactly_beyond_the_limit(sw):
    # 200 kbit/s: a frame leaves every 60.6 ms, so the eight are all in before the first has gone even on a
    # loaded machine (at 2 Mbit/s a 6 ms stall of the sender let one leave and a sixth one in)
    params = pipeline_params(0.2e6, "fifo", limit_pkts=5, bucket_bytes=0)
    records, _ = run_differential(sw, params, [tcp(seq=1 + k * MSS) for k in range(8)])
    assert [r.decision for r in records] == [Decision.PASS] * 5 + [Decision.DROP] * 3


def web_mix():
    syn_acks, segs = iw_burst(6, 10)
    frames = syn_acks + [audio(0)] + segs[:30] + [audio(1)] + segs[30:] + [audio(2)]
    frames += [tcp(1001 + 3 * MSS, dport=40000 + f) for f in range(6)]  # retransmissions
    frames += [tcp(seq=500 + k, dport=50000, payload=100) for k in range(5)]  # an untracked flow
    frames += [tcp(1001 + 10 * MSS + k * MSS, dport=40001) for k in range(10)]  # next flight of flow 1
    frames += [audio(3 + k) for k in range(5)]
    return frames


@pytest.mark.parametrize("aqm,kw,reason", [
    ("fifo", {}, Reason.LIMIT),
    ("red", {"red": RED_HSPA}, Reason.LIMIT),  # w_q = 0.002: too slow to act within the burst
    ("red", {"red": REDOK_HSPA}, Reason.RED_EARLY),
    ("codel", {}, Reason.CODEL),
    ("pie", {}, Reason.PIE),
    ("iwa", {}, Reason.CODEL),  # downstream only: the untracked flow is established, CoDel's
])
def test_model_and_bmv2_agree_on_a_web_burst(sw, aqm, kw, reason):
    params = pipeline_params(1e6, aqm, limit_pkts=48, **kw)  # 1 Mbit/s: ~3x overload
    # spread over ~0.9 s so RED's average, CoDel's interval and PIE's updates all act
    records, _ = run_differential(sw, params, web_mix() * 2, gap_s=0.004)
    reasons = {Reason(r.reason) for r in records}
    print(aqm, sorted(x.name for x in reasons))
    assert reason in reasons  # the AQM's own drop path was exercised and agreed on


@pytest.mark.parametrize("telemetry", ["datagrams", "off"])
def test_a_link_reports_its_datagrams_only_or_nothing_and_forwards_the_same(sw, telemetry):
    """[link] telemetry (bottleneck_cfg's telemetry): "datagrams" clones the UDP datagrams that meet the
    bottleneck and nothing else, numbered from 0 without a gap (the single-bottleneck check matches audio
    records by that number); "off" clones nothing. Under IWA, a handshake, the audio and a flow's first
    segments (every one of them reported in the "all" mode, the ACK with the window IWA gave it): every frame
    leaves as the model says, the ACK with its window rewritten (tests/test_telemetry.py: the model decides the
    same in every mode)."""
    params = pipeline_params(2e6, "iwa", limit_pkts=1000, telemetry=telemetry)
    opts = [("MSS", 1460), ("WScale", 9)]
    items = [(2, client_syn(5000)), (1, syn_ack(1000, ack=5001, options=opts)), (2, client_ack(1001)),
             (1, audio(0)), (1, tcp(1001)), (1, audio(1)), (1, tcp(1001 + MSS)), (1, audio(2))]
    model = Pipeline(ROUTES, params)
    want = [model.process(1_000_000 * i, f, port) for i, (port, f) in enumerate(items)]
    every = Pipeline(ROUTES, pipeline_params(2e6, "iwa", limit_pkts=1000))
    reported = [every.process(1_000_000 * i, f, port).record for i, (port, f) in enumerate(items)]
    assert {r.cls for r in reported if r} == {TrafficClass.UDP, TrafficClass.TCP_CTRL, TrafficClass.TCP_START}  # "all"
    n_audio = 3 if telemetry == "datagrams" else 0
    sw.configure(params)
    sw.listen()
    for port, f in items:
        sw.send([f], port=port, gap_s=0.002)
    assert sw.wait_for(n_audio, 2, timeout=10)
    time.sleep(0.5)  # the frames out, and any record that should not be there
    out, records = sw.collect(n_audio, timeout=2)
    assert [(r.cls, r.dport, r.seq) for r in records] == [(TrafficClass.UDP, 5004, k) for k in range(n_audio)]
    assert out[2] == [r.frame for r in want if r.egress == 2] == [f for p, f in items[1:] if p == 1]
    assert out[1] == [r.frame for r in want if r.egress == 1]
    assert out[1][1] != items[2][1]  # the ACK left with the window IWA gave it


def handshakes(layouts, base_port=40000, isn=1000, synack_ws=(9,)):
    """Client SYNs (upstream, port 2) with the given option layouts and the server's SYN-ACKs (port 1)."""
    items = []
    for k, opts in enumerate(layouts):
        items.append((2, client_syn(options=opts, sport=base_port + k)))
    for k, _ in enumerate(layouts):
        ws = synack_ws[k % len(synack_ws)]
        opts = [("MSS", 1460)] + ([("WScale", ws)] if ws is not None else [])
        items.append((1, syn_ack(isn, dport=base_port + k, ack=5001, options=opts)))
    return items


def test_iwa_start_shaping_agrees_with_the_model(sw):
    """Both directions through IWA: SYNs of the three stacks' layouts and one without window scaling, a
    SYN-ACK without the option, the handshakes' ACKs (windows clamped), a server that ignores its window
    (the safety net drops), later ACKs opening the windows, a retransmitted SYN-ACK, audio throughout."""
    params = pipeline_params(1e6, "iwa", limit_pkts=48)
    layouts = [LINUX_SYN, WINDOWS_SYN, MACOS_SYN, NO_WS_SYN, LINUX_SYN, LINUX_SYN]
    items = handshakes(layouts, synack_ws=(9, 9, 9, 9, None, 9)) + [(1, audio(0))]
    items += [(2, client_ack(1001, window=502, sport=40000 + k)) for k in range(6)]  # the handshakes' ACKs
    items += [(2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000 + k))
              for k in range(6)]  # the requests
    items += [(1, tcp(1001 + j * MSS, dport=40000 + k)) for k in range(6) for j in range(10)]  # IW10, window ignored
    items += [(1, audio(1)), (1, syn_ack(1000, dport=40002, ack=5001, options=[("MSS", 1460), ("WScale", 9)]))]
    items += [(2, client_ack(1001 + j * MSS, window=502, seq=5121, sport=40000 + k)) for j in (1, 2) for k in range(6)]
    items += [(1, audio(2))]
    records, _ = run_mixed(sw, params, items)
    reasons = {Reason(r.reason) for r in records}
    assert {Reason.IWA_WINDOW, Reason.IWA_SURPLUS} <= reasons, sorted(x.name for x in reasons)


def share_items():
    """Six shaped flows on a 1 Mbit/s link: SYNs, 50 ms, SYN-ACKs (a server RTT long enough that the ACKs below
    find the server still within it, not idle), two segments each, the queue drained, their ACKs 40 ms apart,
    so that each finds the grants before it drained and room to grow (the share among six binds: every window
    is above it); then two clients' FINs and a RST, and the other three's ACKs for two more segments each (a
    share among three)."""
    items = [(2, client_syn(options=LINUX_SYN, sport=40000 + k)) for k in range(6)] + [("sleep", 0.05)]
    items += [(1, syn_ack(1000, dport=40000 + k, ack=5001, options=[("MSS", 1460), ("WScale", 9)])) for k in range(6)]
    items += [(2, client_ack(1001, window=502, sport=40000 + k)) for k in range(6)]  # counted: six
    items += [(2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000 + k))
              for k in range(6)]
    items += [(1, tcp(1001 + j * MSS, dport=40000 + k)) for k in range(6) for j in range(2)] + [("sleep", 0.2)]
    items += [it for k in range(6) for j in (1, 2)
              for it in (("sleep", 0.04), (2, client_ack(1001 + j * MSS, window=502, seq=5121, sport=40000 + k)))]
    items += [(2, client_ack(1001 + 2 * MSS, window=502, seq=5121, flags="FA", sport=40000)),
              (2, client_ack(1001 + 2 * MSS, window=502, seq=5121, flags="FA", sport=40001)),
              (2, client_ack(1001 + 2 * MSS, window=502, seq=5121, flags="R", sport=40002))]
    items += [(1, tcp(1001 + j * MSS, dport=40000 + k)) for k in range(3, 6) for j in range(2, 4)] + [("sleep", 0.1)]
    items += [it for k in range(3, 6) for j in (3, 4)
              for it in (("sleep", 0.04), (2, client_ack(1001 + j * MSS, window=502, seq=5121, sport=40000 + k)))]
    return items


SHARE_RATE = 1e6  # share_items' link


def model_windows(params, items, **rules):
    """The upstream frames the model writes for ``items`` at 2 ms spacing (``sleep`` items let time pass),
    optionally with other rules in place of ``refmodel.shaper``'s functions of the same names (``share_shift``,
    ``margin_holds``): does the sequence exercise a rule at all?"""
    import refmodel.shaper as shaper
    orig = {name: getattr(shaper, name) for name in rules}
    for name, rule in rules.items():
        setattr(shaper, name, rule)
    try:
        p, t, out = Pipeline(ROUTES, params), 0, []
        for port, f in items:
            t += round(f * 1e9) if port == "sleep" else 2_000_000
            if port != "sleep":
                r = p.process(t, f, port)
                out += [r.frame] if port == 2 else []
        return out
    finally:
        for name, rule in orig.items():
            setattr(shaper, name, rule)


def windows_differ(params, items, **rules):
    return sum(a != b for a, b in zip(model_windows(params, items), model_windows(params, items, **rules)))


def test_iwa_share_sequence_exercises_the_share():
    params = pipeline_params(SHARE_RATE, "iwa", limit_pkts=48)
    for other in (lambda n: 0, lambda n: max(0, n + 2).bit_length()):  # no share; a count off by three
        assert windows_differ(params, share_items(), share_shift=other) >= 5


def test_iwa_counts_shaped_flows_and_caps_windows_at_their_share_like_the_model(sw):
    """share_items through BMv2 and the model: every window BMv2 writes is the model's, so BMv2 counts the
    shaped flows (first ACK to FIN or RST) and caps windows at the share as the model does."""
    records, model = run_mixed(sw, pipeline_params(SHARE_RATE, "iwa", limit_pkts=48), share_items())
    assert model.shaper.nflows == 3
    assert any(Reason(r.reason) == Reason.IWA_WINDOW for r in records)


EDGE_IWA = dict(rate_bps=160e3, aqm="iwa", limit_pkts=14)  # the target is one frame (75.7 ms)


def lone_items():
    """One shaped flow at EDGE, one segment a round: each ACK comes when the queue has drained, so the whole
    target is free, and the room (one frame) is less than twice what the ACK acknowledged. Its server is 200 ms
    away (SYN to SYN-ACK), so a round of 200 ms is within two server RTTs: the switch does not take a server
    that sends one segment a round whatever its window for one with nothing to send."""
    items = [(2, client_syn(options=LINUX_SYN, sport=40000)), ("sleep", 0.2),
             (1, syn_ack(1000, dport=40000, ack=5001, options=[("MSS", 1460), ("WScale", 9)])),
             (2, client_ack(1001, window=502, sport=40000)),
             (2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000))]
    for j in range(5):
        items += [(1, tcp(1001 + j * MSS, dport=40000)), ("sleep", 0.2),
                  (2, client_ack(1001 + (j + 1) * MSS, window=502, seq=5121, sport=40000))]
    return items


def test_iwa_lone_flow_sequence_exercises_the_margin():
    holds_in_a_free_target = lambda w, share, room_bytes, acked, room_ns, target_ns: (  # noqa: E731
        w > share >> 1 and room_bytes < 2 * acked)
    assert windows_differ(pipeline_params(**EDGE_IWA), lone_items(), margin_holds=holds_in_a_free_target) >= 2


def margin_items():
    """Two shaped flows on a 1 Mbit/s link (share_items' handshakes), two rounds: 2 then 4 segments each, their
    ACKs 12 ms apart, so the room is short (less than twice what an ACK acknowledges) and partly in use while
    the windows pass half their share."""
    items = [(2, client_syn(options=LINUX_SYN, sport=40000 + k)) for k in range(2)] + [("sleep", 0.05)]
    items += [(1, syn_ack(1000, dport=40000 + k, ack=5001, options=[("MSS", 1460), ("WScale", 9)])) for k in range(2)]
    items += [(2, client_ack(1001, window=502, sport=40000 + k)) for k in range(2)]
    items += [(2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000 + k)) for k in range(2)]
    for first, n in ((0, 2), (2, 4)):
        items += [(1, tcp(1001 + (first + j) * MSS, dport=40000 + k)) for k in range(2) for j in range(n)]
        items += [("sleep", 0.05)]
        items += [it for k in range(2) for j in range(1, n + 1)
                  for it in (("sleep", 0.012), (2, client_ack(1001 + (first + j) * MSS, window=502, seq=5121,
                                                               sport=40000 + k)))]
    return items


def test_iwa_margin_sequence_exercises_the_margin_at_half_the_share():
    """With the margin at the whole share instead of half of it, 5 or more of margin_items' windows differ."""
    whole = lambda w, share, room_bytes, acked, room_ns, target_ns: (  # noqa: E731
        w > share and room_bytes < 2 * acked and room_ns < target_ns)
    assert windows_differ(pipeline_params(SHARE_RATE, "iwa", limit_pkts=48), margin_items(), margin_holds=whole) >= 5


def test_iwa_holds_growth_above_half_the_share_in_a_short_room_like_the_model(sw):
    """margin_items through BMv2 and the model: every window BMv2 writes is the model's, so BMv2 applies the
    margin at half the flow's share as the model does."""
    records, _ = run_mixed(sw, pipeline_params(SHARE_RATE, "iwa", limit_pkts=48), margin_items())
    assert any(Reason(r.reason) == Reason.IWA_WINDOW for r in records)


def test_iwa_lets_a_lone_flow_grow_into_a_free_target_like_the_model(sw):
    """lone_items through BMv2 and the model: BMv2 applies the margin only while the room is partly in use,
    as the model does (with a margin that holds in a wholly free target, 2 or more of its windows would differ)."""
    records, _ = run_mixed(sw, pipeline_params(**EDGE_IWA), lone_items())
    assert any(Reason(r.reason) == Reason.IWA_WINDOW for r in records)


def tail_items():
    """One shaped flow on a 2 Mbit/s link, 50 ms of server RTT: a response of three full segments and a short one
    (its end), then, 10 ms apart, the client's ACKs of two segments each: the last acknowledges all the server
    sent, well within two server RTTs of the checkpoint its first ACK set."""
    items = [(2, client_syn(options=LINUX_SYN, sport=40000)), ("sleep", 0.05),  # a server RTT of 50 ms
             (1, syn_ack(1000, dport=40000, ack=5001, options=[("MSS", 1460), ("WScale", 9)])),
             (2, client_ack(1001, window=502, sport=40000)),
             (2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000))]
    items += [(1, tcp(1001 + j * MSS, dport=40000)) for j in range(3)]
    items += [(1, tcp(1001 + 3 * MSS, payload=600, dport=40000)), ("sleep", 0.03)]
    items += [(2, client_ack(1001 + 2 * MSS, window=502, seq=5121, sport=40000)), ("sleep", 0.01),
              (2, client_ack(1001 + 3 * MSS + 600, window=502, seq=5121, sport=40000))]
    return items


def test_tail_sequence_exercises_the_short_tail():
    """Without the short tail (the checkpoint alone) the last ACK of tail_items leaves another window."""
    from refmodel.shaper import app_limited
    only_checkpoint = lambda seqhi, mark, mark_t, now, lead, mss, ack, acked, tail: app_limited(  # noqa: E731
        seqhi, mark, mark_t, now, lead, mss)
    assert windows_differ(pipeline_params(2e6, "iwa", limit_pkts=48), tail_items(), server_idle=only_checkpoint) >= 1


def test_a_response_ending_in_a_short_segment_is_retracted_like_the_model(sw):
    """tail_items through BMv2 and the model: BMv2 keeps the flow's tail (the short segment ends before the
    edge) and retracts the window of the ACK that acknowledges it as the model does (every frame and record
    agree)."""
    records, _ = run_mixed(sw, pipeline_params(2e6, "iwa", limit_pkts=48), tail_items())
    assert Reason(records[-1].reason) == Reason.IWA_WINDOW


def test_a_flow_that_keeps_sending_stays_tracked_past_age_like_the_model(sw):
    """Slots age from the flow's latest downstream packet: a flow that sends every 0.1 s is still tracked
    and shaped 0.6 s after its SYN-ACK with age_s = 0.25 (aged from the SYN-ACK, BMv2 would write no
    record for its last ACKs and the record count would differ)."""
    params = pipeline_params(2e6, "iwa", limit_pkts=48, iwa=dict(hold_s=0.1, age_s=0.25))
    items = handshakes([LINUX_SYN]) + [(2, client_ack(1001, window=502, sport=40000)),
                                       (2, client_ack(1001, window=502, seq=5001, payload=120, flags="PA", sport=40000))]
    for j in range(6):
        items += [(1, tcp(1001 + j * MSS, dport=40000)), ("sleep", 0.1),
                  (2, client_ack(1001 + (j + 1) * MSS, window=502, seq=5121, sport=40000))]
    records, model = run_mixed(sw, params, items)
    assert records[-1].ts_ns - records[0].ts_ns > 0.5e9
    assert Reason(records[-1].reason) == Reason.IWA_WINDOW and records[-1].tflags & 1  # tracked, shaped


def test_iwa_drops_window_ignorers_even_with_ecn(sw):
    params = pipeline_params(2e6, "iwa", limit_pkts=48, ecn=True)
    # a client RTT before the handshake's ACK, so the whole initial window is within the start phase
    items = handshakes([LINUX_SYN]) + [("sleep", 0.15), (2, client_ack(1001))]
    items += [(1, tcp(1001 + k * MSS, dport=40000, tos=0x02)) for k in range(12)]
    records, _ = run_mixed(sw, params, items)
    assert any(r.reason == Reason.IWA_SURPLUS and r.decision == Decision.DROP for r in records)
    assert not any(r.decision == Decision.MARK for r in records)


ODD = [
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1", options=[IPOption_NOP()] * 4)
        / TCP(sport=80, dport=40000, seq=1001) / Raw(b"x" * 100)),
    tcp()[:14 + 20 + 8],  # truncated TCP header
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1", flags="MF") / TCP(sport=80, dport=40000) / Raw(b"x" * 64)),
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1", frag=10, proto=6) / Raw(b"x" * 64)),
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1", ihl=4) / Raw(b"x" * 40)),
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1", len=30) / TCP(sport=80, dport=40000) / Raw(b"x" * 64)),
    raw(Ether(type=0x0806) / Raw(b"\x00" * 28)),
    raw(Ether() / IP(src="10.0.0.1", dst="10.0.1.1") / UDP() / Raw(b"")),
    tcp(1001, payload=0),
]


ODD_SYNS = [  # option soup in a client's SYN: the parser's byte walk must end where the model's does
    raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=40000, dport=80, flags="S", dataofs=15)
        / Raw(b"\x01" * 39 + b"\x03")),                       # NOPs up to a window-scale kind at the very end
    raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=40001, dport=80, flags="S", dataofs=7)
        / Raw(b"\x02\x01\x03\x03\x07\x00\x00\x00")),          # an option of length 1: the walk stops
    raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=40002, dport=80, flags="S", dataofs=7)
        / Raw(b"\x08\xff\x03\x03\x07\x00\x00\x00")),          # a length running past the options
    raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=40003, dport=80, flags="S", dataofs=8)
        / Raw(b"\x03\x04\x07\x00\x03\x03\x05\x00")),          # a window-scale option of length 4, then a real one
    client_syn(sport=40004)[:14 + 20 + 20 + 6],                  # a SYN cut inside its options
    raw(Ether() / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=40005, dport=80, flags="S", dataofs=6)
        / Raw(b"\x03\x03\x0f\x00")),                              # shift 15: used as 14
]


def test_odd_frames_pass_unchanged_and_keep_flow_state(sw):
    params = pipeline_params(2e6, "iwa", limit_pkts=48)
    frames = [syn_ack(1000)] + ODD + [tcp(1001 + k * MSS) for k in range(3)]
    records, model = run_differential(sw, params, frames)
    assert all(r.decision == Decision.PASS for r in records)


def test_odd_syn_options_leave_unchanged_and_set_the_same_scale(sw):
    params = pipeline_params(2e6, "iwa", limit_pkts=48)
    items = [(2, f) for f in ODD_SYNS]
    items += [(1, syn_ack(1000, dport=40000 + k, ack=1, options=[("WScale", 2)])) for k in range(6)]
    items += [(2, client_ack(1001, window=40000, seq=1, sport=40000 + k)) for k in range(6)]
    records, model = run_mixed(sw, params, items)
    acks = [r for r in records if r.decision == Decision.BYPASS and r.tflags & 1]
    assert len(acks) == 6  # one record per handshake ACK: each flow tracked, shaped with the scale its SYN gave


def test_counters_read_over_p4runtime_match_the_model(sw):
    params = pipeline_params(2e6, "iwa", limit_pkts=10)
    frames = web_mix()
    _, model = run_differential(sw, params, frames)
    counters = sw.counters()
    for i, n in enumerate(model.counters.packets):
        assert counters.get(i, (0, 0))[0] == n, f"counter {i}"


# --------------------------------------------------------------------------- access links (issue 12, item 3)

CLIENT_B, CLIENT_C = "10.0.1.2", "10.0.1.3"  # link 1 (its own parameters), link 2 (the defaults, its own state)
LINK_CLIENTS = {CLIENT_B: 1, CLIENT_C: 2}


def three_links_mix():
    """Link 0 (client A): web_mix twice; link 1 (client B): a burst of 30 segments within A's first burst,
    another after its queue drained (RED's idle decay from link 1's own table); link 2 (client C): audio."""
    b1 = [tcp(1 + k * MSS, dport=50001, dst=CLIENT_B) for k in range(30)]
    b2 = [tcp(1 + (30 + k) * MSS, dport=50001, dst=CLIENT_B) for k in range(30)]
    frames = []
    for i, f in enumerate(web_mix() * 2):
        frames.append(f)
        if 20 <= i < 50:
            frames.append(b1[i - 20])
        if i % 15 == 0:
            frames.append(audio(i, dst=CLIENT_C))
    for k, f in enumerate(b2):
        frames += [f] + ([audio(200 + k, dst=CLIENT_C)] if k % 2 else [])
    return frames


def test_links_keep_their_own_rate_aqm_and_queue_and_agree_with_the_model(sw):
    """Three links in one BMv2: link 0 and link 2 on the defaults (CoDel, 1 Mbit/s), link 1 on its own
    (REDok, 500 kbit/s, 12 packets). BMv2 agrees with the model packet for packet; each link's records are
    exactly what that link alone would have given (a burst on link 1 changes nothing on link 0); the
    per-link counters read over P4Runtime are the model's."""
    default = pipeline_params(1e6, "codel", limit_pkts=48)
    own = pipeline_params(5e5, "red", limit_pkts=12, red=REDOK_HSPA)
    frames = three_links_mix()
    records, model = run_differential(sw, default, frames, gap_s=0.004, links={1: own}, clients=LINK_CLIENTS)
    by_link = {k: [(f, r) for f, r in zip(frames, records) if r.link == k] for k in (0, 1, 2)}
    assert [len(v) for v in by_link.values()] == [len(web_mix() * 2), 60, len(frames) - len(web_mix() * 2) - 60]
    for link, params in ((0, default), (1, own), (2, default)):
        alone = Pipeline(ROUTES, params)
        for f, rec in by_link[link]:
            got = alone.process(rec.ts_ns, f, 1, rand=rec.rand).record
            assert dataclasses.replace(got, seq=rec.seq, link=link) == rec, f"link {link}: {got} != {rec}"
    reasons = {k: {Reason(r.reason) for _, r in v} for k, v in by_link.items()}
    print({k: sorted(Counter(Reason(r.reason).name for _, r in v).items()) for k, v in by_link.items()})
    assert Reason.CODEL in reasons[0] and reasons[1] & {Reason.LIMIT, Reason.RED_EARLY}, reasons
    assert {r.aqm for _, r in by_link[1]} == {own.queue.aqm} and {r.aqm for _, r in by_link[2]} == {default.queue.aqm}
    per_link = sw.counters("link_class_decision")
    for i, n in enumerate(model.link_counters.packets):
        assert per_link.get(i, (0, 0))[0] == n, f"link counter {i}"


def link_handshakes(client, ports, isn=1000):
    """A client's SYNs (upstream) and the server's SYN-ACKs (downstream) on ``ports``."""
    items = [(2, client_syn(sport=p, src=client)) for p in ports]
    return items + [(1, syn_ack(isn, dport=p, ack=5001, dst=client, options=[("MSS", 1460), ("WScale", 9)]))
                    for p in ports]


def test_iwa_on_one_link_shapes_from_that_links_queue_like_the_model(sw):
    """Link 1 (client B) runs IWA at 1 Mbit/s while link 0 (client A, the defaults) is a FIFO at 2 Mbit/s
    with a standing queue: the upstream ACKs of B are link 1's (link_of by source), their windows and the
    safety net's drops are the model's, byte for byte."""
    default = pipeline_params(2e6, "fifo", limit_pkts=5)
    own = pipeline_params(1e6, "iwa", limit_pkts=48)
    ports = range(40000, 40004)
    items = link_handshakes(CLIENT_B, ports) + [(1, tcp(1 + k * MSS, dport=50000)) for k in range(14)]
    items += [(2, client_ack(1001, window=502, sport=p, src=CLIENT_B)) for p in ports]
    items += [(1, tcp(1001 + j * MSS, dport=p, dst=CLIENT_B)) for p in ports for j in range(10)]
    items += [(1, audio(1, dst=CLIENT_B)), (1, audio(2))]
    items += [(2, client_ack(1001 + MSS, window=502, seq=5001, sport=p, src=CLIENT_B)) for p in ports]
    records, model = run_mixed(sw, default, items, links={1: own}, clients={CLIENT_B: 1})
    b = [r for r in records if r.link == 1]
    assert {r.aqm for r in b} == {own.queue.aqm} and {r.aqm for r in records if r.link == 0} == {default.queue.aqm}
    assert {Reason.IWA_WINDOW, Reason.IWA_SURPLUS} <= {Reason(r.reason) for r in b}
    assert any(Reason(r.reason) == Reason.LIMIT for r in records if r.link == 0)
    assert (model.shaper.links[0].nflows, model.shaper.links[1].nflows) == (0, len(ports))


def replay_with_change(model, before, after, records, change):
    """The frames sent before and after a run-time change, through the model with BMv2's times and draws
    (``change()`` applied to the model between them): every record must agree; returns the model's port-2
    frames."""
    expected = []
    for i, (f, rec) in enumerate(zip(before + after, records)):
        if i == len(before):
            change()
        res = model.process(rec.ts_ns, f, 1, rand=rec.rand)
        assert res.record == rec, f"frame {i}: model {res.record} != bmv2 {rec}"
        expected += [res.frame] if res.egress == 2 else []
    return expected


def test_links_configured_at_run_time_like_the_model(sw):
    """One link first (client B on link 0), then, with traffic queued, the controller gives link 1 its own
    parameters and moves B onto it: B's next frames find an empty queue on a FIFO of their own, A's link 0
    keeps its queue and its CoDel."""
    default = pipeline_params(1e6, "codel", limit_pkts=48)
    own = pipeline_params(2e6, "fifo", limit_pkts=3)
    first = [tcp(1 + k * MSS, dport=50000 + k % 2, dst=(CLIENT_B if k % 2 else CLIENT)) for k in range(12)]
    then = [tcp(1 + (12 + k) * MSS, dport=50000, dst=CLIENT) for k in range(2)]
    then += [tcp(1 + (12 + k) * MSS, dport=50001, dst=CLIENT_B) for k in range(10)]  # faster than link 1 drains
    sw.configure(default)
    sw.listen()
    sw.send(first, gap_s=0.002)

    async def make_link_1(s):
        await s.configure_link(1, own)
        await s.assign(CLIENT_B, 1)

    sw.control(make_link_1)
    sw.send(then, gap_s=0.002)
    out, records = sw.collect(len(first) + len(then))
    assert len(records) == len(first) + len(then)
    model = Pipeline(ROUTES, default)

    def change():
        model.configure_link(1, own)
        model.assign(CLIENT_B, 1)
    assert out[2] == replay_with_change(model, first, then, records, change)
    moved = [r for r in records[len(first):] if r.dst == 0x0A000102]
    assert moved[0].link == 1 and moved[0].backlog_ns == 0 and {r.aqm for r in moved} == {own.queue.aqm}
    assert any(r.decision == Decision.DROP for r in moved)  # its own 3-packet buffer


def test_a_rate_change_at_run_time_switches_rate_class_like_the_model(sw):
    """The transmit time comes from the rate class's two tables (no product), and a rate change writes a
    new class before the link points at it. 3 Mbit/s (2666.67 ns per byte) makes the two floors round
    below len * byte_time; frames of many lengths check every hi/lo pair the model's split gives, then
    a second controller moves every link to 1.5 Mbit/s at run time (it reads the classes back first)."""
    first = pipeline_params(3e6, "pie", limit_pkts=200)
    then = pipeline_params(1.5e6, "pie", limit_pkts=200)
    sizes = [0, 1, 63, 64, 65, 500, 777, 1000, 1459, 1460]
    a = [tcp(1 + k * MSS, payload=min(MSS, sizes[k % len(sizes)] + k)) for k in range(30)]
    b = [tcp(1 + (30 + k) * MSS, payload=min(MSS, sizes[k % len(sizes)] + 3 * k)) for k in range(30)]
    sw.configure(first)
    sw.listen()
    sw.send(a, gap_s=0.001)
    sw.control(lambda s: s.reconfigure(then))
    sw.send(b, gap_s=0.001)
    out, records = sw.collect(len(a) + len(b))
    assert len(records) == len(a) + len(b)
    model = Pipeline(ROUTES, first)
    assert out[2] == replay_with_change(model, a, b, records, lambda: model.configure(then))
    backlogs = [r.backlog_ns for r in records]
    assert max(backlogs[:len(a)]) > 0 and max(backlogs[len(a):]) > 0  # both rates timed a queue
