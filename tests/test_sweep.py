"""The sweep runner's bookkeeping with a stand-in for one replication (no network needed): matrix
expansion, atomic results, resume after an interruption, failures recorded and carried over."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from accessnet import sweep
from accessnet.replication import Interrupted
from refmodel.params import ConfigError


def fake_run(calls: list, fail: set[str] = frozenset(), stop_after: int | None = None):
    def run_one(sc, case, rep, outdir: Path, want, slot):
        key = f"{outdir.name}/rep{rep}"
        if stop_after is not None and len(calls) >= stop_after:
            (outdir / f"rep{rep}.tmp").mkdir(parents=True, exist_ok=True)  # what a killed replication leaves
            raise Interrupted()
        calls.append(key)
        d = outdir / f"rep{rep}"
        d.mkdir(parents=True)
        status = "failed" if key in fail else "ok"
        (d / "meta.json").write_text(json.dumps({"status": status, "switch": "fake", "error": "boom"}))
        return {"status": status, "switch": "fake", "error": "switch died"}
    return run_one


def write_sweep(tmp: Path, **kw) -> Path:
    body = {"scenarios": ["web1", "web6"], "profiles": ["hspa", "lte"], "aqms": ["fifo", "iwa"], "iws": [10],
            "reps": 2, **kw}
    lines = [f"{k} = {json.dumps(v)}" for k, v in body.items()]
    p = tmp / "s.toml"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_matrix_expands_scenario_profile_aqm_iw_reps(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path)))
    assert len(units) == 2 * 2 * 2 * 1 * 2
    keys = [u.key for u in units]
    assert len(set(keys)) == len(keys)
    assert "web6-lte-250p-iwa-iw10/rep1" in keys  # LTE 2*BDP = 250 packets (seed BDP 125)
    assert {u.case.profile.name for u in units} == {"hspa", "lte"}


def test_parts_are_matrices_over_the_top_level_and_overlaps_run_once(tmp_path):
    p = tmp_path / "parts.toml"
    p.write_text('aqms = ["fifo", "iwa"]\nreps = 2\n'
                 '[[part]]\nscenarios = ["web6"]\nprofiles = ["hspa"]\niws = [10]\n'
                 '[[part]]\nscenarios = ["web6"]\nprofiles = ["hspa"]\niws = [10]\nreps = 5\n'  # more reps of it
                 '[[part]]\nscenarios = ["web1"]\nprofiles = ["edge", "lte"]\niws = [3]\naqms = ["codel"]\n')
    _, units = sweep.load_sweep(str(p))
    keys = [u.key for u in units]
    assert len(keys) == len(set(keys))  # the first part's reps are not run twice
    assert sum(k.startswith("web6-hspa-48p-") for k in keys) == 2 * 5
    assert {k.split("/")[0] for k in keys if k.startswith("web1")} == {"web1-edge-14p-codel-iw3",
                                                                       "web1-lte-250p-codel-iw3"}
    p.write_text('[[part]]\nscenarios = ["web6"]\nbogus = 1\n')
    with pytest.raises(ConfigError, match="part 1: unknown key"):
        sweep.load_sweep(str(p))


def test_initial_rto_and_cc_are_matrix_keys_and_the_rto_names_its_cases(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path, profiles=["hspa"], aqms=["fifo"], irtos=[1, 3],
                                                cc="reno")))
    names = {u.case.name for u in units}
    assert names == {f"web{n}-hspa-48p-fifo-iw10-irto{r}" for n in (1, 6) for r in (1, 3)}
    assert {u.case.pair_key for u in units} == {f"web{n}-hspa-48p-iw10-irto{r}" for n in (1, 6) for r in (1, 3)}
    assert {(u.sc.irto_s, u.case.irto_s) for u in units} == {(1, 1), (3, 3)} and {u.sc.cc for u in units} == {"reno"}
    _, plain = sweep.load_sweep(str(write_sweep(tmp_path, profiles=["hspa"], aqms=["fifo"])))
    assert {u.case.name for u in plain} == {"web1-hspa-48p-fifo-iw10", "web6-hspa-48p-fifo-iw10"}  # unchanged
    for bad in ([], [0], "3"):
        with pytest.raises(ConfigError, match="irto"):
            sweep.load_sweep(str(write_sweep(tmp_path, irtos=bad)))


def test_the_ip_family_is_a_matrix_key_and_names_its_ipv6_cases(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path, profiles=["hspa"], aqms=["fifo"], ips=[4, 6])))
    assert {u.case.name for u in units} == {f"web{n}-hspa-48p-fifo-iw10{sfx}" for n in (1, 6) for sfx in ("", "-ip6")}
    assert {u.case.ip for u in units} == {4, 6}
    for bad in ([], [5], "6"):
        with pytest.raises(ConfigError, match="ip"):
            sweep.load_sweep(str(write_sweep(tmp_path, ips=bad)))


def test_telemetry_is_a_matrix_key_that_reaches_each_cases_switch(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path, profiles=["lte"], telemetry="datagrams")))
    assert units and {u.case.switch_cfg["link"].get("telemetry") for u in units} == {"datagrams"}
    with pytest.raises(ConfigError, match="telemetry = 'udp': must be one of"):
        sweep.load_sweep(str(write_sweep(tmp_path, telemetry="udp")))


def test_the_held_out_sweep_names_every_case_of_issue_11():
    _, units = sweep.load_sweep("iwa-eval")
    cases = {u.dirname for u in units}
    aqms = {"fifo", "red", "redok", "codel", "pie", "iwa"}
    for w in ("web1", "web2", "web6", "burst6+6", "burst18+18", "bulk", "web6-bulk", "users5"):
        # (redok brings its own buffer, BRIEF: 100 packets at HSPA)
        assert {a for a in aqms if any(c.startswith(f"{w}-hspa-") and c.endswith(f"-{a}-iw10") for c in cases)} == aqms, w
    assert sum(u.dirname == "web6-hspa-48p-iwa-iw10" for u in units) == 10
    assert sum(u.dirname == "web6-edge-14p-iwa-iw10" for u in units) == 10  # its audio varies most by replication
    for link in ("web6-edge-14p-", "web6-lte-250p-", "web6-hspa-24p-", "web6-bulk-edge-14p-", "web6-bulk-hspa-24p-"):
        assert {c for c in cases if c.startswith(link)} >= {f"{link}{a}-iw{iw}" for a in aqms - {"redok"}
                                                            for iw in (3, 10)}, link


def test_the_ietf79_sweeps_hold_the_seeds_matrix():
    _, units = sweep.load_sweep("ietf79")
    cases = list({u.case.name: u.case for u in units}.values())
    assert len(cases) == 4 * 3 * 2 * 2 * 2 + 4 * 2 * 2 + 4 * 3 * 2 * 2 * 2  # fifo bdp/2bdp, fifo 50p EDGE, red+redok
    assert len(units) == 100 * len(cases)
    assert {u.sc.cc for u in units} == {"reno"} and {c.irto_s for c in cases} == {1, 3}
    assert {c.aqm for c in cases if c.buffer == {"packets": 50} and c.profile.name == "edge"} == {"fifo", "redok"}
    assert {c.buffer["packets"] for c in cases if c.aqm == "redok"} == {50, 100, 400}  # the seed's REDok buffers
    _, quick = sweep.load_sweep("ietf79-quick")
    assert {u.case.name for u in quick} <= {c.name for c in cases}  # a subset of the same cases
    assert len({u.case.name for u in quick}) == 2 * 2 * 2 * 2 * 2 and {u.rep for u in quick} == {0, 1, 2}


def test_the_seed002_sweeps_run_the_webrtc_flow_at_both_delays_under_every_aqm():
    for name, reps in (("seed002", 30), ("seed002-quick", 3)):
        _, units = sweep.load_sweep(name)
        cases = {u.case.name: u.case for u in units}
        assert {(c.profile.delay_ms, c.aqm) for c in cases.values()} == {
            (d, a) for d in (50.0, 100.0) for a in ("fifo", "red", "redok", "codel", "pie", "iwa")}
        assert {c.profile.rate_bps for c in cases.values()} == {5e6} and len(units) == reps * len(cases)
        assert all("webrtc" in c.spec for c in cases.values())
        assert {(c.scenario, c.spec["webrtc"].get("flows", 1), c.spec["users"]["count"]) for c in cases.values()} == {
            ("webrtc5", 1, 5), ("webrtc10", 2, 10)}  # the seed's two cases


@pytest.fixture
def fake_pion(tmp_path, monkeypatch):
    """A stand-in for build/pion-rtc (the scenario only checks that it is executable)."""
    from accessnet import scenario as scen
    fake = tmp_path / "pion-rtc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(scen, "PION_BINARY", fake)
    return fake


SEED002_AQMS = ("fifo", "red", "redok", "codel", "pie", "iwa")


def test_the_seed002_stacks_sweeps_run_both_stacks_paired(fake_pion):
    """Issue 35 item 3: the seed's four cases under FIFO and the 1 + 5 case at 50 ms under every P4 AQM, each
    with aiortc and Pion; 10 (quick: 3) replications of 18 cases; aiortc's cases keep seed002's names (and
    seeds), Pion's end in -pion; each stack's AQMs pair with its own FIFO, and both stacks of a case draw the
    same seed in replication k."""
    want = {f"{sc}-{d}-50p-fifo-iw10{s}" for sc in ("webrtc5", "webrtc10") for d in ("rtc50", "rtc100")
            for s in ("", "-pion")}
    want |= {f"webrtc5-rtc50-{'100p' if a == 'redok' else '50p'}-{a}-iw10{s}" for a in SEED002_AQMS
             for s in ("", "-pion")}
    _, seed002 = sweep.load_sweep("seed002")
    old_names = {u.case.name for u in seed002}
    for name, reps in (("seed002-stacks", 10), ("seed002-stacks-quick", 3)):
        _, units = sweep.load_sweep(name)
        cases = {u.case.name: u.case for u in units}
        assert set(cases) == want and len(cases) == 18
        assert len(units) == 18 * reps and {u.rep for u in units} == set(range(reps))
        assert {c.stack for c in cases.values()} == {"aiortc", "pion"}
        assert all(c.spec["webrtc"].get("stack", "aiortc") == c.stack for c in cases.values())
        assert {n for n, c in cases.items() if c.stack == "aiortc"} <= old_names  # seed002's cases, unchanged
        units_by = {(u.case.name, u.rep): u for u in units}
        for n, c in cases.items():
            if c.stack != "pion":
                continue
            twin = cases[n.removesuffix("-pion")]
            assert c.pair_key == twin.pair_key + "-pion" and c.draw_key == twin.draw_key == twin.pair_key
            for k in range(reps):  # paired across stacks: the same seed in every replication
                a, b = units_by[(n, k)], units_by[(twin.name, k)]
                assert a.case.rep_seed(a.sc.seed, k) == b.case.rep_seed(b.sc.seed, k)
        fifo = {c.pair_key for c in cases.values() if c.aqm == "fifo"}
        assert all(c.pair_key in fifo for c in cases.values())  # every AQM has its stack's FIFO to pair with
        assert {c.pair_key for c in cases.values() if c.aqm != "fifo"} == {"webrtc5-rtc50-50p-iw10",
                                                                          "webrtc5-rtc50-50p-iw10-pion"}
        seeds = {c.rep_seed(1, 0) for c in cases.values()}
        assert len(seeds) == 4  # one draw per seed case (delay x users), shared by its AQMs and stacks


def test_stacks_is_a_matrix_key_for_webrtc_scenarios_only(tmp_path, fake_pion):
    p = tmp_path / "st.toml"
    p.write_text('scenarios = ["webrtc5"]\naqms = ["fifo"]\nreps = 1\nstacks = ["pion"]\n')
    _, units = sweep.load_sweep(str(p))
    assert [u.key for u in units] == ["webrtc5-rtc50-50p-fifo-iw10-pion/rep0"]
    assert units[0].case.spec["webrtc"]["stack"] == "pion"
    p.write_text('scenarios = ["webrtc5", "web6"]\nstacks = ["aiortc", "pion"]\n')
    with pytest.raises(ConfigError, match="web6.toml: a WebRTC stack .* without \\[webrtc\\]"):
        sweep.load_sweep(str(p))
    for bad, says in (('[]', "stacks = \\[\\]: must be a non-empty list"), ('"pion"', "stacks = 'pion'"),
                      ('["libwebrtc"]', "stack = 'libwebrtc': must be one of 'aiortc', 'pion'")):
        p.write_text(f'scenarios = ["webrtc5"]\nstacks = {bad}\n')
        with pytest.raises(ConfigError, match=says):
            sweep.load_sweep(str(p))


def test_a_sweep_of_sweeps_runs_the_included_matrices_in_order_and_refuses_anything_else(tmp_path):
    _, quick = sweep.load_sweep("paper-quick")
    parts = [sweep.load_sweep(n)[1] for n in ("pam13-quick", "ietf79-quick")]
    assert [u.key for u in quick] == [u.key for p in parts for u in p]  # PAM'13 first, then IETF79
    assert {u.sc.cc for u in quick if u.case.scenario.startswith("burst")} == {"reno"}  # each part keeps its keys
    assert {u.sc.cc for u in quick if not u.case.scenario.startswith("burst")} != {"reno"}
    data, full = sweep.load_sweep("paper")
    assert data["included"] == ["pam13", "ietf79"] and "include" not in data  # the record keeps the matrices
    assert len(full) == sum(len(sweep.load_sweep(n)[1]) for n in ("pam13", "ietf79"))
    assert [u.key for u in sweep.check_sweep(data, "paper.toml")] == [u.key for u in full]  # what a resume reads
    (tmp_path / "a.toml").write_text(f'include = ["{tmp_path / "b.toml"}"]\n')
    (tmp_path / "b.toml").write_text(f'include = ["{tmp_path / "a.toml"}"]\n')
    with pytest.raises(ConfigError, match="includes itself"):
        sweep.load_sweep(str(tmp_path / "a.toml"))
    (tmp_path / "c.toml").write_text('include = ["pam13-quick"]\nreps = 2\n')
    with pytest.raises(ConfigError, match="names nothing else"):
        sweep.load_sweep(str(tmp_path / "c.toml"))
    (tmp_path / "d.toml").write_text('include = "pam13-quick"\n')
    with pytest.raises(ConfigError, match="non-empty list"):
        sweep.load_sweep(str(tmp_path / "d.toml"))


def test_only_selects_replications_by_name_and_the_record_keeps_it(tmp_path, capsys):
    path = str(write_sweep(tmp_path))
    assert sweep.main([path, "--list", "--only", "lte-250p-iwa|web1-hspa-48p-fifo-iw10/rep1"]) == 0
    listed = capsys.readouterr().out.split()
    assert listed[:-2] == ["web1-hspa-48p-fifo-iw10/rep1", "web1-lte-250p-iwa-iw10/rep0",
                           "web1-lte-250p-iwa-iw10/rep1", "web6-lte-250p-iwa-iw10/rep0",
                           "web6-lte-250p-iwa-iw10/rep1"]
    # a resumed sweep runs the selection its record kept
    data, units = sweep.load_sweep(path)
    rundir = tmp_path / "run"
    rundir.mkdir()
    record = {"sweep": "s", "file": data, "scenarios": sweep.scenario_files(data), "only": "web6-lte"}
    (rundir / "run.json").write_text(json.dumps(record))
    _, resumed = sweep.resume_record(rundir, None)
    assert [u.key for u in resumed] == [u.key for u in units if "web6-lte" in u.key] != []


def test_only_that_selects_nothing_or_is_no_regex_is_refused(tmp_path, capsys):
    path = str(write_sweep(tmp_path))
    assert sweep.main([path, "--list", "--only", "edge"]) == 2
    assert "matches none of the sweep's 16 replications" in capsys.readouterr().err
    assert sweep.main([path, "--list", "--only", "web(6"]) == 2
    assert "not a regular expression" in capsys.readouterr().err
    assert sweep.main(["--resume", str(tmp_path), "--only", "web6"]) == 2
    assert "keeps the selection it started with" in capsys.readouterr().err


def test_bad_sweeps_name_the_problem(tmp_path):
    with pytest.raises(ConfigError, match="unknown key"):
        sweep.load_sweep(str(write_sweep(tmp_path, colour=["red"])))
    with pytest.raises(ConfigError, match="aqm 'blue' is unknown"):
        sweep.load_sweep(str(write_sweep(tmp_path, aqms=["blue"])))
    with pytest.raises(ConfigError, match="not found"):
        sweep.load_sweep(str(write_sweep(tmp_path, scenarios=["nope"])))


def test_interrupted_sweep_resumes_without_redoing_or_losing_anything(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path)))
    rundir = tmp_path / "run"
    first: list = []
    with pytest.raises(Interrupted):
        sweep.execute(units, rundir, "model", run_one=fake_run(first, stop_after=5), say=lambda s: None)
    assert len(first) == 5
    assert len(list(rundir.glob("*/rep*.tmp"))) == 1  # the killed one: not counted as done
    second: list = []
    said: list[str] = []
    res = sweep.execute(units, rundir, "model", run_one=fake_run(second), say=said.append)
    assert res == {"ran": len(units) - 5, "skipped": 5, "failed": 0}
    assert not set(first) & set(second) and len(set(first) | set(second)) == len(units)
    assert "5 of 16 replications already done" in said[0]
    assert any("ETA" in s for s in said)


def test_a_failed_replication_is_recorded_and_the_sweep_goes_on(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path)))
    bad = units[3].key
    said: list[str] = []
    res = sweep.execute(units, tmp_path / "run", "model", run_one=fake_run([], fail={bad}), say=said.append)
    assert res["ran"] == len(units) and res["failed"] == 1
    assert any(bad in s and "failed" in s and "switch died" in s for s in said)
    assert json.loads((tmp_path / "run" / bad / "meta.json").read_text())["status"] == "failed"


def test_parallel_slots_each_run_a_share(tmp_path):
    _, units = sweep.load_sweep(str(write_sweep(tmp_path)))
    rundir = tmp_path / "run"

    def run_one(sc, case, rep, outdir, want, slot):
        time.sleep(0.05)  # long enough that both slots take work
        d = outdir / f"rep{rep}"
        d.mkdir(parents=True)
        (d / "meta.json").write_text(json.dumps({"status": "ok", "slot": slot}))
        return {"status": "ok", "switch": "fake"}

    res = sweep.execute(units, rundir, "model", jobs=2, run_one=run_one, say=lambda s: None)
    assert res["ran"] == len(units) and res["failed"] == 0
    slots = {json.loads(p.read_text())["slot"] for p in rundir.glob("*/rep*/meta.json")}
    assert slots == {0, 1}
