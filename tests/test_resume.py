"""Resume from the run's own record (no network needed): the scenario, replication count and switch come
from RUN_DIR/run.json as the run started, a contradicting --scenario/--switch is refused, the history is
appended, and case directories carry the scenario so two scenarios can never be confused."""

from __future__ import annotations

import json

import pytest

from accessnet import run, scenario as scen, sweep
from accessnet.record import RecordError


def started_run(tmp_path, name="smoke", reps=2, switch="model"):
    sc = scen.load(name)
    rundir = tmp_path / "run"
    rundir.mkdir()
    run.write_record(rundir, run.new_record(sc, reps, switch))
    return rundir


def test_resume_takes_scenario_reps_and_switch_from_the_record(tmp_path):
    rundir = started_run(tmp_path, "web1", reps=5)
    rec, sc = run.resume_record(rundir, None, None, None)
    assert sc.name == "web1" and rec["reps"] == 5 and rec["switch"] == "model"
    units = run.units_of(sc, rec["reps"], rec["format"])
    assert len(units) == len(sc.cases) * 5 and all(u.dirname.startswith("web1-") for u in units)
    assert [h["action"] for h in rec["history"]] == ["start", "resume"]


def test_resume_uses_the_scenario_as_it_was_not_the_file_now(tmp_path):
    rundir = started_run(tmp_path, "web1")
    rec = json.loads((rundir / "run.json").read_text())
    rec["file"]["web"]["flows"] = 3  # as if the file had said so when the run started
    run.write_record(rundir, rec)
    _, sc = run.resume_record(rundir, None, None, None)
    assert sc.cases[0].spec["web"]["flows"] == 3


@pytest.mark.parametrize("scenario, switch, match", [
    ("web6", None, "run of scenario 'web1', not 'web6'"),
    (None, "bmv2", "mix kinds"),
])
def test_a_contradicting_command_line_is_refused(tmp_path, scenario, switch, match):
    rundir = started_run(tmp_path, "web1")
    with pytest.raises(RecordError, match=match):
        run.resume_record(rundir, scenario, None, switch)


def test_naming_the_same_scenario_and_raising_reps_is_allowed(tmp_path):
    rundir = started_run(tmp_path, "web1", reps=2)
    rec, sc = run.resume_record(rundir, "web1", 4, "model")
    assert rec["reps"] == 4 and sc.name == "web1"


def test_a_sweep_directory_and_a_non_run_are_refused_with_the_right_command(tmp_path):
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "run.json").write_text(json.dumps({"sweep": "web-iw", "file": {}}))
    with pytest.raises(RecordError, match="accessnet.sweep --resume"):
        run.resume_record(tmp_path / "s", None, None, None)
    with pytest.raises(RecordError, match="not a run directory"):
        run.resume_record(tmp_path / "nothing", None, None, None)
    rundir = started_run(tmp_path)
    with pytest.raises(RecordError, match="accessnet.run --resume"):
        sweep.resume_record(rundir, None)


def test_an_old_record_keeps_its_case_directories(tmp_path):
    rundir = started_run(tmp_path, "web1")
    rec = json.loads((rundir / "run.json").read_text())
    for k in ("format", "history", "kind", "path"):
        rec.pop(k)
    run.write_record(rundir, rec)
    rec, sc = run.resume_record(rundir, None, None, None)
    assert rec["format"] == 1
    assert run.units_of(sc, 1, rec["format"])[0].dirname == "hspa-48p-fifo-iw3"  # as format 1 named it


def test_sweep_resume_uses_its_own_record(tmp_path):
    data = {"scenarios": ["web1"], "aqms": ["fifo", "iwa"], "iws": [10], "reps": 2}
    files = sweep.scenario_files(data)
    files["web1"]["file"]["web"]["flows"] = 2  # the scenario as it was when the sweep started
    rundir = tmp_path / "sw"
    rundir.mkdir()
    run.write_record(rundir, {"format": 2, "kind": "sweep", "sweep": "mine", "file": data, "scenarios": files,
                              "history": []})
    rec, units = sweep.resume_record(rundir, None)
    assert len(units) == 4 and {u.case.spec["web"]["flows"] for u in units} == {2}
    assert rec["history"][-1]["action"] == "resume"
    with pytest.raises(RecordError, match="is sweep 'mine', not 'web-iw'"):
        sweep.resume_record(rundir, "web-iw")
