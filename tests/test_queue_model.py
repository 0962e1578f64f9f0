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
