"""The IWA 2 tuning policy on synthetic statistics (no switch)."""

import pytest

from controller.policy import NS, QUIET_NS, Observation, TunerState, codel_target_for, frame_ns, target_for, tune
from refmodel.params import pipeline_params

MS = 1_000_000
BUDGET = 40 * MS
HSPA, EDGE, LTE = 2e6, 160e3, 50e6
PERIOD = 100 * MS


def obs(t, p99_ms=2.0, rate=HSPA):
    return Observation(t_ns=t, rate_bps=rate, jitter_budget_ns=BUDGET,
                       audio_p99_sojourn_ns=None if p99_ms is None else int(p99_ms * MS))


def settled(rate=HSPA):
    return TunerState(target_ns=target_for(rate, BUDGET), codel_target_ns=codel_target_for(rate))


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
def test_codel_target_is_5ms_or_one_frame_as_the_data_plane_derives_it(rate):
    assert codel_target_for(rate) == max(5 * MS, frame_ns(rate))
    assert codel_target_for(rate) == pipeline_params(rate, "iwa").codel.target_ns  # so the loop writes no change


def test_steady_without_violation():
    s = settled()
    d = tune(s, obs(0))
    assert d.state == s and d.reason == "steady"
    assert tune(s, obs(0, p99_ms=None)).state == s  # no audio in the period: nothing to learn


def test_violation_lowers_the_target_by_the_excess():
    s = settled()
    limit = BUDGET - frame_ns(HSPA)  # 33.9 ms
    d = tune(s, obs(5 * NS, p99_ms=40.0))
    assert d.state.target_ns == s.target_ns - (40 * MS - limit)
    assert d.state.last_violation_ns == 5 * NS and "audio p99 sojourn 40.0 ms" in d.reason
    # exactly at the limit is no violation
    assert tune(s, Observation(5 * NS, HSPA, BUDGET, limit)).state == s
    # a second violation lowers it by its own excess
    d2 = tune(d.state, obs(5 * NS + PERIOD, p99_ms=35.0))
    assert d2.state.target_ns == d.state.target_ns - (35 * MS - limit)


def test_target_never_below_one_frame():
    d = tune(settled(), obs(0, p99_ms=500.0))
    assert d.state.target_ns == frame_ns(HSPA)
    d = tune(d.state, obs(PERIOD, p99_ms=500.0))
    assert d.state.target_ns == frame_ns(HSPA) and "floor" in d.reason


def test_recovery_one_frame_per_period_after_a_quiet_second():
    d = tune(settled(), obs(0, p99_ms=500.0))  # down to one frame
    low, frame = d.state.target_ns, frame_ns(HSPA)
    ds = run(d.state, [obs(k * PERIOD) for k in range(1, 20)])
    targets = [x.state.target_ns for x in ds]
    quiet_periods = QUIET_NS // PERIOD  # 10
    assert targets[: quiet_periods - 1] == [low] * (quiet_periods - 1)  # within the second: held
    assert targets[quiet_periods - 1] == low + frame  # t = 1 s: first step
    assert targets[quiet_periods] == low + 2 * frame and "+1 frame" in ds[quiet_periods].reason
    assert targets[-1] == target_for(HSPA, BUDGET)  # back at the formula's value, never above it
    assert max(targets) == target_for(HSPA, BUDGET)


def test_a_violation_restarts_the_quiet_second():
    d = tune(settled(), obs(0, p99_ms=36.0))
    ds = run(d.state, [obs(k * PERIOD, p99_ms=36.0 if k == 5 else 2.0) for k in range(1, 16)])
    targets = [x.state.target_ns for x in ds]
    assert targets[4] < targets[3]  # the second violation, at 0.5 s
    assert targets[5:14] == [targets[4]] * 9  # held until 1.5 s
    assert targets[14] == min(targets[4] + frame_ns(HSPA), target_for(HSPA, BUDGET)) > targets[4]


def test_rate_change_recomputes_both_targets_in_the_same_period():
    s = settled(LTE)
    d = tune(s, obs(3 * NS, rate=HSPA))
    assert d.state.target_ns == target_for(HSPA, BUDGET) != s.target_ns
    assert d.state.codel_target_ns == frame_ns(HSPA) != s.codel_target_ns == 5 * MS
    assert "target 35.0 ms -> 27.9 ms" in d.reason and "codel target 5.0 ms -> 6.1 ms" in d.reason
    assert tune(d.state, obs(3 * NS + PERIOD, rate=HSPA)).state == d.state  # and it stays there


def test_a_reduction_in_force_survives_a_rate_change():
    d = tune(settled(LTE), obs(0, p99_ms=40.0, rate=LTE))
    cut = target_for(LTE, BUDGET) - d.state.target_ns
    assert cut == 40 * MS - (BUDGET - frame_ns(LTE))
    d = tune(d.state, obs(PERIOD, rate=HSPA))
    assert d.state.target_ns == target_for(HSPA, BUDGET) - cut
    d = tune(d.state, obs(2 * PERIOD, rate=EDGE))  # no room below the ceiling at EDGE: the frame
    assert d.state.target_ns == frame_ns(EDGE)


def test_edge_target_stays_one_frame_whatever_the_audio_shows():
    s = settled(EDGE)
    for k, p99 in enumerate([None, 2.0, 80.0, 300.0]):
        d = tune(s, obs(k * PERIOD, p99_ms=p99, rate=EDGE))
        assert d.state.target_ns == frame_ns(EDGE)
