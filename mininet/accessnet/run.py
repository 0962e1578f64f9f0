"""The main job: ``make mininet SCENARIO=web6 [REPS=n]`` (``python -m accessnet.run``).

For every case of the scenario (profile x buffer x AQM x IW) and every replication: build the access
network, start the switch (BMv2, or the reference model when BMv2 is absent, or a kernel bridge for kernel
AQMs), start captures and the scenario's workloads, wait, collect, tear down (``accessnet.replication``).
Each replication is written to ``results/<run>/<case>/rep<k>.tmp`` and renamed to ``rep<k>`` only when
complete, so an interrupted run loses nothing finished. A replication that fails (switch crash, hang,
time-out) is recorded as failed with its logs, and the rest go on.

``--resume RUN_DIR`` (``make mininet RESUME=RUN_DIR``) continues a run from its own record,
``RUN_DIR/run.json``: the scenario as it was when the run started (not the file as it is now), its
replication count and switch; a ``--scenario`` or ``--switch`` that contradicts the record is refused,
``--reps`` may raise the count. Each start and resume is appended to the record's ``history``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from refmodel.params import ConfigError

from . import scenario as scen
from .record import RECORD_FORMAT, RecordError, history_entry, write_record
from .replication import Interrupted, Unit, execute, preflight, stop_on_sigterm
from .switches import bmv2_available, ensure_p4_build
from .topology import ROOT

def new_record(sc: scen.Scenario, reps: int, switch: str) -> dict:
    return {"format": RECORD_FORMAT, "kind": "scenario", "scenario": sc.name, "path": str(sc.path), "file": sc.data,
            "reps": reps, "switch": switch, "history": [history_entry("start", reps, switch)]}


def resume_record(rundir: Path, scenario: str | None, reps: int | None, switch: str | None) -> tuple[dict, scen.Scenario]:
    """The run's own record, checked against what the command line asks, with this resume appended."""
    try:
        rec = json.loads((rundir / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"{rundir} is not a run directory of the main job (run.json: {e})") from None
    if "sweep" in rec or rec.get("kind") == "sweep":
        raise RecordError(f"{rundir} is a sweep: resume it with python -m accessnet.sweep --resume {rundir}")
    if "scenario" not in rec or "file" not in rec:
        raise RecordError(f"{rundir}/run.json names no scenario")
    if scenario is not None and Path(scenario).stem != rec["scenario"]:
        raise RecordError(f"{rundir} is a run of scenario {rec['scenario']!r}, not {Path(scenario).stem!r}: "
                          "resume it without --scenario (the run keeps its own)")
    if switch is not None and switch != rec.get("switch", switch):
        raise RecordError(f"{rundir} runs with switch {rec['switch']!r}; --switch {switch} would mix kinds in one run")
    path = Path(rec.get("path") or scen.SCENARIO_DIR / f"{rec['scenario']}.toml")
    sc = scen.build(path.with_name(f"{rec['scenario']}{path.suffix or '.toml'}"), rec["file"])
    rec["reps"] = reps or int(rec.get("reps") or sc.reps)
    rec.setdefault("switch", sc.switch)
    rec.setdefault("format", 1)
    rec["history"] = [*rec.get("history", []), history_entry("resume", rec["reps"], rec["switch"])]
    return rec, sc


def units_of(sc: scen.Scenario, reps: int, record_format: int = RECORD_FORMAT) -> list[Unit]:
    def dirname(c: scen.Case) -> str:  # format 1 runs named cases without the scenario
        return c.name if record_format >= 2 else c.name[len(c.scenario) + 1:]
    return [Unit(sc, c, r, dirname(c)) for c in sc.cases for r in range(reps)]


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="make mininet", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", help="name in mininet/scenarios/ or a path to a .toml (default web6; with "
                                       "--resume: the run's own)")
    ap.add_argument("--reps", type=int, help="replications (default: the scenario's, or the run's own)")
    ap.add_argument("--switch", choices=["auto", "bmv2", "model", "kernel"], help="override the scenario's")
    ap.add_argument("--out", type=Path, default=ROOT / "results", help="where run directories go")
    ap.add_argument("--resume", type=Path, help="continue a run directory from its own record (run.json)")
    ap.add_argument("--jobs", type=int, default=1, help="replications at once (default 1: see accessnet.sweep)")
    return ap


def _record(a: argparse.Namespace) -> tuple[dict, scen.Scenario]:
    """The run's record and scenario: resumed from its directory, or new from the scenario with the command
    line's reps and switch (raises ConfigError, RecordError)."""
    if a.resume:
        return resume_record(a.resume, a.scenario, a.reps, a.switch)
    sc = scen.load(a.scenario or "web6")
    return new_record(sc, a.reps or sc.reps, a.switch or sc.switch), sc


def _refusal(units: list[Unit], want: str, sc: scen.Scenario) -> str | None:
    """Why the run cannot start on this host, or None: the preflight, the P4 build."""
    try:
        preflight(units, want)
    except ConfigError as e:
        return f"refused before anything started: {e}"
    if want in ("auto", "bmv2") and any(c.aqm in scen.P4_AQMS for c in sc.cases):
        try:
            ensure_p4_build()  # never the stand-in by accident: compile p4src/ first where p4c is present
        except RuntimeError as e:
            return f"error: {e}"
    return None


def _model_stands_in(want: str, sc: scen.Scenario) -> bool:
    """Whether the reference model will run as the switch for a P4 AQM because BMv2 is missing (said before
    the run, so that a switch=model result is no surprise)."""
    return want in ("auto", "model") and not bmv2_available() and any(c.aqm in scen.P4_AQMS for c in sc.cases)


def main(argv: list[str] | None = None, summarize: Callable[[Path], None] | None = None) -> int:
    """The command line; ``summarize(rundir)`` ends a run that was not interrupted (the command line's:
    experiments.summary.print_summary, the summary table and the report)."""
    a = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if os.geteuid() != 0:
        print("make mininet needs root (network namespaces)", file=sys.stderr)
        return 2
    try:
        rec, sc = _record(a)
    except (ConfigError, RecordError) as e:
        print(f"{'resume' if a.resume else 'scenario'} error: {e}", file=sys.stderr)
        return 2
    reps, want = rec["reps"], rec["switch"]
    units = units_of(sc, reps, int(rec["format"]))
    refusal = _refusal(units, want, sc)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    if _model_stands_in(want, sc):
        print("NOTE: BMv2 (simple_switch_grpc + build/bottleneck.json) is not available here: the reference model "
              "runs as the switch (userspace forwarder). Results are marked switch=model. To run the real P4 "
              "switch, install the toolchain once: make toolchain (about 65 min on 2 cores; see the README).")
    rundir = a.resume or a.out / f"{time.strftime('%Y%m%d-%H%M%S')}-{sc.name}"
    rundir.mkdir(parents=True, exist_ok=True)
    write_record(rundir, rec)

    stop_on_sigterm()
    print(f"run {rundir} : {sc.name}, {len(sc.cases)} cases x {reps} reps")
    try:
        res = execute(units, rundir, want, jobs=a.jobs)
    except (KeyboardInterrupt, Interrupted):
        print(f"interrupted: finished replications are kept; resume with --resume {rundir}", file=sys.stderr)
        return 130
    failed = res["failed"]
    if summarize is not None:
        summarize(rundir)
    return 1 if res["ran"] and failed == res["ran"] else 0


if __name__ == "__main__":
    from experiments.summary import print_summary  # the command line puts lab and analysis together

    sys.exit(main(summarize=print_summary))
