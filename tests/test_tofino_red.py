"""RED's average on a Tofino (refmodel/tofino_red.py, tools/red_clock.py): the TNA design's ticks against ns-2's
per-packet average (refmodel/red.py, which BMv2 matches), on the seeds' RED rows. What the P4 will have to
keep is decided here: ticks change RED's drops, a second pass per packet does not."""

import math
import random
from dataclasses import replace

import pytest

from experiments.onoff import next_arrival
from refmodel.constants import Aqm, Reason
from refmodel.arith import LOG_FRAC, LOG_ONE_BITS, LOG_ZERO, log2_q
from refmodel.params import pipeline_params
from refmodel.queue import QueueModel
from refmodel.red import Red, idle_log
from refmodel.tofino_red import (T_ALWAYS, T_BELOW, SecondPassRed, TickRed, TnaRed, gate_of, rest_of, tick_shift,
                                 tna_red_knobs)

HSPA, W_Q = 2e6, 0.002
ROW = dict(w_q=W_Q, max_p=0.1, th_min=5, th_max=20)   # the seeds' RED on HSPA, 2 BDP of buffer
TICK_NS = 1_000_000
HSPA_RED = pipeline_params(HSPA, Aqm.RED, limit_pkts=48, red=ROW)
KNOBS = tna_red_knobs(HSPA_RED.red, HSPA_RED.queue.byte_time_q16)


def drops(red, seed: int = 0, seconds: float = 60.0, k: int | None = None) -> int:
    """RED's own drops (early and forced) on the on/off load, on its own queue; ticks every TICK_NS with ``k``."""
    p = HSPA_RED
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


@pytest.mark.parametrize("seed", [0, 1])
def test_the_tna_programs_red_drops_as_ns2(seed):
    """TnaRed, the TNA program's RED (the gate from the previous packet's second pass, count1 taken as the
    next packet's at mean size), on the on/off load: as many drops as ns-2's within 5 %."""
    ns2, twin = drops(Red(), seed), drops(TnaRed(KNOBS), seed)
    assert ns2 > 500 and abs(twin - ns2) <= 0.05 * ns2


def test_the_gate_forces_crosses_then_tests_early():
    """Above th_max a forced drop; above th_min the first packet only crosses (old = 0) and the next one is
    tested (u = 0 always drops); below th_min nothing, and old clears."""
    p = HSPA_RED.red
    pred = QueueModel().predict(HSPA_RED.queue, 1_000, 1514)
    busy = replace(pred, backlog_ns=p.thmin_ns)
    r = TnaRed(KNOBS)
    r.avg = (p.thmin_ns + p.thmax_ns) // 2
    r.gate = gate_of(p, r.avg, 0)
    assert T_BELOW < r.gate < T_ALWAYS
    v, r2 = r.first_pass(p, busy, 0)
    assert not v.drop and r2.cross and r.old == 1
    r.second_pass(p, r2)
    assert r.count_bytes == 1514
    v, r2 = r.first_pass(p, busy, 0)          # u = 0
    assert v.drop and v.reason == Reason.RED_EARLY and r2.reset
    r.second_pass(p, r2)
    assert r.count_bytes == 0
    v, _ = r.first_pass(p, busy, 0xFFFFFFFF)   # the largest u: above this gate's probability
    assert not v.drop
    r.gate = gate_of(p, p.thmax_ns, 0)
    v, _ = r.first_pass(p, busy, 0xFFFFFFFF)
    assert v.drop and v.reason == Reason.RED_FORCED
    r.gate = gate_of(p, p.thmin_ns - 1, 0)
    v, _ = r.first_pass(p, busy, 0)
    assert not v.drop and r.old == 0


def test_the_gate_is_ns2s_threshold_with_count1_one_higher():
    """With count_bytes = c * mps the gate takes count1 = c + 1 (the next packet at mean size), as ns-2 does
    after such a packet: the gate and ns-2's own threshold on Log2(u) - Log2(size) (Red._drop_early's test,
    rearranged) agree within 96 units of 2^-12 in log2 (2.3 % of the probability) wherever ns-2 drops a
    mean-size packet with probability below 1/2. Nearer count1 p_b = 1 the logs' rounding is magnified by
    Log2(1 - count1 p_b), and both drop nearly every packet."""
    p = HSPA_RED.red
    rng, worst = random.Random(3), 0
    for _ in range(2000):
        avg = rng.randrange(p.thmin_ns + 1, p.thmax_ns)
        c = rng.randrange(0, 40)
        t = gate_of(p, avg, c * p.mean_pktsize)
        log_pb = log2_q(avg - p.thmin_ns) + p.log_slope
        log_cp = log2_q(c + 1) + log_pb
        if log_cp >= LOG_ONE_BITS:
            assert t == T_ALWAYS or log_cp - LOG_ONE_BITS < 64
            continue
        ns2 = log_pb - rest_of(log_cp) - p.log_mps + (16 << LOG_FRAC)
        if ns2 + log2_q(p.mean_pktsize) < (15 << LOG_FRAC):   # u's threshold below 2^15: probability < 1/2
            worst = max(worst, abs(t - ns2))
    assert 0 < worst <= 96


def test_rest_of_is_a_table_on_the_logs_leading_bits():
    """rest_of depends on log_cp >> 2 alone: the controller can write it as a table of 2^15 rows."""
    for l in range(-(24 << 12), 32 << 12, 37):
        assert rest_of(l) == rest_of(l & ~3)


@pytest.mark.parametrize("w_q,rate", [(W_Q, HSPA), (0.2, 160e3), (0.001, 50e6)])
def test_the_idle_decay_as_one_product_is_ns2s_above_the_v1models_first_entry(w_q, rate):
    """TnaRedKnobs.halvings: the idle decay's halvings, Exp2(Log2(idle) + log_halvings), against ns-2's
    int(ptc * idle) * -log2(1 - w_q): within 1 packet's decay and the logs' rounding (0.5 %) from 0.1 ms to
    10 s; none below the v1model table's first entry (dm packets), and never less than the table's."""
    pp = pipeline_params(rate, Aqm.RED, limit_pkts=48, red=dict(w_q=w_q, max_p=0.1, th_min=5, th_max=20))
    p, k = pp.red, tna_red_knobs(pp.red, pp.queue.byte_time_q16)
    ptc_ns, h = rate / (8 * p.mean_pktsize) / 1e9, -math.log2(1 - w_q) * (1 << LOG_FRAC)
    rng, n = random.Random(5), 0
    for _ in range(2000):
        idle = int(10 ** rng.uniform(5, 10))
        table = -idle_log(p, idle)
        if table >= -LOG_ZERO:
            continue   # the table's last entry: the average is 0
        halvings = k.halvings(idle)
        if table == 0:
            assert halvings == 0
            continue
        ns2 = int(ptc_ns * idle) * h
        assert abs(halvings - ns2) <= h + 8 + 0.005 * ns2
        assert halvings >= table - 8 - 0.005 * table
        n += 1
    assert n > 200
