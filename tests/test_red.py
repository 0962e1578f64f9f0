"""RED and REDok follow ns-2's definitions (byte mode, gentle off) on constructed states."""

import math

import pytest

from refmodel.constants import Reason
from refmodel.params import ConfigError, red_params
from refmodel.queue import Prediction
from refmodel.red import Red

MS = 1_000_000
HSPA = 2e6
NS_PER_BYTE = 4000  # at 2 Mbit/s


def pred(backlog_ns, length=1500, now=10**10, over=False):
    return Prediction(now, length, now + backlog_ns, now + backlog_ns + length * NS_PER_BYTE, backlog_ns,
                      backlog_ns, now + backlog_ns, over)


def hspa_red():
    return red_params(HSPA, w_q=0.002, max_p=0.1, th_min=5, th_max=20)


def test_thresholds_are_drain_times_of_mean_size_packets():
    p = hspa_red()
    assert p.thmin_ns == 5 * 1500 * NS_PER_BYTE
    assert p.thmax_ns == 20 * 1500 * NS_PER_BYTE


@pytest.mark.parametrize("rate,row", [
    (160e3, dict(w_q=0.002, max_p=0.1, th_min=3, th_max=9)),      # RED EDGE
    (2e6, dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)),       # RED HSPA
    (50e6, dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)),      # RED LTE
    (160e3, dict(w_q=0.2, max_p=0.65, th_min=3, th_max=40)),      # REDok EDGE
    (2e6, dict(w_q=0.02, max_p=0.65, th_min=3, th_max=50)),       # REDok HSPA
    (50e6, dict(w_q=0.001, max_p=0.1, th_min=5, th_max=125)),     # REDok LTE
])
def test_brief_rows_are_expressible(rate, row):
    p = red_params(rate, **row)
    assert abs(p.wq_q24 / 2**24 - row["w_q"]) / row["w_q"] < 1e-4
    span = p.thmax_ns - p.thmin_ns
    assert abs(p.slope_q56 * span / 2**56 - row["max_p"]) < 1e-6
    assert p.idle_decay and p.idle_decay[-1][2] == 0


def test_ewma_follows_the_queue():
    r, p = Red(), hspa_red()
    q = 50 * MS
    for _ in range(500):
        r.decide(p, pred(q, now=10**10), rand=0xFFFFFFFF)
    expected = q * (1 - (1 - 0.002) ** 500)
    assert r.avg == pytest.approx(expected, rel=1e-3)


def test_first_crossing_of_th_min_never_drops():
    r, p = Red(), hspa_red()
    r.avg = 60 * MS
    v = r.decide(p, pred(60 * MS), rand=0)  # rand 0 would drop if eligible
    assert not v.drop and r.old == 1 and r.count_bytes(p) == 1500


def test_forced_drop_above_th_max():
    r, p = Red(), hspa_red()
    r.avg, r.old = 130 * MS, 1
    v = r.decide(p, pred(130 * MS), rand=0xFFFFFFFF)
    assert v.drop and v.reason == Reason.RED_FORCED and r.count_bytes(p) == 0


@pytest.mark.parametrize("count_bytes", [0, 3000, 40000])
def test_early_drop_probability_is_ns2_modify_p(count_bytes):
    p = hspa_red()
    avg = 75 * MS  # half way between th_min (30 ms) and th_max (120 ms): p_b = 0.05
    cb = count_bytes + 1500  # ns-2 adds the arriving packet before deciding
    pb = 0.1 * (avg - 30 * MS) / (90 * MS)
    c1 = cb // 1500  # integer division, as ns-2
    pa = 1.0 if c1 * pb >= 1 else pb / (1 - c1 * pb)
    p_drop = min(1.0, pa * 1500 / 1500)
    u_edge = int(p_drop * 65536)

    def run(u16):
        r = Red()
        r.avg, r.old = avg, 1
        r.count1, r.rem = divmod(count_bytes, 1500)
        return r.decide(p, pred(avg), rand=u16 << 16)

    if p_drop >= 1:
        assert run(0xFFFF).drop
        return
    assert run(max(0, u_edge - 2)).drop and run(max(0, u_edge - 2)).reason == Reason.RED_EARLY
    assert not run(u_edge + 2).drop


def test_small_packets_are_dropped_less_in_byte_mode():
    p = hspa_red()

    def prob(size):
        drops = 0
        for u in range(0, 65536, 64):
            r = Red()
            r.avg, r.old = 75 * MS, 1
            drops += r.decide(p, pred(75 * MS, length=size), rand=u << 16).drop
        return drops / 1024

    assert prob(94) == pytest.approx(prob(1500) * 94 / 1500, abs=0.002)


def test_idle_time_decays_the_average_like_ns2():
    p, r = hspa_red(), Red()
    r.avg = 100 * MS
    now = 10**10
    idle_s = 1.0
    q = Prediction(now, 94, now - int(idle_s * 1e9), now + 376000, 0, 0, now, False)
    r.decide(p, q, rand=0xFFFFFFFF)
    m = int(HSPA / (8 * 1500) * idle_s)
    expected = 100 * MS * (1 - 0.002) ** (m + 1)
    assert r.avg == pytest.approx(expected, rel=0.03)


def test_bad_red_configs_are_rejected_with_field_names():
    with pytest.raises(ConfigError, match="th_min"):
        red_params(HSPA, w_q=0.002, max_p=0.1, th_min=20, th_max=5)
    with pytest.raises(ConfigError, match="w_q"):
        red_params(HSPA, w_q=0, max_p=0.1, th_min=5, th_max=20)
    with pytest.raises(ConfigError, match="max_p"):
        red_params(HSPA, w_q=0.002, max_p=1.5, th_min=5, th_max=20)


def test_idle_table_error_is_within_three_percent():
    w, ptc = 0.002, HSPA / 12000
    for lo, hi, f in red_params(HSPA, w_q=w, max_p=0.1, th_min=5, th_max=20).idle_decay[:-1]:
        for key in (lo, hi):
            m = int(ptc * key * 1024 / 1e9)
            exact = (1 - w) ** m
            assert f / 2**24 == pytest.approx(exact, rel=0.031), (lo, hi)
    table = red_params(HSPA, w_q=w, max_p=0.1, th_min=5, th_max=20).idle_decay
    assert all(nxt[0] == row[1] + 1 for row, nxt in zip(table, table[1:]))  # contiguous: no idle time unmatched
    # the last row takes every longer idle time to zero, where the exact decay is already below 0.2 %
    lo, hi, f = table[-1]
    assert (hi, f) == (2**32 - 1, 0) and (1 - w) ** int(ptc * lo * 1024 / 1e9) < 0.002
