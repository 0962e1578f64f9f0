"""Many access links in one pipeline, on the reference model (issue 12, item 3; the BMv2 twin is in
test_bmv2_pipeline.py): ``link_of`` by the client's address, per-link queue and AQM state, per-link parameters
with the defaults for links without their own, per-link counters and the link in the telemetry record."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress

import pytest
from frames import CLIENT, LINUX_SYN, MSS, audio, client_ack, client_syn, syn_ack, tcp

from refmodel import ConfigError, Decision, Pipeline, Reason, Route
from refmodel.codel import control_law_step
from refmodel.constants import COUNTER_SLOTS, N_LINKS, TrafficClass
from refmodel.params import (
    RANGE_KEY_MAX, check_link, client_addr, codel_params, complete_ranges, pipeline_params, red_params,
)
from refmodel.red import idle_log
from refmodel.telemetry import Record, decode_frame, encode_frame

MS = 1_000_000
ROUTES = {1: Route(2, True), 2: Route(1, False)}
CLIENT_B = "10.0.1.2"  # link 1
CLIENT_C = "10.0.1.3"  # link 2: a link_of entry, no parameters of its own
CODEL_1M = pipeline_params(1e6, "codel", limit_pkts=48)  # link 0 and every link without its own
FIFO_2M = pipeline_params(2e6, "fifo", limit_pkts=8)  # link 1's own: another rate, AQM and buffer
LINKS = {CLIENT_B: 1, CLIENT_C: 2}
B_DROPS = 30 - 1 - 8  # link 1's burst of 30: the first leaves at once (the tbf bucket), 8 wait, the rest drop


def two_links(default=CODEL_1M, own=FIFO_2M) -> Pipeline:
    return Pipeline(ROUTES, default, links=LINKS, link_params={1: own})


def bulk(n: int, dst: str = CLIENT, dport: int = 50000) -> list[bytes]:
    """n full segments of an untracked flow towards ``dst``."""
    return [tcp(1 + k * MSS, dport=dport, dst=dst) for k in range(n)]


def strip(rec: Record) -> Record:
    """A record without what a shared pipeline numbers across links (the sequence) or adds (the link)."""
    return dataclasses.replace(rec, seq=0, link=0)


def mixed_trace() -> list[tuple[int, bytes]]:
    """Link 0 (client A): a standing queue of 1 Mbit/s for 300 ms, with audio; link 1 (client B): a burst of
    30 segments at once, far beyond its 8-packet buffer; link 2 (client C): audio only. Times in ns."""
    trace = [(k * 4 * MS, f) for k, f in enumerate(bulk(80))]
    trace += [(2 * MS + k * 20 * MS, audio(k)) for k in range(16)]
    trace += [(100 * MS, f) for f in bulk(30, dst=CLIENT_B, dport=50001)]
    trace += [(150 * MS + k * 20 * MS, audio(k, dst=CLIENT_C)) for k in range(5)]
    return sorted(trace, key=lambda x: x[0])


def run(p: Pipeline, trace: list[tuple[int, bytes]], only: str | None = None) -> list:
    """Every frame of ``trace`` (or only those to ``only``) through ``p``, the random draw from the time."""
    return [p.process(t, f, 1, rand=(t * 2654435761) & 0xFFFFFFFF) for t, f in trace
            if only is None or _dst(f) == only]


def _dst(frame: bytes) -> str:
    return str(ipaddress.IPv4Address(frame[30:34]))


# --------------------------------------------------------------------------- link_of


def test_without_entries_every_packet_is_link_0_and_nothing_changes():
    one, many = Pipeline(ROUTES, CODEL_1M), Pipeline(ROUTES, CODEL_1M, links={}, link_params={})
    a, b = run(one, mixed_trace()), run(many, mixed_trace())
    assert [r.record for r in a] == [r.record for r in b]
    assert all(r.link == 0 and r.record.link == 0 for r in b)


def test_link_of_is_the_clients_address_downstream_destination_upstream_source():
    p = two_links()
    assert p.process(0, tcp(dst=CLIENT_B), 1).link == 1
    assert p.process(0, client_ack(1001, src=CLIENT_B), 2).link == 1
    assert p.process(0, tcp(src=CLIENT_B, dst=CLIENT), 1).link == 0  # B as a server does not matter
    assert p.process(0, tcp(dst=CLIENT_C), 1).link == 2
    assert p.process(0, tcp(dst="10.9.9.9"), 1).link == 0  # no entry: link 0
    assert p.process(0, b"\x00" * 60, 1).link == 0  # no IPv4: link 0


def test_link_ids_and_addresses_are_checked():
    assert check_link(N_LINKS - 1) == N_LINKS - 1
    for bad in (-1, N_LINKS, True, 1.0):
        with pytest.raises(ConfigError, match="link"):
            check_link(bad)
    assert client_addr("10.0.1.2") == 0x0A000102 == client_addr(0x0A000102)
    with pytest.raises(ConfigError, match="client"):
        client_addr("10.0.1")
    with pytest.raises(ConfigError):
        Pipeline(ROUTES, CODEL_1M, links={CLIENT_B: N_LINKS})


def test_assign_and_configure_link_at_run_time_keep_state():
    p = Pipeline(ROUTES, CODEL_1M)
    run(p, [(0, f) for f in bulk(5, dst=CLIENT_B)])  # B on link 0: five frames of link 0's queue
    p.assign(CLIENT_B, 1)
    assert p.process(0, tcp(dst=CLIENT_B), 1).record.backlog_ns == 0  # link 1's queue is its own, empty
    assert p.process(0, tcp(dst=CLIENT), 1).record.backlog_ns > 0  # link 0 kept its queue
    p.configure_link(1, FIFO_2M)
    assert p.process(1 * MS, tcp(dst=CLIENT_B), 1).record.aqm == FIFO_2M.queue.aqm
    p.configure_link(1, None)  # back on the defaults
    assert p.process(2 * MS, tcp(dst=CLIENT_B), 1).record.aqm == CODEL_1M.queue.aqm
    p.assign(CLIENT_B, None)
    assert p.process(3 * MS, tcp(dst=CLIENT_B), 1).link == 0


# --------------------------------------------------------------------------- independent queues and AQMs


def test_a_burst_on_link_1_leaves_link_0s_sojourns_and_drops_alone():
    trace = mixed_trace()
    shared = run(two_links(), trace)

    def of(client: str) -> list[Record]:
        return [strip(r.record) for (_, f), r in zip(trace, shared) if _dst(f) == client]

    alone = run(Pipeline(ROUTES, CODEL_1M), trace, only=CLIENT)
    assert [strip(r.record) for r in alone] == of(CLIENT)
    assert any(r.reason == Reason.CODEL for r in alone)  # link 0's own AQM acted, as alone
    b_alone = run(Pipeline(ROUTES, FIFO_2M), trace, only=CLIENT_B)
    assert [strip(r.record) for r in b_alone] == of(CLIENT_B)
    assert sum(r.reason == Reason.LIMIT for r in b_alone) == B_DROPS  # link 1: its own 8-packet buffer


def test_each_link_runs_on_its_own_rate_aqm_and_buffer():
    p = two_links()
    a, b = p.process(0, tcp(dst=CLIENT), 1), p.process(0, tcp(dst=CLIENT_B), 1)
    a2, b2 = p.process(0, audio(dst=CLIENT), 1), p.process(0, audio(dst=CLIENT_B), 1)
    assert a.record.aqm == CODEL_1M.queue.aqm and b.record.aqm == FIFO_2M.queue.aqm
    # one frame ahead: 1514 B drain in 12.112 ms at 1 Mbit/s, 6.056 ms at 2 Mbit/s
    assert a2.record.backlog_ns == 12_112_000 and b2.record.backlog_ns == 6_056_000
    assert (a.link, b.link, a2.record.link, b2.record.link) == (0, 1, 0, 1)


def test_a_link_without_parameters_runs_on_the_defaults_with_its_own_state():
    p = two_links()
    run(p, [(0, f) for f in bulk(10)])  # link 0 queued
    c = p.process(0, tcp(dst=CLIENT_C), 1)
    assert c.link == 2 and c.record.aqm == CODEL_1M.queue.aqm and c.record.backlog_ns == 0
    assert p.params_for(2) is CODEL_1M and p.params_for(1) is FIFO_2M


def test_packet_limit_ring_is_per_link():
    fifo5 = pipeline_params(2e6, "fifo", limit_pkts=5, bucket_bytes=0)
    p = Pipeline(ROUTES, fifo5, links={CLIENT_B: 1})
    a = [p.process(0, f, 1).decision for f in bulk(7)]
    b = [p.process(0, f, 1).decision for f in bulk(7, dst=CLIENT_B)]
    assert a == b == [Decision.PASS] * 5 + [Decision.DROP] * 2


@pytest.mark.parametrize("aqm,kw", [
    ("red", {"red": dict(w_q=0.02, max_p=0.65, th_min=3, th_max=50)}),
    ("codel", {}),
    ("pie", {}),
])
def test_every_aqms_state_is_per_link(aqm, kw):
    """The same AQM on both links: link 1's queue for 400 ms leaves link 0's AQM state where it was."""
    params = pipeline_params(1e6, aqm, limit_pkts=48, **kw)
    p = Pipeline(ROUTES, params, links={CLIENT_B: 1})
    fresh = copy.deepcopy({k: vars(v) for k, v in vars(p.state[0]).items()})
    run(p, [(k * 4 * MS, f) for k, f in enumerate(bulk(100, dst=CLIENT_B))])
    assert {k: vars(v) for k, v in vars(p.state[0]).items()} == fresh
    assert vars(getattr(p.state[1], aqm)) != fresh[aqm]  # link 1's AQM moved
    assert p.state[1].queue.seq > 0 == p.state[0].queue.seq


# --------------------------------------------------------------------------- IWA: the room is the link's


def open_flow(p: Pipeline, t: int, client: str, port: int = 40000, isn: int = 1000) -> tuple:
    """The client's SYN, the server's SYN-ACK 22 ms later, the client's first ACK 162 ms after the SYN."""
    p.process(t, client_syn(5000, LINUX_SYN, sport=port, src=client), 2)
    p.process(t + 22 * MS, syn_ack(isn, dport=port, ack=5001, dst=client,
                                   options=[("MSS", MSS), ("WScale", 9)]), 1)
    return p.process(t + 162 * MS, client_ack(isn + 1, 502, sport=port, src=client), 2)


def test_iwa_sizes_a_links_windows_from_its_own_queue():
    iwa = pipeline_params(2e6, "iwa", limit_pkts=48)
    p = Pipeline(ROUTES, iwa, links={CLIENT_B: 1})
    # link 0: five frames of queue when B's ACK comes (under IWA, traffic no window holds is not let queue
    # beyond its target and a frame on its own)
    run(p, [(140 * MS, f) for f in bulk(12)])
    b = open_flow(p, 0, CLIENT_B)
    alone = open_flow(Pipeline(ROUTES, iwa), 0, CLIENT_B)
    assert b.link == 1 and b.frame == alone.frame and strip(b.record) == strip(alone.record)
    a = open_flow(p, 0, CLIENT, port=40001)  # A's flow on link 0 finds its queue: less room
    assert a.record.s2 & 0xFFFFFFFF < b.record.s2 & 0xFFFFFFFF
    assert (p.shaper.links[0].nflows, p.shaper.links[1].nflows) == (1, 1)


def test_a_reused_slot_uncounts_the_old_flow_on_its_own_link():
    iwa = pipeline_params(2e6, "iwa", limit_pkts=48, iwa=dict(hold_s=0.1, age_s=0.25))
    p = Pipeline(ROUTES, iwa, links={CLIENT_B: 1})
    open_flow(p, 0, CLIENT_B)  # counted on link 1, never closed
    slot = next(s for s in range(len(p.shaper.link)) if p.shaper.link[s] == 1)
    assert p.shaper.links[1].nflows == 1
    # B moves to link 2 (the controller re-maps it); its next connection on the same 5-tuple (a new ISN: the
    # same one would be the old flow's SYN-ACK again) takes the slot
    p.assign(CLIENT_B, 2)
    open_flow(p, 1000 * MS, CLIENT_B, isn=77_000)
    assert p.shaper.link[slot] == 2
    assert (p.shaper.links[1].nflows, p.shaper.links[2].nflows) == (0, 1)


# --------------------------------------------------------------------------- counters and telemetry


def test_counters_per_link_add_up_to_the_shared_counter():
    p = two_links()
    run(p, mixed_trace())
    per = p.link_counters.packets
    assert len(per) == N_LINKS * COUNTER_SLOTS
    for slot in range(COUNTER_SLOTS):
        assert sum(per[link * COUNTER_SLOTS + slot] for link in range(N_LINKS)) == p.counters.packets[slot]
    drop = TrafficClass.TCP_EST * 4 + Decision.DROP
    assert per[1 * COUNTER_SLOTS + drop] == B_DROPS  # link 1's tail drops are its own


def test_the_record_carries_the_link_where_the_padding_was():
    rec = Record(4, 0, 0, 3, 2, 1514, 7, 9, 1000, 5, 6, 1, 2, 80, 4000, 6, 7, 8, link=0x1234)
    frame = encode_frame(rec)
    assert frame[14 + 45:14 + 48] == b"\x00\x12\x34"
    assert decode_frame(frame) == rec
    old = encode_frame(dataclasses.replace(rec, link=0))
    assert old[14 + 45:14 + 48] == b"\x00\x00\x00" and decode_frame(old).link == 0  # one link: as before


def test_the_telemetry_reader_reads_the_link(tmp_path):
    import dpkt

    from experiments.telemetry_reader import read_telemetry
    path = tmp_path / "t.pcap"
    recs = [Record(4, 0, 0, 3, 2, 1514, i, i, i * 1000, 5, 6, 1, 2, 80, 4000, 6, 7, 8, link=i % 3) for i in range(6)]
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for i, r in enumerate(recs):
            w.writepkt(encode_frame(r), ts=i / 1000)
    df, _ = read_telemetry(path)
    assert list(df["link"]) == [0, 1, 2, 0, 1, 2]


# --------------------------------------------------------------------------- range tables per link


def test_completed_range_tables_give_every_key_what_the_models_lookup_gives():
    red = red_params(160e3, w_q=0.02, max_p=0.1, th_min=5, th_max=20)
    idle = complete_ranges(red.idle_decay, 0)
    codel = codel_params(interval_s=0.05)
    law = complete_ranges(codel.control_law, codel.control_law[-1][2])
    for table in (idle, law):
        assert table[0][0] == 0 and table[-1][1] == RANGE_KEY_MAX
        assert all(b[0] == a[1] + 1 for a, b in zip(table, table[1:]))  # contiguous: no key falls through
    keys = [0, 1, 2, 100, 5000, 65535, 65536, 10**6, RANGE_KEY_MAX] + [lo for lo, _, _ in red.idle_decay[:5]]
    for k in keys:
        assert _lookup(idle, k) == idle_log(red, k << 10)
        assert _lookup(law, k) == control_law_step(codel, k)
    assert complete_ranges((), 7) == ((0, RANGE_KEY_MAX, 7),)


def _lookup(table, key: int) -> int:
    (value,) = [v for lo, hi, v in table if lo <= key <= hi]
    return value


# --------------------------------------------------------------------------- the model switch's links


def test_the_model_switch_takes_links_sections_and_tunes_each_link_in_its_own_entries():
    """accessnet.modelswitch builds the model as the controller configures BMv2 ([links.N]: clients and
    parameters), and its closed loops write a link's tuned knobs to that link only."""
    from accessnet.modelswitch import apply_tuning, make_pipeline
    from controller import policy
    from controller.tuner import LinkLoops
    cfg = {"link": {"rate_bps": 2e6}, "buffer": {"packets": 48}, "aqm": {"name": "iwa", "iwa": {"target_s": 0.01}},
           "links": {"1": {"clients": ["10.0.1.2"], "link": {"rate_bps": 1e6}}}}
    p = make_pipeline(ROUTES, cfg, seed=1)
    assert p.process(0, audio(0, dst="10.0.1.2"), 1).record.link == 1
    assert p.process(1000, audio(1), 1).record.link == 0
    assert p.params_for(1).queue.byte_time_q16 == 2 * p.params_for(0).queue.byte_time_q16
    loops = LinkLoops(cfg, t0_ns=0)
    assert apply_tuning(p, loops, 0) == 0  # the first call starts the clocks
    assert apply_tuning(p, loops, 100_000_000) == 2  # both replace the configured 10 ms
    assert p.params_for(1).iwa.target_ns == policy.target_for(1e6, 40_000_000)
    assert p.params_for(0).iwa.target_ns == policy.target_for(2e6, 40_000_000)
