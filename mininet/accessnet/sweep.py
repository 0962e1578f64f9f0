"""Sweeps: a matrix of scenario x profile x buffer x AQM x IW x replications, run by one runner.

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

Every replication is one unit of work written atomically by
``run.run_rep`` into ``<run>/<scenario>-<case>/rep<k>``: an interrupted sweep
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
import multiprocessing as mp
import os
import signal
import sys
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from refmodel.params import ConfigError

from . import scenario as scen
from .run import Interrupted
from .topology import ROOT

SWEEP_DIR = ROOT / "experiments" / "sweeps"
KEYS = {"description", "scenarios", "profiles", "buffers", "aqms", "iws", "reps", "switch"}


@dataclass(frozen=True)
class Unit:
    """One replication to run."""

    sc: scen.Scenario
    case: scen.Case
    rep: int
    dirname: str  # the case's directory in the run directory

    @property
    def key(self) -> str:
        return f"{self.dirname}/rep{self.rep}"


def load_sweep(name_or_path: str) -> tuple[dict, list[Unit]]:
    path = Path(name_or_path)
    if not path.suffix:
        path = SWEEP_DIR / f"{name_or_path}.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"sweep {path}: {e}") from None
    bad = set(data) - KEYS
    if bad:
        raise ConfigError(f"{path.name}: unknown key(s) {sorted(bad)}; allowed {sorted(KEYS)}")
    if not data.get("scenarios"):
        raise ConfigError(f"{path.name}: scenarios = [...] is required")
    return data, expand(data)


def expand(data: dict) -> list[Unit]:
    """The matrix, in a stable order (scenario, profile, buffer, then the scenario's AQM x IW, then reps)."""
    units = []
    for name, prof, buf in itertools.product(data["scenarios"], data.get("profiles", [None]),
                                             data.get("buffers", [None])):
        over = {k: v for k, v in (("profile", prof), ("buffer", buf), ("aqms", data.get("aqms")),
                                   ("iws", data.get("iws")), ("reps", data.get("reps")),
                                   ("switch", data.get("switch"))) if v is not None}
        sc = scen.load(name, over)
        for case in sc.cases:
            units += [Unit(sc, case, r, case.name) for r in range(sc.reps)]
    return units


def done(rundir: Path, u: Unit) -> bool:
    return (rundir / u.dirname / f"rep{u.rep}" / "meta.json").exists()


RunOne = Callable[[scen.Scenario, scen.Case, int, Path, str, int], dict]


def _worker(slot: int, tasks, results, rundir: Path, want: str | None, run_one: RunOne) -> None:
    def on_term(*_):
        raise Interrupted()

    signal.signal(signal.SIGTERM, on_term)
    while True:
        u = tasks.get()
        if u is None:
            return
        t = time.time()
        try:
            meta = run_one(u.sc, u.case, u.rep, rundir / u.dirname, want or u.sc.switch, slot)
        except (Interrupted, KeyboardInterrupt):
            return
        results.put((u.key, meta.get("status"), meta.get("switch"), meta.get("error", ""), time.time() - t))


def execute(units: Sequence[Unit], rundir: Path, want: str | None = None, jobs: int = 1, run_one: RunOne | None = None,
            say: Callable[[str], None] = print) -> dict:
    """Run every unit not yet done (switch kind ``want``, else each scenario's); progress and ETA through
    ``say``. Returns counts."""
    if run_one is None:
        from .run import run_rep as run_one
    todo = [u for u in units if not done(rundir, u)]
    skipped = len(units) - len(todo)
    if skipped:
        say(f"{skipped} of {len(units)} replications already done: not redone")
    n, durations, failed = len(todo), [], 0

    def report(i: int, key: str, status: str, kind: str, err: str, dt: float) -> None:
        nonlocal failed
        durations.append(dt)
        failed += status != "ok"
        left = n - i
        eta = sum(durations) / len(durations) * left / max(1, jobs) / 60
        say(f"[{i}/{n}] {key}: {status} ({kind}) in {dt:.1f}s{'  ' + err if status != 'ok' else ''}"
            f"{f', ETA {eta:.1f} min' if left else ''}")

    if jobs <= 1:
        for i, u in enumerate(todo, 1):
            say(f"[{i}/{n}] {u.key}: running")
            t = time.time()
            meta = run_one(u.sc, u.case, u.rep, rundir / u.dirname, want or u.sc.switch, 0)
            report(i, u.key, meta.get("status"), meta.get("switch"), meta.get("error", ""), time.time() - t)
        return {"ran": n, "skipped": skipped, "failed": failed}

    ctx = mp.get_context("fork")
    tasks, results = ctx.Queue(), ctx.Queue()
    for u in todo:
        tasks.put(u)
    workers = [ctx.Process(target=_worker, args=(s, tasks, results, rundir, want, run_one), daemon=False)
               for s in range(jobs)]
    for _ in workers:
        tasks.put(None)
    for w in workers:
        w.start()
    say(f"{n} replications on {jobs} parallel slots")
    try:
        for i in range(1, n + 1):
            while True:
                try:
                    report(i, *results.get(timeout=1.0))
                    break
                except Exception:  # queue.Empty
                    if not any(w.is_alive() for w in workers) and results.empty():
                        raise Interrupted() from None
    except (KeyboardInterrupt, Interrupted):
        for w in workers:
            if w.is_alive() and w.pid:
                os.kill(w.pid, signal.SIGTERM)
        for w in workers:
            w.join(timeout=60)
        raise
    for w in workers:
        w.join()
    return {"ran": n, "skipped": skipped, "failed": failed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sweep", help="name in experiments/sweeps/ or a path to a .toml")
    ap.add_argument("--jobs", type=int, default=1, help="replications at once (default 1; see above)")
    ap.add_argument("--out", type=Path, default=ROOT / "results")
    ap.add_argument("--resume", type=Path, help="continue an interrupted sweep directory")
    ap.add_argument("--list", action="store_true", help="print the matrix and exit")
    a = ap.parse_args(argv)
    try:
        data, units = load_sweep(a.sweep)
    except ConfigError as e:
        print(f"sweep error: {e}", file=sys.stderr)
        return 2
    if a.list:
        for u in units:
            print(u.key)
        print(f"{len(units)} replications")
        return 0
    if os.geteuid() != 0:
        print("a sweep needs root (network namespaces)", file=sys.stderr)
        return 2
    if any(u.sc.switch in ("auto", "bmv2") and u.case.aqm in scen.P4_AQMS for u in units):
        from .switches import ensure_p4_build
        try:
            ensure_p4_build()  # never the stand-in by accident: compile p4src/ first where p4c is present
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    name = Path(a.sweep).stem
    rundir = a.resume or a.out / f"{time.strftime('%Y%m%d-%H%M%S')}-sweep-{name}"
    rundir.mkdir(parents=True, exist_ok=True)
    (rundir / "run.json").write_text(json.dumps({"sweep": name, "file": data, "argv": sys.argv,
                                                 "replications": len(units)}, indent=1))
    print(f"sweep {rundir}: {len(units)} replications")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(Interrupted()))
    try:
        res = execute(units, rundir, None, a.jobs)
    except (KeyboardInterrupt, Interrupted):
        print(f"interrupted: finished replications are kept; resume with --resume {rundir}", file=sys.stderr)
        return 130
    from .summary import print_summary
    print_summary(rundir)
    return 1 if res["ran"] and res["failed"] == res["ran"] else 0


if __name__ == "__main__":
    sys.exit(main())
