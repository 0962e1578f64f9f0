"""The closed loop (controller.tuner.ClosedLoop) fed synthetic telemetry records: no switch needed."""

import csv
import io

import pytest

from controller import policy
from controller.tuner import COLUMNS, ClosedLoop, parse_rate_schedule
from refmodel.constants import Aqm, Decision, TrackFlag, TrafficClass
from refmodel.params import byte_time_q16
from refmodel.telemetry import Record

MS = 1_000_000
CFG = {"link": {"rate_bps": 2e6}, "buffer": {"packets": 48}, "aqm": {"name": "iwa"}}


def rec(cls=TrafficClass.UDP, sojourn_ms=1.0, decision=Decision.PASS, tflags=0):
    return Record(aqm=Aqm.IWA, decision=decision, reason=0, cls=cls, tflags=tflags, length=94, seq=0, rand=0,
                  ts_ns=0, sojourn_ns=int(sojourn_ms * MS), backlog_ns=0, src=0, dst=0, sport=0, dport=0, proto=17,
                  s1=0, s2=0)


def make(cfg=CFG, **kw):
    log = io.StringIO()
    return ClosedLoop(cfg, t0_ns=0, log=log, **kw), log


def rows(log):
    return list(csv.DictReader(io.StringIO(log.getvalue())))


def test_one_row_per_period_with_inputs_and_decision():
    loop, log = make()
    assert loop.tick(0) is None  # the first call starts the clock
    for k in range(1, 6):
        loop.add(rec(sojourn_ms=k))
        loop.tick(k * 100 * MS)
    r = rows(log)
    assert list(r[0]) == COLUMNS
    assert len(r) == 5 and [int(x["audio_pkts"]) for x in r] == [1] * 5
    assert int(r[2]["audio_p99_sojourn_ns"]) == 3 * MS
    assert int(r[0]["target_ns"]) == policy.target_for(2e6, 40 * MS)


def test_allowance_fits_the_expected_starts_and_is_written_before_the_burst():
    loop, log = make()
    loop.tick(0)
    act = loop.tick(100 * MS)  # a quiet first period: sized for PRIOR_STARTS at 2 Mbit/s
    want = policy.allowance_for(2e6, policy.target_for(2e6, 40 * MS), policy.PRIOR_STARTS)
    assert act is not None and not act.rate_changed and act.params.iwa.allowance_bytes == want
    for _ in range(6):
        loop.add(rec(cls=TrafficClass.TCP_CTRL, tflags=TrackFlag.NEW_FLOW))
    act = loop.tick(200 * MS)  # the burst: the window grows with it, the allowance stays
    assert act is not None and act.params.iwa.allowance_bytes == want
    assert act.params.iwa.window_ns == policy.window_for(2e6, 6, 65536)
    assert rows(log)[1]["new_flows"] == "6" and "6 flows started" in rows(log)[1]["reason"]


def test_audio_over_target_halves_the_allowance():
    loop, _ = make({**CFG, "aqm": {"name": "iwa", "iwa": {"allowance_bytes": 4 * 1460}}})
    loop.tick(0)
    loop.add(rec(sojourn_ms=90))
    act = loop.tick(100 * MS)
    assert act.params.iwa.allowance_bytes == policy.MIN_ALLOWANCE


def test_rate_change_rederives_the_queue_and_settles_in_one_period():
    loop, log = make(rate_schedule=parse_rate_schedule("0.25:1e6"))
    loop.tick(0)
    loop.tick(100 * MS)
    loop.tick(200 * MS)
    act = loop.tick(300 * MS)
    assert act is not None and act.rate_changed and act.rate_bps == 1e6
    assert act.params.queue.byte_time_q16 == byte_time_q16(1e6)
    assert act.params.iwa.target_ns == policy.target_for(1e6, 40 * MS)
    for k in range(4, 14):  # settled: nothing more to write
        assert loop.tick(k * 100 * MS) is None
    assert rows(log)[2]["rate_bps"] == "1000000" and "link rate" in rows(log)[2]["reason"]


def test_other_aqms_are_observed_never_tuned():
    loop, log = make({**CFG, "aqm": {"name": "fifo"}})
    loop.tick(0)
    loop.add(rec(sojourn_ms=300))
    assert loop.tick(100 * MS) is None
    assert rows(log)[0]["aqm"] == "fifo" and "observe only" in rows(log)[0]["reason"]


def test_defined_state_is_the_configured_knobs_at_the_current_rate():
    loop, _ = make()
    loop.tick(0)
    for _ in range(6):
        loop.add(rec(cls=TrafficClass.TCP_CTRL, tflags=TrackFlag.NEW_FLOW))
    loop.tick(100 * MS)
    assert loop.defined_state().iwa == loop.base.iwa


@pytest.mark.parametrize("bad", ["20", "x:1e6", "-1:1e6", "5:0"])
def test_bad_rate_schedules_are_refused(bad):
    with pytest.raises(ValueError, match="rate schedule item"):
        parse_rate_schedule(bad)


def test_bad_config_is_refused_before_anything_runs():
    from refmodel.params import ConfigError
    with pytest.raises(ConfigError, match="rate_bps"):
        ClosedLoop({"link": {"rate_bps": -1}, "aqm": {"name": "iwa"}})
