"""CoDel follows RFC 8289 on a constructed overload."""

import math

import pytest
from frames import tcp

from refmodel import Decision, Pipeline, Route
from refmodel.params import codel_params, pipeline_params

MS = 1_000_000
ROUTES = {1: Route(2, True)}


def overload(aqm, n=400, gap_ns=5 * MS):
    """1514 B frames every 5 ms into 2 Mbit/s (one frame takes 6.056 ms): the queue grows ~1 ms per frame."""
    p = Pipeline(ROUTES, pipeline_params(2e6, aqm, bucket_bytes=0))
    return [p.process(i * gap_ns, tcp(seq=1 + i * 1460), 1) for i in range(n)]


def test_fifo_queue_grows_without_bound():
    res = overload("fifo")
    assert res[-1].record.sojourn_ns > 300 * MS


def test_first_drop_one_interval_after_sojourn_exceeds_target():
    res = overload("codel")
    above = next(r for r in res if r.record.sojourn_ns >= 5 * MS and r.record.backlog_ns > 6_056_000)
    first_drop = next(r for r in res if r.decision == Decision.DROP)
    t_above = above.record.ts_ns + above.record.sojourn_ns
    t_drop = first_drop.record.ts_ns + first_drop.record.sojourn_ns
    assert 100 * MS <= t_drop - t_above < 100 * MS + 7 * MS


def test_drop_spacing_follows_interval_over_sqrt_count():
    # RFC 8289 in dropping state: a packet is dropped at the first dequeue at or
    # after drop_next, then count += 1 and drop_next += interval / sqrt(count).
    res = overload("codel", n=2000)
    episode = []  # (dequeue time, count, drop_next) of each drop in the first episode
    for r in res:
        if r.decision == Decision.DROP:
            episode.append((r.record.ts_ns + r.record.sojourn_ns, r.record.s1 & 0xFFFFFFFF, r.record.s2))
        elif episode and not r.record.s1 >> 32:
            break
    assert len(episode) > 10
    for (_, c0, next0), (t1, c1, next1) in zip(episode, episode[1:]):
        assert c1 == c0 + 1
        assert next0 <= t1 < next0 + 6_056_000 + 1000  # the first packet at or after drop_next
        assert next1 - next0 == pytest.approx(100 * MS / math.sqrt(c1), rel=0.0101)


def test_codel_bounds_the_standing_queue():
    res = overload("codel", n=2000)
    tail = [r.record.sojourn_ns for r in res[-200:] if r.decision == Decision.PASS]
    assert max(tail) < 60 * MS


def test_control_law_table_error_within_one_percent():
    p = codel_params()
    for lo, hi, step in p.control_law:
        for c in (lo, hi):
            assert step == pytest.approx(100 * MS / math.sqrt(c), rel=0.0101)
