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
