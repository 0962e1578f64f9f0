"""Sweeps beyond one machine: every replication a Ray task that holds a whole lab node.

``python -m accessnet.sweep SWEEP --engine ray [--ray-address HOST:PORT]`` (``make sweep SWEEP=...
ENGINE=ray [RAY_ADDRESS=...]``). Each lab node offers one unit of the custom resource ``iwlab_node`` (start
it with ``ray start ... --resources '{"iwlab_node": 1}'``); a replication asks for one, so a node runs one
replication at a time (the delay measurements need its CPU) and takes no other Ray work's CPUs
(``num_cpus=0``). The task runs the same ``replication.run_rep`` as the local engine into a scratch
directory on its node, and ships the finished replication directory back as a tar archive; the driver
unpacks it into ``<run>/<case>/rep<k>.tmp`` and renames it to ``rep<k>``: the run directory is laid out
exactly as the local engine lays it out, so report, resume and metrics do not know which engine ran it.

Ray is imported only here, only when this engine is asked for: the local engine needs nothing of it.
"""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .replication import Interrupted, Progress, RunOne, Unit, done, run_rep

RESOURCE = "iwlab_node"


def _run_on_node(u: Unit, want: str | None, run_one: RunOne | None) -> tuple[dict, bytes | None]:
    """On a lab node: one replication into a scratch directory, returned as (meta, tar of rep<k>)."""
    run_one = run_one or run_rep
    scratch = Path(tempfile.mkdtemp(prefix="iwlab-ray-"))
    try:
        outdir = scratch / u.dirname
        outdir.mkdir(parents=True)
        try:
            meta = run_one(u.sc, u.case, u.rep, outdir, want or u.sc.switch, 0)
        except (Interrupted, KeyboardInterrupt):
            return {"status": "interrupted"}, None
        rep = outdir / f"rep{u.rep}"
        if not rep.is_dir():
            return meta, None
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(rep, arcname=rep.name)
        return meta, buf.getvalue()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def store(rundir: Path, u: Unit, archive: bytes) -> None:
    """Unpack a replication shipped back by a node into ``rep<k>.tmp``, then rename it: atomic, as the
    local engine writes it."""
    case = rundir / u.dirname
    tmp, final = case / f"rep{u.rep}.tmp", case / f"rep{u.rep}"
    shutil.rmtree(tmp, ignore_errors=True)
    unpack = case / f".rep{u.rep}.unpack"
    shutil.rmtree(unpack, ignore_errors=True)
    unpack.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for m in tar.getmembers():  # only regular files and directories under rep<k>/ (no links, no escapes)
            name = Path(m.name)
            if name.is_absolute() or ".." in name.parts or name.parts[0] != f"rep{u.rep}" or not (m.isfile() or m.isdir()):
                raise ValueError(f"unexpected member {m.name!r} in the archive of {u.key}")
        tar.extractall(unpack)  # members checked above (Python 3.11.2 has no extraction filter)
    (unpack / f"rep{u.rep}").rename(tmp)
    unpack.rmdir()
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)


def lost(rundir: Path, u: Unit, error: str) -> dict:
    """A replication whose Ray task died with its worker or node: recorded as failed (meta.json, atomically),
    like any failed replication, so the sweep goes on and a resume does not redo it silently."""
    case = rundir / u.dirname
    tmp, final = case / f"rep{u.rep}.tmp", case / f"rep{u.rep}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    meta = {"status": "failed", "scenario": u.sc.name, "case": u.case.name, "rep": u.rep, "aqm": u.case.aqm,
            "iw": u.case.iw, "switch": "?", "error": f"the Ray task died: {error}"}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return meta


def execute_ray(units: Sequence[Unit], rundir: Path, want: str | None = None, address: str | None = None,
                run_one: RunOne | None = None, say: Callable[[str], None] = print) -> dict:
    """The local engine's ``execute`` on a Ray cluster (``address``; None: RAY_ADDRESS or a new local one)."""
    try:
        import ray  # optional: only this engine needs it (module docstring)
    except ImportError as e:
        raise RuntimeError(f"the Ray engine needs the ray package ({e}); run 'make setup'") from None
    if not ray.is_initialized():
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
    nodes = int(ray.cluster_resources().get(RESOURCE, 0))
    if nodes < 1:
        raise RuntimeError(f"no Ray node offers the resource {RESOURCE!r}: start each lab node with "
                           f"ray start ... --resources '{{\"{RESOURCE}\": 1}}'")
    task = ray.remote(num_cpus=0, resources={RESOURCE: 1}, max_retries=0)(_run_on_node)
    todo = [u for u in units if not done(rundir, u)]
    skipped = len(units) - len(todo)
    if skipped:
        say(f"{skipped} of {len(units)} replications already done: not redone")
    progress = Progress(len(todo), nodes, say)
    say(f"{len(todo)} replications on {nodes} Ray lab node(s)")
    started = {}
    pending = {}
    for u in todo:
        ref = task.remote(u, want, run_one)
        pending[ref], started[ref] = u, time.time()
    try:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            u = pending.pop(ref)
            try:
                meta, archive = ray.get(ref)
            except ray.exceptions.RayError as e:  # the task's worker or node died: recorded, the sweep goes on
                meta, archive = lost(rundir, u, f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"), None
            if meta.get("status") == "interrupted":
                raise Interrupted()
            if archive is not None:
                store(rundir, u, archive)
            progress.report(u.key, meta.get("status"), meta.get("switch"), meta.get("error", ""),
                            time.time() - started[ref])
    except (KeyboardInterrupt, Interrupted):
        for ref in pending:
            ray.cancel(ref)  # KeyboardInterrupt in the task: its replication tears down and is not kept
        raise
    return {"ran": len(todo), "skipped": skipped, "failed": progress.failed}
