"""The IWA 2 tuning policy on synthetic statistics (no switch)."""

import pytest

from controller.policy import NS, Observation, TunerState, codel_target_for, frame_ns, target_for, tune
from refmodel.params import pipeline_params

MS = 1_000_000
BUDGET = 40 * MS
HSPA, EDGE, LTE = 2e6, 160e3, 50e6
PERIOD = 100 * MS


def obs(t, rate=HSPA):
    return Observation(t_ns=t, rate_bps=rate, jitter_budget_ns=BUDGET)


def settled(rate=HSPA):
    return TunerState(target_ns=target_for(rate, BUDGET), codel_target_ns=codel_target_for(rate, BUDGET))


def run(state, observations):
    out = []
    for o in observations:
        d = tune(state, o)
        state = d.state
        out.append(d)
    return out


def test_frame_time_is_the_data_planes():
    assert frame_ns(HSPA) == 6_056_000 == pipeline_params(HSPA).queue.mtu_ns
    assert frame_ns(EDGE) == 75_700_000
    assert frame_ns(HSPA, 9014) > frame_ns(HSPA)  # a configured jumbo frame counts


def test_target_from_the_jitter_budget_at_each_profile():
    assert target_for(HSPA, BUDGET) == BUDGET - 2 * frame_ns(HSPA) == 27_888_000  # two frames (12.1 ms) of margin
    assert target_for(LTE, BUDGET) == 35 * MS  # two frames are 0.5 ms: the margin is 5 ms
    assert target_for(EDGE, BUDGET) == frame_ns(EDGE) == 75_700_000  # one frame already exceeds the budget
    assert target_for(HSPA, BUDGET) == pipeline_params(HSPA, "iwa").iwa.target_ns  # the data plane's default


@pytest.mark.parametrize("rate", [EDGE, 1e6, HSPA, 3e6, 7.2e6, LTE])
def test_codel_target_is_iwas_target_as_the_data_plane_derives_it(rate):
    assert codel_target_for(rate, BUDGET) == target_for(rate, BUDGET) >= frame_ns(rate)
    assert codel_target_for(rate, BUDGET) == pipeline_params(rate, "iwa").codel.target_ns  # the loop writes no change
    assert pipeline_params(rate, "codel").codel.target_ns == 5 * MS  # the codel AQM keeps RFC 8289's target


def test_steady():
    s = settled()
    d = tune(s, obs(0))
    assert d.state == s and d.reason == "steady"


def test_a_configured_target_is_replaced_by_the_budgets():
    d = tune(TunerState(target_ns=10 * MS, codel_target_ns=5 * MS), obs(0))
    assert d.state.target_ns == target_for(HSPA, BUDGET) and "target 10.0 ms -> 27.9 ms" in d.reason


def test_rate_change_recomputes_both_targets_in_the_same_period():
    s = settled(LTE)
    d = tune(s, obs(3 * NS, rate=HSPA))
    assert d.state.target_ns == target_for(HSPA, BUDGET) != s.target_ns
    assert d.state.codel_target_ns == d.state.target_ns != s.codel_target_ns == s.target_ns
    assert "target 35.0 ms -> 27.9 ms" in d.reason and "codel target 35.0 ms -> 27.9 ms" in d.reason
    assert tune(d.state, obs(3 * NS + PERIOD, rate=HSPA)).state == d.state  # and it stays there


def test_edge_target_is_one_frame():
    assert tune(settled(EDGE), obs(0, rate=EDGE)).state.target_ns == frame_ns(EDGE)


def test_on_a_radio_the_target_is_the_rate_nows_and_the_budget_cap_is_armed():
    """A link whose rate changed recently: the target is still target_for the rate now (not sized for the lowest
    rate seen: that left the windows no room to grow in the fast slots), and the budget cap is the budget, so
    what a drop leaves in flight is dropped rather than queued ahead of the audio. A fixed link: no cap."""
    rate = 2.5e6
    d = tune(settled(rate), Observation(t_ns=0, rate_bps=rate, jitter_budget_ns=BUDGET, rate_varies=True))
    assert d.state.target_ns == target_for(rate, BUDGET) and d.state.budget_cap_ns == BUDGET
    assert "budget cap off -> 40.0 ms" in d.reason
    fixed = tune(settled(rate), Observation(t_ns=0, rate_bps=rate, jitter_budget_ns=BUDGET))
    assert fixed.state.budget_cap_ns == 0 and fixed.reason == "steady"
    back = tune(d.state, Observation(t_ns=0, rate_bps=rate, jitter_budget_ns=BUDGET))
    assert back.state.budget_cap_ns == 0 and back.reason == "budget cap 40.0 ms -> off"


@pytest.mark.parametrize("rate, frames", [(0.5e6, 3), (625e3, 3), (0.8e6, 3), (1e6, None), (2e6, None), (4.4e6, None)])
def test_the_budget_cap_stays_the_targets_margin_above_the_target(rate, frames):
    """Where the budget holds three frames or more the cap is the budget; where it holds fewer the target is at
    its floor of one frame and the cap is that frame and the margin of two more: three frames, by hand 3 x 1514
    B x 8 / rate (72.7 ms at 0.5 Mbit/s, 58.1 ms at 625 kbit/s: pam13radio's lowest). Never less than the
    budget, and never nearer above the target than the margin the target keeps below the budget."""
    d = tune(settled(rate), Observation(t_ns=0, rate_bps=rate, jitter_budget_ns=BUDGET, rate_varies=True))
    cap, target = d.state.budget_cap_ns, d.state.target_ns
    by_hand = round(3 * 1514 * 8 / rate * 1e9) if frames else BUDGET
    assert abs(cap - by_hand) <= 3 * 1000, (cap, by_hand)  # the data plane's rounding of a frame's drain time
    assert cap >= BUDGET and cap - target >= max(2 * frame_ns(rate), 5 * MS)
