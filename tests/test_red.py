"""RED and REDok follow ns-2's definitions (byte mode, gentle off) on constructed states."""

import math

import pytest

from refmodel.arith import LOG_ZERO
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
    assert 2 ** (p.log_wq / 4096) == pytest.approx(row["w_q"], rel=2e-4)  # Q12 logs: within 2^(1/8192)
    span = p.thmax_ns - p.thmin_ns
    assert 2 ** (p.log_slope / 4096) * span / 2**32 == pytest.approx(row["max_p"], rel=2e-4)
    assert 2 ** (p.log_mps / 4096) == pytest.approx(1500, rel=2e-4)
    assert p.idle_decay and p.idle_decay[-1][2] == LOG_ZERO


def test_ewma_follows_the_queue():
    r, p = Red(), hspa_red()
    q = 50 * MS
    for _ in range(500):
        r.decide(p, pred(q, now=10**10), rand=0xFFFFFFFF)
    expected = q * (1 - (1 - 0.002) ** 500)
    assert r.avg == pytest.approx(expected, rel=3e-3)  # each step within 0.2 % (Log2 and Exp2's bounds)


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
    # the edge within 1 % of the probability (the logs' bound: docs/arithmetic.md)
    margin = max(2, int(u_edge * 0.01))
    assert run(max(0, u_edge - margin)).drop and run(max(0, u_edge - margin)).reason == Reason.RED_EARLY
    assert not run(u_edge + margin).drop


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
            assert 2 ** (f / 4096) == pytest.approx(exact, rel=0.031), (lo, hi)
    table = red_params(HSPA, w_q=w, max_p=0.1, th_min=5, th_max=20).idle_decay
    assert all(nxt[0] == row[1] + 1 for row, nxt in zip(table, table[1:]))  # contiguous: no idle time unmatched
    # the last row takes every longer idle time to zero, where the exact decay is already below 0.2 %
    lo, hi, f = table[-1]
    assert (hi, f) == (2**32 - 1, LOG_ZERO) and (1 - w) ** int(ptc * lo * 1024 / 1e9) < 0.002


def test_the_early_drop_probability_is_within_one_percent_of_ns2_over_the_range():
    """Every u16 of the drop test against the exact ns-2 comparison, for averages across [th_min, th_max),
    counts and sizes: the drop probability (the share of u16 that drop) within 1 % of ns-2's (+-1 u16)."""
    p = hspa_red()
    for frac in (0.01, 0.2, 0.5, 0.93):
        avg = p.thmin_ns + int(frac * (p.thmax_ns - p.thmin_ns))
        pb = 0.1 * frac
        for c1 in (0, 1, 5, 12):
            for size in (60, 1500):
                if c1 * pb >= 1:
                    continue
                exact = pb / (1 - c1 * pb) * size / 1500
                r = Red()
                r.avg, r.old, r.count1 = avg, 1, c1
                edge = _first_not_dropping(lambda u: _early(r, p, avg, size, u))
                assert edge / 65536 == pytest.approx(min(exact, 1.0), rel=0.01, abs=2 / 65536), (frac, c1, size)


def _early(r: Red, p, avg: int, size: int, u16: int) -> bool:
    return r._drop_early(p, avg, size, u16 << 16)


def _first_not_dropping(drops) -> int:
    lo, hi = 0, 65536  # drops(u) holds for u < edge, not beyond (the test is monotone in u)
    while lo < hi:
        mid = (lo + hi) // 2
        if drops(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo


@pytest.mark.parametrize("name,knobs", [("RED", dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)),
                                        ("REDok", dict(w_q=0.02, max_p=0.65, th_min=3, th_max=50))])
def test_logs_against_exact_products_on_an_overload(name, knobs, monkeypatch):
    """The measured effect of the log arithmetic (docs/arithmetic.md): a 2 Mbit/s link offered 1.2 times its
    rate for 2000 packets, the same random draws, against RED with exact products (the logs replaced by
    floats). The drops and the average over the second half agree within a few percent."""
    from frames import tcp

    import refmodel.red as red_mod
    from refmodel import Decision, Pipeline, Route
    from refmodel.params import pipeline_params

    def run():
        p = Pipeline({1: Route(2, True)}, pipeline_params(HSPA, "red", bucket_bytes=0, red=knobs), seed=7)
        return [p.process(i * 5 * MS, tcp(seq=1 + i * 1460), 1) for i in range(2000)]

    approx = run()
    monkeypatch.setattr(red_mod, "log2_q", lambda x: math.log2(x) * 4096 if x else LOG_ZERO)
    monkeypatch.setattr(red_mod, "exp2_q", lambda l: min(0xFFFFFFFF, math.floor(2 ** (l / 4096))))
    exact = run()
    avg_a, avg_e = (sum(r.record.s1 for r in res[1000:]) / 1000 for res in (approx, exact))
    drops_a, drops_e = (sum(r.decision == Decision.DROP for r in res) for res in (approx, exact))
    print(f"{name} average (second half): logs {avg_a / MS:.2f} ms, exact {avg_e / MS:.2f} ms; "
          f"drops {drops_a} vs {drops_e}")
    assert drops_e > 20  # the overload made RED act
    assert abs(avg_a - avg_e) <= 0.05 * avg_e
    assert abs(drops_a - drops_e) <= max(3, 0.1 * drops_e)
