"""The budget's bound on a web burst's completion (experiments/iwa_bound.py): its limits, and IWA in the
closed-loop simulator never beating it."""

from __future__ import annotations

import pytest
from frames import MSS
from test_iwa import RATE, RTT, SIZE, TARGET_NS, params
from tcpsim import Flow, Sim

from experiments.iwa_bound import budget_bound_s, link_rate_limit_s, wire_bytes

HSPA = dict(rate_bps=2e6, rtt_s=0.162)


def test_without_a_budget_the_bound_is_the_link_rate_limit():
    for flows, size in ((1, 372_000), (6, 62_000), (18, 10_000)):
        assert budget_bound_s(**HSPA, flows=flows, size=size, growth_s=10.0) == pytest.approx(
            link_rate_limit_s(**HSPA, flows=flows, size=size))


def test_a_smaller_budget_costs_more_rounds():
    bounds = [budget_bound_s(**HSPA, flows=6, size=62_000, growth_s=g) for g in (0.1, 0.04, 0.028, 0.01, 0.001)]
    assert bounds == sorted(bounds) and bounds[0] < bounds[-1]
    # web6 at HSPA with IWA's target (27.9 ms): five rounds below the BDP, 0.35 s above the link-rate limit
    assert budget_bound_s(**HSPA, flows=6, size=62_000, growth_s=0.027888) == pytest.approx(2.23, abs=0.01)
    assert link_rate_limit_s(**HSPA, flows=6, size=62_000) == pytest.approx(1.88, abs=0.01)


def test_one_frame_per_flow_at_least():
    # 18 flows: the first round is 18 frames whatever the budget, so a tiny budget costs less than for 1 flow
    assert budget_bound_s(**HSPA, flows=18, size=10_000, growth_s=0.001) < budget_bound_s(
        **HSPA, flows=1, size=180_000, growth_s=0.001)


def test_wire_bytes_count_each_segment_header():
    assert wire_bytes(1448) == 1514 and wire_bytes(1449) == 1514 + 67 and wire_bytes(0) == 0


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="must be positive"):
        budget_bound_s(2e6, 0.162, 0, 62_000, 0.028)


@pytest.mark.parametrize("flows", [1, 2, 6])
def test_iwa_in_the_simulator_never_beats_the_bound(flows):
    """IWA's measured completion (the simulator's frames: no TCP timestamps) is at or above the bound for its
    target: the bound is what the budget allows, not what IWA happens to reach."""
    size = 6 * SIZE // flows
    fl = [Flow(40000 + i, start=10_000_000, size=size, isn=1_000_000 * (i + 1)) for i in range(flows)]
    s = Sim(params(), fl, audio=(0, 6_000_000_000)).run(6_500_000_000)
    done = max(f.done for f in s.flows.values()) / 1e9
    bound = budget_bound_s(RATE, RTT / 1e9, flows, size, TARGET_NS / 1e9, frame=MSS + 54, mss=MSS)
    assert bound <= done <= bound + 0.25
