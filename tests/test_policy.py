"""The IWA tuning policy on synthetic statistics (no switch)."""

from dataclasses import replace

from controller.policy import MIN_ALLOWANCE, MSS, NS, PRIOR_STARTS, Observation, TunerState, allowance_for, frame_ns, target_for, tune

MS = 1_000_000


def run(obs, state=None):
    s = state or TunerState()
    out = []
    for o in obs:
        d = tune(s, o)
        s = d.state
        out.append(d)
    return out


def quiet(t, rate=2e6, **kw):
    return Observation(t_ns=t, rate_bps=rate, jitter_budget_ns=40 * MS, new_flows=0, audio_p99_sojourn_ns=2 * MS,
                       **kw)


def test_target_from_the_jitter_budget_at_each_profile():
    assert target_for(2e6, 40 * MS) == 40 * MS - 2 * frame_ns(2e6)  # two frames of margin (12.1 ms)
    assert target_for(50e6, 40 * MS) == 35 * MS  # margin at least 5 ms
    assert target_for(160e3, 40 * MS) == 75_700_000  # EDGE: one frame already exceeds the budget


def test_allowance_is_sized_before_a_burst_and_held_while_its_reserve_is_live():
    # before any burst: sized for PRIOR_STARTS parallel starts (the SYN-ACKs reserve what is in force)
    d = tune(TunerState(allowance_bytes=5 * MSS), quiet(0))
    assert d.state.allowance_bytes == allowance_for(2e6, target_for(2e6, 40 * MS), PRIOR_STARTS) == MIN_ALLOWANCE
    # 18 flows start: the policy plans a smaller share but holds the value their SYN-ACKs reserved
    s = replace(d.state, allowance_bytes=4 * MSS, planned_bytes=4 * MSS)
    d = tune(s, Observation(100 * MS, 2e6, 40 * MS, new_flows=18, audio_p99_sojourn_ns=None))
    assert "18 flows started" in d.reason and d.state.expected_starts == 18
    assert d.state.allowance_bytes == 4 * MSS
    planned = allowance_for(2e6, target_for(2e6, 40 * MS), 18)
    assert d.state.planned_bytes == planned == MIN_ALLOWANCE and "held" in d.reason
    ds = run([quiet(100 * MS + k * 100 * MS) for k in range(1, 80)], d.state)
    window = d.state.window_ns
    held = [x.state.allowance_bytes for k, x in enumerate(ds, 1) if k * 100 * MS < window]
    assert set(held) == {4 * MSS}
    assert ds[int(window / (100 * MS)) + 1].state.allowance_bytes == planned  # written once it closed


def test_audio_violation_halves_then_recovers_after_a_second():
    s = TunerState(allowance_bytes=6 * MSS, target_ns=target_for(50e6, 40 * MS))
    bad = Observation(0, 50e6, 40 * MS, 0, 80 * MS)
    d = tune(s, bad)
    assert d.state.allowance_bytes == 3 * MSS and "halved" in d.reason
    ds = run([quiet(k * 100 * MS, rate=50e6) for k in range(1, 30)], d.state)
    assert ds[5].state.allowance_bytes == 3 * MSS  # still within the second after the violation
    assert ds[-1].state.allowance_bytes > 3 * MSS


def test_rate_change_mid_run_settles_within_a_second():
    before = run([quiet(k * 100 * MS, rate=50e6) for k in range(20)])[-1].state
    assert before.allowance_bytes == allowance_for(50e6, target_for(50e6, 40 * MS), PRIOR_STARTS) == 10 * MSS
    after = [d.state for d in run([quiet(2 * NS + k * 100 * MS, rate=2e6) for k in range(10)], before)]
    want = (target_for(2e6, 40 * MS), allowance_for(2e6, target_for(2e6, 40 * MS), PRIOR_STARTS))
    assert (after[0].target_ns, after[0].allowance_bytes) == want  # in the first period (100 ms)
    assert all((s.target_ns, s.allowance_bytes) == want for s in after)  # and it stays there


def test_allowance_never_below_its_floor():
    s = TunerState(allowance_bytes=MIN_ALLOWANCE)
    d = tune(s, Observation(0, 160e3, 40 * MS, 18, 500 * MS))
    assert d.state.allowance_bytes == MIN_ALLOWANCE == 2 * MSS and "floor" in d.reason


def test_window_covers_the_parallel_starts_at_the_link_rate_then_returns():
    from controller.policy import window_for
    assert window_for(2e6, 1, 65536) == 2 * NS  # one flow: the 2 s floor
    assert window_for(1e6, 6, 65536) == int(1.5 * 6 * 65536 * 8 * NS / 1e6)  # 4.7 s at 1 Mbit/s
    assert window_for(160e3, 18, 65536) == 10 * NS  # capped
    s = TunerState()
    d = tune(s, Observation(0, 1e6, 40 * MS, 6, None))
    assert d.state.window_ns == window_for(1e6, 6, 65536) and "window" in d.reason
    w = d.state.window_ns
    ds = run([quiet(k * 100 * MS, rate=1e6) for k in range(1, 60)], d.state)
    # held while the burst may still be starting (starts decay does not shrink it), released one window later
    held = [x.state.window_ns for x in ds[: int(w / (100 * MS)) - 1]]
    assert set(held) == {w}
    assert ds[-1].state.window_ns == window_for(1e6, 1, 65536)
