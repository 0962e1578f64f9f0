"""Sweeps: a matrix of scenario x profile x buffer x initial RTO x IP family x WebRTC stack x AQM x IW x
replications, run by one runner.

``python -m accessnet.sweep experiments/sweeps/<name>.toml [--jobs N] [--resume RUN_DIR]``
(``make sweep SWEEP=<name>``). The sweep file is data::

    description = "..."
    scenarios = ["web1", "web2", "web6"]   # files in mininet/scenarios/ (or paths)
    profiles = ["hspa", "lte"]             # optional: each replaces the scenario's [run] profile
    buffers = ["bdp", "2bdp"]              # optional: each replaces [run] buffer
    aqms = ["fifo", "red", "iwa"]          # optional: replaces [run] aqms
    iws = [3, 10]                          # optional: replaces [run] iws
    reps = 10                              # optional: replaces [run] reps
    switch = "auto"                        # optional: auto | bmv2 | model | kernel
    irtos = [1, 3]                         # optional: each replaces [run] irto_s (the hosts' initial RTO, s)
    ips = [4, 6]                           # optional: each replaces [run] ip (the IP family the workloads use)
    cc = "reno"                            # optional: replaces [run] cc
    stacks = ["aiortc", "pion"]            # optional: each replaces [webrtc] stack (scenarios with [webrtc]
                                           # only); a Pion case's name ends in -pion, and both stacks of a case
                                           # get the same draws in replication k (scenario.Case.draw_key)

    [[part]]                               # optional: several matrices in one sweep; each part takes the
    scenarios = ["web6"]                   # keys above, and the top level's where it names none
    reps = 10

A sweep may instead be made of other sweeps: ``include = ["pam13-quick", "ietf79-quick"]`` (and nothing else
but a description) runs their matrices one after the other as one run, so one report holds them all
(``paper``, ``paper-quick``). The run's record keeps the included matrices as they were when it started.

``--only REGEX`` runs the replications whose name (``<case>/rep<k>``, as ``--list`` prints them) the
regular expression matches somewhere, e.g. ``--only 'hspa-24p|web6-bulk-lte'`` for the units a table still
lacks; the sweep's record keeps it, so ``--resume`` runs the same selection.

``--skip-digested DIR`` leaves out the replications already digested in DIR (``experiments.digest``:
``DIR/<case>/rep<k>.json``): a sweep too long for one session runs in parts, on different days or machines,
each part's replications digested into the repository (``experiments/data/<sweep>``) once it ends, and the
next part runs what is still missing. The record keeps DIR, so ``--resume`` skips what is digested by then.

Every replication is one unit of work written atomically by
``replication.run_rep`` into ``<run>/<scenario>-<case>/rep<k>``: an interrupted sweep
loses nothing finished and ``--resume`` runs only what is missing. A failed
replication is recorded (meta.json status "failed", its logs kept) and the
sweep goes on. ``--jobs N`` runs N replications at once, each in its own
namespaces, interface prefix and switch ports; on a 2-core machine keep 1,
since parallel runs steal each other's CPU and the delay measurements need
it (the single-bottleneck proof fails under that load).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path

from refmodel.params import ConfigError

from . import scenario as scen
from .ray_engine import execute_ray
from .replication import Interrupted, Unit, execute, preflight, stop_on_sigterm
from .record import RecordError, digest_path, history_entry, write_record
from .switches import ensure_p4_build
from .topology import ROOT

SWEEP_DIR = ROOT / "experiments" / "sweeps"
MATRIX_KEYS = {"scenarios", "profiles", "buffers", "aqms", "iws", "reps", "switch", "irtos", "ips", "cc", "telemetry",
               "stacks"}
KEYS = MATRIX_KEYS | {"description", "part", "included"}  # included: what include named (the record)


def load_sweep(name_or_path: str) -> tuple[dict, list[Unit]]:
    """The sweep file's data, its ``include`` resolved into parts, and its replications."""
    data, path = read_sweep(name_or_path, ())
    return data, check_sweep(data, path.name)


def read_sweep(name_or_path: str, within: tuple[str, ...]) -> tuple[dict, Path]:
    path = Path(name_or_path)
    if not path.suffix:
        path = SWEEP_DIR / f"{name_or_path}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"sweep {path}: {e}") from None
    scen.check_name("sweep", path.stem)
    return (resolve_include(data, path, within) if "include" in data else data), path


def resolve_include(data: dict, path: Path, within: tuple[str, ...]) -> dict:
    """A sweep of sweeps as one sweep: every included sweep's matrices as parts, in the order named."""
    names = data["include"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise ConfigError(f"{path.name}: include = {names!r}: must be a non-empty list of sweep names")
    extra = set(data) - {"include", "description"}
    if extra:
        raise ConfigError(f"{path.name}: a sweep with include names nothing else but a description (found "
                          f"{sorted(extra)}); put the matrices in the included sweeps")
    if path.stem in within:
        raise ConfigError(f"{path.name}: includes itself ({' -> '.join((*within, path.stem))})")
    parts = []
    for name in names:
        sub, _ = read_sweep(name, (*within, path.stem))
        parts += matrices(sub)
    return {"description": data.get("description", ""), "included": names, "part": parts}


def check_sweep(data: dict, label: str, scenarios: dict | None = None) -> list[Unit]:
    path = Path(label)
    bad = set(data) - KEYS
    if bad:
        raise ConfigError(f"{path.name}: unknown key(s) {sorted(bad)}; allowed {sorted(KEYS)}")
    parts = matrices(data)
    for k, m in enumerate(parts):
        bad = set(m) - MATRIX_KEYS
        if bad:
            raise ConfigError(f"{path.name}: part {k + 1}: unknown key(s) {sorted(bad)}; allowed {sorted(MATRIX_KEYS)}")
        if not m.get("scenarios"):
            raise ConfigError(f"{path.name}: scenarios = [...] is required" + (f" (part {k + 1})" if "part" in data
                                                                                 else ""))
    units, seen = [], set()
    for m in parts:  # a replication two parts name is run once
        for u in expand(m, scenarios):
            if u.key not in seen:
                seen.add(u.key)
                units.append(u)
    return units


def matrices(data: dict) -> list[dict]:
    """The sweep's matrices: its ``[[part]]`` tables over the top level's keys, or the top level alone."""
    top = {k: v for k, v in data.items() if k in MATRIX_KEYS}
    parts = data.get("part")
    if parts is None:
        return [top]
    if not isinstance(parts, list) or not parts or not all(isinstance(p, dict) for p in parts):
        raise ConfigError("sweep: [[part]] must be a list of tables")
    return [{**top, **p} for p in parts]


def expand(data: dict, scenarios: dict | None = None) -> list[Unit]:
    """The matrix, in a stable order (scenario, profile, buffer, initial RTO, IP family, stack, then the
    scenario's AQM x IW, then reps).
    ``scenarios`` (name -> {"path", "file"}, as a sweep's run.json keeps them) replaces the files on disk."""
    units = []
    irtos = data.get("irtos", [None])
    if not isinstance(irtos, list) or not irtos:
        raise ConfigError(f"sweep: irtos = {irtos!r}: must be a non-empty list of initial RTOs in seconds")
    ips = data.get("ips", [None])
    if not isinstance(ips, list) or not ips:
        raise ConfigError(f"sweep: ips = {ips!r}: must be a non-empty list of IP families (4, 6)")
    stacks = data.get("stacks", [None])
    if not isinstance(stacks, list) or not stacks:
        raise ConfigError(f"sweep: stacks = {stacks!r}: must be a non-empty list of WebRTC stacks "
                          f"({', '.join(scen.STACKS)})")
    for name, prof, buf, irto, ip, stack in itertools.product(data["scenarios"], data.get("profiles", [None]),
                                                              data.get("buffers", [None]), irtos, ips, stacks):
        over = {k: v for k, v in (("profile", prof), ("buffer", buf), ("aqms", data.get("aqms")),
                                   ("iws", data.get("iws")), ("reps", data.get("reps")),
                                   ("switch", data.get("switch")), ("irto_s", irto), ("ip", ip),
                                   ("cc", data.get("cc")), ("telemetry", data.get("telemetry")))
                if v is not None}
        kept = (scenarios or {}).get(name)
        sc = scen.build(Path(kept["path"]), kept["file"], over, stack) if kept else scen.load(name, over, stack)
        for case in sc.cases:
            units += [Unit(sc, case, r, case.name) for r in range(sc.reps)]
    return units


def scenario_files(data: dict) -> dict:
    """What a sweep's record keeps of each scenario it names: the file's path and data as they were when
    the sweep started (a resume uses these, not the files as they are now)."""
    out = {}
    for name in dict.fromkeys(n for m in matrices(data) for n in m.get("scenarios", [])):
        path = scen.find(name)
        try:
            out[name] = {"path": str(path), "file": tomllib.loads(path.read_text())}
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{path}: {e}") from None
    return out


def select(units: list[Unit], only: str | None) -> list[Unit]:
    """The replications whose name (``<case>/rep<k>``) ``only`` matches somewhere (all of them without it)."""
    if only is None:
        return units
    try:
        pattern = re.compile(only)
    except re.error as e:
        raise ConfigError(f"--only {only!r}: not a regular expression ({e})") from None
    chosen = [u for u in units if pattern.search(u.key)]
    if not chosen:
        raise ConfigError(f"--only {only!r} matches none of the sweep's {len(units)} replications (--list names "
                          "them)")
    return chosen


def undigested(units: list[Unit], digests: str | Path | None) -> list[Unit]:
    """The replications without a digest in ``digests`` (all of them without it)."""
    if digests is None:
        return units
    return [u for u in units if not digest_path(Path(digests), u.key).exists()]


def resume_record(rundir: Path, sweep: str | None) -> tuple[dict, list[Unit]]:
    """A sweep's own record (run.json), checked against the sweep the command line names, if any."""
    try:
        rec = json.loads((rundir / "run.json").read_text())
    except (OSError, ValueError) as e:
        raise RecordError(f"{rundir} is not a sweep directory (run.json: {e})") from None
    if "sweep" not in rec:
        raise RecordError(f"{rundir} is a run of the main job: resume it with python -m accessnet.run --resume "
                          f"{rundir}")
    if sweep is not None and Path(sweep).stem != rec["sweep"]:
        raise RecordError(f"{rundir} is sweep {rec['sweep']!r}, not {Path(sweep).stem!r}: resume it without "
                          "naming the sweep (it keeps its own)")
    units = select(check_sweep(rec["file"], f"{rec['sweep']}.toml", rec.get("scenarios")), rec.get("only"))
    units = undigested(units, rec.get("skip_digested"))
    rec["history"] = [*rec.get("history", []), history_entry("resume", len(units), str(rec["file"].get("switch")))]
    return rec, units


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m accessnet.sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", nargs="?", help="name in experiments/sweeps/ or a path to a .toml (with --resume: "
                                             "optional, the sweep's own)")
    ap.add_argument("--jobs", type=int, default=1, help="replications at once (default 1; see above)")
    ap.add_argument("--out", type=Path, default=ROOT / "results")
    ap.add_argument("--resume", type=Path, help="continue a sweep directory from its own record (run.json)")
    ap.add_argument("--list", action="store_true", help="print the matrix and exit")
    ap.add_argument("--only", metavar="REGEX", help="only the replications whose <case>/rep<k> this matches (kept "
                                                    "in the record: --resume runs the same selection)")
    ap.add_argument("--skip-digested", metavar="DIR", type=Path,
                    help="leave out the replications digested in DIR (experiments.digest; kept in the record)")
    ap.add_argument("--engine", choices=["local", "ray"], default="local",
                    help="local: this machine (--jobs); ray: one replication per Ray lab node (accessnet.ray_engine)")
    ap.add_argument("--ray-address", help="Ray cluster to join (default: $RAY_ADDRESS, else a new local one)")
    return ap


def _record(a: argparse.Namespace) -> tuple[dict, list]:
    """The sweep's record and its replications: resumed from its directory, or new from its file (raises
    ConfigError, RecordError)."""
    if a.resume:
        if a.only is not None or a.skip_digested is not None:
            raise ConfigError("--only or --skip-digested with --resume: a sweep keeps the selection it started with")
        return resume_record(a.resume, a.sweep)
    data, _ = load_sweep(a.sweep)
    files = scenario_files(data)
    if a.skip_digested is not None and not a.skip_digested.is_dir():
        raise ConfigError(f"--skip-digested {a.skip_digested}: no such directory")
    units = undigested(select(check_sweep(data, a.sweep, files), a.only), a.skip_digested)
    rec = {"format": 2, "kind": "sweep", "sweep": Path(a.sweep).stem, "file": data, "scenarios": files,
           "replications": len(units), "history": [history_entry("start", len(units), str(data.get("switch")))]}
    if a.only is not None:
        rec["only"] = a.only
    if a.skip_digested is not None:
        rec["skip_digested"] = str(a.skip_digested.resolve())
    return rec, units


def _refusal(units: list) -> str | None:
    """Why the sweep cannot start on this host, or None: root, the preflight, the P4 build."""
    if os.geteuid() != 0:
        return "a sweep needs root (network namespaces)"
    try:
        preflight(units, None)
    except ConfigError as e:
        return f"refused before anything started: {e}"
    if any(u.sc.switch in ("auto", "bmv2") and u.case.aqm in scen.P4_AQMS for u in units):
        try:
            ensure_p4_build()  # never the stand-in by accident: compile p4src/ first where p4c is present
        except RuntimeError as e:
            return f"error: {e}"
    return None


def main(argv: list[str] | None = None, summarize: Callable[[Path], None] | None = None) -> int:
    """The command line; ``summarize(rundir)`` ends a run that was not interrupted (the command line's:
    experiments.summary.print_summary, the summary table and the report)."""
    ap = _parser()
    a = ap.parse_args(argv)
    if not a.resume and not a.sweep:
        ap.error("name a sweep, or --resume a sweep directory")
    try:
        rec, units = _record(a)
    except (ConfigError, RecordError) as e:
        print(f"sweep error: {e}", file=sys.stderr)
        return 2
    if a.list:
        for u in units:
            print(u.key)
        print(f"{len(units)} replications")
        return 0
    if not units:
        print("nothing to run: every replication of the selection is digested already")
        return 0
    refusal = _refusal(units)
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    rundir = a.resume or a.out / f"{time.strftime('%Y%m%d-%H%M%S')}-sweep-{rec['sweep']}"
    rundir.mkdir(parents=True, exist_ok=True)
    write_record(rundir, rec)
    print(f"sweep {rundir}: {len(units)} replications")
    stop_on_sigterm()
    try:
        if a.engine == "ray":
            res = execute_ray(units, rundir, None, a.ray_address)
        else:
            res = execute(units, rundir, None, a.jobs)
    except (KeyboardInterrupt, Interrupted):
        print(f"interrupted: finished replications are kept; resume with --resume {rundir}", file=sys.stderr)
        return 130
    except RuntimeError as e:  # the Ray engine: no cluster, no lab node
        print(f"sweep error: {e}; finished replications are kept in {rundir}", file=sys.stderr)
        return 2
    if summarize is not None:
        summarize(rundir)
    return 1 if res["ran"] and res["failed"] == res["ran"] else 0

if __name__ == "__main__":
    from experiments.summary import print_summary  # the command line puts lab and analysis together

    sys.exit(main(summarize=print_summary))
