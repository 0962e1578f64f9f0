"""Hand-computed queue behaviour of the reference model (the BMv2 twin is in test_bmv2_pipeline.py)."""

import pytest
from frames import audio, tcp

from refmodel import Decision, Pipeline, Route
from refmodel.params import pipeline_params

MS = 1_000_000
ROUTES = {1: Route(2, True), 2: Route(1, False)}


def pipe(rate=2e6, **kw):
    return Pipeline(ROUTES, pipeline_params(rate, **kw))


def test_audio_behind_ten_segments_pure_rate_link():
    # 2 Mbit/s: ten 1514 B frames take 10 * 1514 * 8 / 2e6 = 60.56 ms; with no
    # bucket the audio frame's release is the end of its own transmission.
    p = pipe(bucket_bytes=0)
    for _ in range(10):
        p.process(0, tcp(), 1)
    r = p.process(0, audio(), 1)
    own_tx = len(audio()) * 8 / 2e6 * 1e9
    assert r.record.backlog_ns == pytest.approx(60.56 * MS, abs=1000)
    assert r.record.sojourn_ns - own_tx == pytest.approx(60.56 * MS, abs=1000)  # waits 60.56 ms


def test_audio_behind_ten_segments_token_bucket():
    # tbf burst 1514: the audio frame is released when 94 B of tokens are there:
    # 60.56 ms - (1514 - 94) B * 4 us/B = 54.88 ms (the BRIEF measured 55.4 ms).
    p = pipe(bucket_bytes=1514)
    for _ in range(10):
        p.process(0, tcp(), 1)
    r = p.process(0, audio(), 1)
    assert r.record.sojourn_ns == pytest.approx(54.88 * MS, abs=1000)


def test_first_packet_into_idle_bucket_leaves_at_once():
    r = pipe().process(5 * MS, tcp(), 1)
    assert r.record.sojourn_ns == 0 and r.record.backlog_ns == 0


def test_fifo_drops_exactly_beyond_packet_limit():
    p = pipe(limit_pkts=5, bucket_bytes=0)
    decisions = [p.process(0, tcp(), 1).decision for _ in range(8)]
    assert decisions == [Decision.PASS] * 5 + [Decision.DROP] * 3
    # one frame time later, exactly one slot is free again
    t = 6_056_000 + 1
    assert [p.process(t, tcp(), 1).decision for _ in range(2)] == [Decision.PASS, Decision.DROP]


def test_fifo_byte_limit_is_bfifo():
    # limit 4000 B: two 1514 B frames fit (3028), a third would make 4542 > 4000
    p = pipe(limit_bytes=4000, bucket_bytes=0)
    d = [p.process(0, tcp(), 1).decision for _ in range(3)]
    assert d == [Decision.PASS, Decision.PASS, Decision.DROP]
    assert p.process(0, audio(), 1).decision == Decision.PASS  # 3028 + 94 fits


def test_queue_drains_at_link_rate():
    p = pipe(bucket_bytes=0)
    for _ in range(4):
        p.process(0, tcp(), 1)
    r = p.process(12_112_000, audio(), 1)  # two frame times later
    assert r.record.backlog_ns == pytest.approx(2 * 6_056_000, abs=10)


def test_upstream_bypasses_the_model():
    p = pipe(limit_pkts=1)
    for _ in range(5):
        r = p.process(0, tcp(src="10.0.1.1", dst="10.0.0.1"), 2)
        assert r.decision == Decision.BYPASS and r.egress == 1 and r.record is None


def test_transmit_time_is_the_tofino_split_within_one_ns_below_the_product():
    """tx = hi[len >> 6] + lo[len & 63] (refmodel/arith.py), never more than len * byte_time: a backlog of n
    frames is at most n ns short of the exact product's."""
    from refmodel.params import drain_ns
    p = pipe(3e6, bucket_bytes=0)  # 2666.67 ns per byte: the floors round (at 2 Mbit/s they are exact)
    bt = p.params.queue.byte_time_q16
    short = 0
    for n in range(40):
        r = p.process(0, tcp(payload=100 + 37 * n), 1)
        exact = sum(drain_ns(len(tcp(payload=100 + 37 * k)), bt) for k in range(n))
        assert 0 <= exact - r.record.backlog_ns <= n
        short = exact - r.record.backlog_ns
    assert short > 0  # the two floors did round below the product somewhere


def test_a_frame_longer_than_the_tables_is_over_the_limit():
    from refmodel import arith
    from refmodel.constants import Reason
    p = pipe(bucket_bytes=0)
    r = p.process(0, tcp(payload=arith.MAX_FRAME), 1)
    assert r.decision == Decision.DROP and r.record.reason == Reason.LIMIT
    assert p.process(0, tcp(), 1).record.backlog_ns == 0  # the dropped frame left no trace
