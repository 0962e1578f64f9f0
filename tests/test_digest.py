"""Replication digests (experiments.digest) and sweeps run in parts (accessnet.sweep --skip-digested): the
held-out table built from digests is the one built from the run directories, the numbers the hand
calculations of test_report give; what a digest cannot hold is refused by name; a part runs only what is not
digested yet."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from test_report import (IWA, TCP_START, UNIT, lost_at_end, make_run, paired_run, tel_records, unit_row,
                         write_rep, write_telemetry)
from test_sweep import write_sweep

from accessnet import sweep
from experiments import digest, iwa_table, report
from experiments.cases import ReportError, kept


def good_run(tmp_path: Path) -> Path:
    """test_report's paired run without its failed replications (a digest holds finished ones only)."""
    run = paired_run(tmp_path)
    for meta in run.glob("*/rep*/meta.json"):
        if json.loads(meta.read_text())["status"] != "ok":
            shutil.rmtree(meta.parent)
    return run


def table(dirs: list[Path]) -> list[str]:
    return iwa_table.iwa_table_md(report.load_cases(dirs)[0])


def test_the_table_from_digests_is_the_table_from_the_runs(tmp_path: Path):
    run = good_run(tmp_path)
    into = tmp_path / "digests"
    done = digest.write_digests([run], into)
    assert len(done["written"]) == 11 and not done["kept"] and not done["failed"]
    assert sorted(p.relative_to(into).as_posix() for p in digest.find_digests(into))[:2] == [
        "web2-hspa-24p-iwa-iw10/rep0.json", "web2-hspa-48p-codel-iw10/rep0.json"]
    from_digests = table([into])
    assert from_digests == table([run])
    row = unit_row(from_digests, UNIT)  # by hand (test_report): iwa's reps 0, 1, 2, 4 lose 0, 2, 3, 0 packets
    assert row["iwa level ≥ 2 (%)"] == f"{100 * (0 + 2 / 22 + 3 / 20 + 0) / 4:.1f}"
    assert row["reps"] == "fifo 4, codel 2, iwa 4"


def test_replications_the_host_stalled_are_named_under_the_table(tmp_path: Path):
    """A replication whose meta.json says the hypervisor took 2.5 s of CPU time from the VM is named as disturbed,
    with its steal; one with 0.9 s (below the 1 s limit) and those without the key are not."""
    run = good_run(tmp_path)
    metas = sorted(run.glob("*/rep*/meta.json"))
    for path, steal in zip(metas, (2500.0, 900.0)):
        path.write_text(json.dumps({**json.loads(path.read_text()), "host_steal_ms": steal}))
    into = tmp_path / "digests"
    digest.write_digests([run], into)
    line = next(x for x in iwa_table.table_block([into]) if x.startswith("Disturbed"))
    stalled = metas[0].parent
    assert line.endswith(f"{stalled.parent.name}/{stalled.name} (2.5 s).")
    assert line.count("/rep") == 1


def test_parts_on_different_days_make_one_table(tmp_path: Path):
    """Two parts (FIFO's replications, then IWA's and CoDel's) digested into one directory: the same table as one
    run holding all of them; a replication digested twice keeps its first digest unless replaced."""
    run = good_run(tmp_path)
    parts = [tmp_path / "day1", tmp_path / "day2"]
    for case in run.iterdir():
        dest = parts[0] if "-fifo-" in case.name else parts[1]
        dest.mkdir(exist_ok=True)
        shutil.copytree(case, dest / case.name)
    into = tmp_path / "digests"
    assert len(digest.write_digests([parts[0]], into)["written"]) == 4
    assert len(digest.write_digests([parts[1]], into)["written"]) == 7
    assert table([into]) == table([run])
    first = digest.digest_path(into, "web2-hspa-48p-fifo-iw10/rep0")
    before = first.read_text()
    first_meta = json.loads(before)["meta"]
    again = digest.write_digests([parts[0]], into)
    assert again["written"] == [] and len(again["kept"]) == 4 and first.read_text() == before
    meta = json.loads((parts[0] / "web2-hspa-48p-fifo-iw10/rep0/meta.json").read_text())
    (parts[0] / "web2-hspa-48p-fifo-iw10/rep0/meta.json").write_text(json.dumps({**meta, "lab": "another"}))
    assert len(digest.write_digests([parts[0]], into, replace=True)["written"]) == 4
    assert json.loads(first.read_text())["meta"] == {**first_meta, "lab": "another"}


def test_failed_replications_are_not_digested_and_bad_digests_fail_by_name(tmp_path: Path, capsys):
    run = paired_run(tmp_path)
    into = tmp_path / "digests"
    assert digest.main([str(run), "--into", str(into)]) == 0
    out = capsys.readouterr()
    assert "11 written, 0 already there (kept), 3 failed" in out.out and out.err.count("not digested (failed)") == 3
    assert not digest.digest_path(into, "web2-hspa-48p-red-iw10/rep0").exists()
    truncated = digest.digest_path(into, "web2-hspa-48p-iwa-iw10/rep1")
    truncated.write_text(truncated.read_text()[:100])
    other = digest.digest_path(into, "web2-hspa-48p-iwa-iw10/rep2")
    other.write_text(json.dumps({**json.loads(other.read_text()), "format": 99}))
    cases, failed = report.load_cases([into])
    why = {Path(f["path"]).name: f["error"] for f in failed}
    assert "not a readable digest" in why["rep1.json"] and "format 1" in why["rep2.json"]
    assert sum(len(c.reps) for c in cases) == 9
    with pytest.raises(ReportError, match="keeps no per-packet data"):
        kept(cases[0].reps[0])
    with pytest.raises(ReportError, match="no replication directories .* or digests"):
        report.load_cases([_empty(tmp_path)])
    cases, failed = report.load_cases([into], [40.0, 50.0])  # 50 ms: not among the digests' jitter buffers
    assert sum("no metrics at jitter buffers [50.0] ms" in f["error"] for f in failed) == 9 and len(failed) == 11
    assert digest.main([str(_empty(tmp_path)), "--into", str(into)]) == 2
    assert "no replication directories" in capsys.readouterr().err


def _empty(tmp_path: Path) -> Path:
    d = tmp_path / "empty"
    d.mkdir(exist_ok=True)
    return d


def test_a_web_users_pages_survive_the_digest(tmp_path: Path):
    """users_completion reads flows.csv's rows (pages, some never completed): the same from the digests."""
    run = tmp_path / "users"
    pages = {"fifo": [(0, 0.0, 1.0), (0, 2.0, 2.0), (1, 0.5, 3.0), (1, 4.0, None)],
             "iwa": [(0, 0.0, 1.1), (0, 2.0, None), (1, 0.5, 3.4), (1, 4.5, None)]}
    for aqm, rows in pages.items():
        rep = write_rep(run, f"users5-hspa-48p-{aqm}-iw10", 0, lost_at_end(0), aqm=aqm, pair="users5-hspa-48p-iw10",
                        meta_extra={"scenario": "users5", "plan": {"bursts": [], "workloads": {"users": {"count": 2}}}})
        (rep / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n" + "".join(
            f"{i},{u},{TCP_START + round(t * 1e9)},{'' if d is None else TCP_START + round((t + d) * 1e9)},"
            f"100000,0,0,{0 if d is None else 1}\n" for i, (u, t, d) in enumerate(rows)))
    into = tmp_path / "digests"
    digest.write_digests([run], into)
    by_aqm = {str(c.aqm): c for c in report.load_cases([into])[0]}
    assert iwa_table.users_completion(by_aqm) == {"fifo": [pytest.approx(2.0)], "iwa": [pytest.approx(2.25)]}
    assert table([into]) == table([run])


def test_a_sweep_part_skips_what_is_digested_and_its_record_keeps_the_directory(tmp_path: Path, capsys):
    path = str(write_sweep(tmp_path))
    _, units = sweep.load_sweep(path)
    into = tmp_path / "digests"
    for u in units[:5]:
        digest.digest_path(into, u.key).parent.mkdir(parents=True, exist_ok=True)
        digest.digest_path(into, u.key).write_text("{}")
    assert sweep.main([path, "--list", "--skip-digested", str(into)]) == 0
    listed = capsys.readouterr().out.split()
    assert listed[:-2] == [u.key for u in units[5:]] and listed[-2] == str(len(units) - 5)
    args = sweep._parser().parse_args([path, "--skip-digested", str(into)])
    rec, chosen = sweep._record(args)
    assert rec["skip_digested"] == str(into.resolve()) and len(chosen) == len(units) - 5
    # resumed later, after another part digested two more: those are left out too
    for u in units[5:7]:
        digest.digest_path(into, u.key).parent.mkdir(parents=True, exist_ok=True)
        digest.digest_path(into, u.key).write_text("{}")
    rundir = tmp_path / "run"
    rundir.mkdir()
    (rundir / "run.json").write_text(json.dumps(rec))
    _, resumed = sweep.resume_record(rundir, None)
    assert [u.key for u in resumed] == [u.key for u in units[7:]]
    assert sweep.main([path, "--list", "--skip-digested", str(tmp_path / "nope")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert sweep.main(["--resume", str(rundir), "--skip-digested", str(into)]) == 2
    assert "keeps the selection it started with" in capsys.readouterr().err
    for u in units:
        digest.digest_path(into, u.key).parent.mkdir(parents=True, exist_ok=True)
        digest.digest_path(into, u.key).write_text("{}")
    assert sweep.main([path, "--skip-digested", str(into)]) == 0
    assert "nothing to run" in capsys.readouterr().out


def test_replications_the_host_delayed_are_named_under_the_table(tmp_path: Path):
    """IWA's rep0 of test_report's run has telemetry (test_report.tel_records): record i predicts i ms of sojourn for
    an audio packet that really had none beyond the base delay, so the host-added delay's median is, by hand, the
    median of the audio records' i (0-24, 27-29, 32-39: 36 of them, the middle two 17 and 18): 17.5 ms, above
    the 1 ms limit. The digest keeps the check, the table names the replication; with the records' sojourns
    zero the median is 0 and nothing is named. Replications without telemetry have no check."""
    run = make_run(tmp_path)
    into = tmp_path / "digests"
    digest.write_digests([run], into)
    checked = {p.parent.name: json.loads(p.read_text())["summary"].get("single_bottleneck")
               for p in digest.find_digests(into)}
    assert [v["all"]["median_ms"] for v in checked.values() if v] == [pytest.approx(17.5)]
    assert [k for k, v in checked.items() if v] == [IWA]
    line = next(x for x in iwa_table.table_block([into]) if x.startswith("Host-bound"))
    assert line.endswith(f"{IWA}/rep0 (17.5 ms).") and line.count("/rep") == 1

    rep = next(run.glob("*-iwa-*/rep0"))
    write_telemetry(rep / "telemetry.pcap", [replace(r, sojourn_ns=0) for r in tel_records()])
    digest.write_digests([run], into, replace=True)
    line = next(x for x in iwa_table.table_block([into]) if x.startswith("Host-bound"))
    assert line.endswith(": none.")
