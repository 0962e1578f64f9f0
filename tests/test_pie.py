"""PIE follows RFC 8033's core on a constructed overload."""

from frames import tcp

from refmodel import Decision, Pipeline, Reason, Route
from refmodel.params import pipeline_params

MS = 1_000_000
ROUTES = {1: Route(2, True)}


def run(n=600, gap_ns=5 * MS, then_idle=False):
    p = Pipeline(ROUTES, pipeline_params(2e6, "pie", bucket_bytes=0), seed=7)
    res = [p.process(i * gap_ns, tcp(seq=1 + i * 1460), 1) for i in range(n)]
    return p, res


def test_burst_allowance_protects_the_first_150ms():
    _, res = run()
    early = [r for r in res if r.record.ts_ns < 150 * MS]
    assert all(r.decision == Decision.PASS for r in early)
    assert any(r.reason == Reason.PIE_BURST for r in early)


def test_probability_rises_under_persistent_delay_and_drops_follow():
    _, res = run()
    ps = [r.record.s1 for r in res]
    assert ps[-1] > ps[len(ps) // 4] > 0
    assert any(r.reason == Reason.PIE for r in res)
    late = [r.record.backlog_ns for r in res[-100:]]
    assert sum(late) / len(late) < 100 * MS  # controlled, where FIFO would be ~600 ms


def test_probability_decays_when_the_queue_empties():
    p, res = run()
    p_before = res[-1].record.s1
    t = 600 * 5 * MS + 2_000 * MS  # long after the queue drained
    rs = [p.process(t + i * 20 * MS, tcp(seq=10**6 + i, payload=52), 1) for i in range(40)]
    assert rs[-1].record.s1 < p_before
    assert all(r.decision == Decision.PASS for r in rs)


def test_each_update_term_is_within_one_64th_below_the_exact_product():
    """alpha * dq and beta * dq_old from mantissa tables (refmodel/arith.py: mul): never above the exact
    product, less than 1/64 below it, the sign kept."""
    from refmodel import arith, pie
    k = pipeline_params(2e6, "pie").pie.alpha_q48
    for d in [0, 1, 127, 128, 129, 5 * MS, -5 * MS, 15 * MS + 12345, -(2**31), 2**32 - 1]:
        t = pie.term(d, k)
        exact = d * k
        assert abs(t) <= abs(exact) and (t < 0) == (exact < 0)
        assert abs(exact) - abs(t) < abs(exact) / 64 + (1 if abs(d) < arith.MANT_ENTRIES else 0)
    assert pie.term(2**40, k) == pie.term(2**32 - 1, k)  # |dq| saturates at 32 bits


def test_the_mantissa_arithmetic_moves_pie_little():
    """The measured effect of the approximation on this overload: the probability PIE settles at, and its
    drops, against the exact products (refmodel.pie.term replaced by d * k)."""
    import refmodel.pie as pie_mod
    _, approx = run(n=2000)
    exact_term = lambda d, k: d * k  # noqa: E731
    saved = pie_mod.term
    pie_mod.term = exact_term
    try:
        _, exact = run(n=2000)
    finally:
        pie_mod.term = saved
    p_a = sum(r.record.s1 for r in approx[1000:]) / 1000
    p_e = sum(r.record.s1 for r in exact[1000:]) / 1000
    drops_a = sum(r.decision == Decision.DROP for r in approx)
    drops_e = sum(r.decision == Decision.DROP for r in exact)
    print(f"PIE p (mean of the second half): mantissa {p_a / 2**32:.4f}, exact {p_e / 2**32:.4f}; "
          f"drops {drops_a} vs {drops_e}")
    assert abs(p_a - p_e) <= 0.05 * p_e
    assert abs(drops_a - drops_e) <= max(3, 0.1 * drops_e)
