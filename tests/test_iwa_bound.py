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
    target: the bound is what the budget allows, not what IWA happens to reach. Within 0.35 s of it: web6 takes
    2.52 s against 2.22 s since IWA 3 sizes each round from the queue its data will find (IWA 2, 2.37 s, overshot
    the target by up to a round's growth, docs/iwa.md)."""
    size = 6 * SIZE // flows
    fl = [Flow(40000 + i, start=10_000_000, size=size, isn=1_000_000 * (i + 1)) for i in range(flows)]
    s = Sim(params(), fl, audio=(0, 6_000_000_000)).run(6_500_000_000)
    done = max(f.done for f in s.flows.values()) / 1e9
    bound = budget_bound_s(RATE, RTT / 1e9, flows, size, TARGET_NS / 1e9, frame=MSS + 54, mss=MSS)
    assert bound <= done <= bound + 0.35


def test_the_floors_a_path_holds():
    """By hand: HSPA, 2 Mbit/s = 250 kB/s, a 162 ms round trip and a 27.9 ms target hold 47.5 kB; a flow at the
    floor sends 2 x (724 + 66) = 1580 B a round trip: about 30 flows. Fifty of them put 50 x 1580 B = 79 kB, 316 ms
    of link time, on the link every round: 154 ms standing beyond the 162 ms path."""
    from experiments.iwa_bound import FLOOR_WIRE, floor_flows, floor_queue_s
    assert FLOOR_WIRE == 2 * (724 + 66)  # Linux's MSS 1448 with timestamps: half of it, plus the headers
    n = floor_flows(2e6, 0.162, 0.0279)
    assert 29 < n < 31 and n == pytest.approx(250_000 * 0.1899 / FLOOR_WIRE)
    assert floor_queue_s(20, 2e6, 0.162) == 0.0  # twenty fit the path
    assert floor_queue_s(50, 2e6, 0.162) == pytest.approx(50 * FLOOR_WIRE * 8 / 2e6 - 0.162)
    assert 0.15 < floor_queue_s(50, 2e6, 0.162) < 0.16
    # the radio at its lowest rate (625 kbit/s, 35 ms round trip, its 19.4 ms target): three flows
    assert 2 < floor_flows(625e3, 0.035, 0.0194) < 3
    with pytest.raises(ValueError):
        floor_flows(0, 0.1, 0.01)
