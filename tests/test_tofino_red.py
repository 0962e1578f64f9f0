"""RED's average on a Tofino (refmodel/tofino_red.py, tools/red_clock.py): the TNA design's ticks against ns-2's
per-packet average (refmodel/red.py, which BMv2 matches), on the seeds' RED rows. What the P4 will have to
keep is decided here: ticks change RED's drops, a second pass per packet does not."""

import random

import pytest

from experiments.onoff import next_arrival
from refmodel.constants import Aqm, Reason
from refmodel.params import pipeline_params
from refmodel.queue import QueueModel
from refmodel.red import Red
from refmodel.tofino_red import SecondPassRed, TickRed, tick_shift

HSPA, W_Q = 2e6, 0.002
ROW = dict(w_q=W_Q, max_p=0.1, th_min=5, th_max=20)   # the seeds' RED on HSPA, 2 BDP of buffer
TICK_NS = 1_000_000


def drops(red, seed: int = 0, seconds: float = 60.0, k: int | None = None) -> int:
    """RED's own drops (early and forced) on the on/off load, on its own queue; ticks every TICK_NS with ``k``."""
    p = pipeline_params(HSPA, Aqm.RED, limit_pkts=48, red=ROW)
    q, rng, now, tick, n = QueueModel(), random.Random(seed), 1_000, 0, 0
    while now < seconds * 1e9:
        now, size = next_arrival(rng, now, HSPA)
        while k is not None and tick <= now:
            red.tick(max(q.tat - tick, 0), k)
            tick += TICK_NS
        pred = q.predict(p.queue, now, size)
        v = red.decide(p.red, pred, rng.getrandbits(32))
        n += v.drop and v.reason != Reason.LIMIT
        if not v.drop:
            q.commit(pred)
    return n


def test_tick_shift_matches_ns2s_time_constant_at_full_rate():
    for rate, w_q, tick_ns in ((HSPA, W_Q, TICK_NS), (160e3, 0.2, 10 * TICK_NS), (50e6, 0.001, TICK_NS)):
        k = tick_shift(w_q, rate, 1500, tick_ns)
        tau = 1500 * 8 / rate / w_q * 1e9
        assert tau / 2 ** 0.5 <= tick_ns * 2 ** k <= tau * 2 ** 0.5


def test_ticks_follow_a_standing_backlog_and_an_empty_queue():
    r, k = TickRed(), 8
    for _ in range(10 << k):
        r.tick(50_000_000, k)
    assert abs(r.avg - 50_000_000) < 500_000
    for _ in range(20 << k):
        r.tick(0, k)
    assert r.avg == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_a_second_pass_per_packet_drops_as_ns2(seed):
    """Deciding with the average the previous packet left (its own step added in its second pass)."""
    ns2, twin = drops(Red(), seed), drops(SecondPassRed(), seed)
    assert ns2 > 500 and abs(twin - ns2) <= 0.05 * ns2


def test_ticks_at_ns2s_full_rate_pace_drop_far_less():
    """The on/off load's arrivals outpace the link's mean-size packets (1.3 times the rate, smaller frames):
    ns-2's average moves per arrival, faster than ticks paced for the link, and RED drops more."""
    ns2 = drops(Red())
    ticks = drops(TickRed(), k=tick_shift(W_Q, HSPA, 1500, TICK_NS))
    assert ticks < 0.75 * ns2
