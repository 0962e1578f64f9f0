"""Sweeps on a Ray cluster: a local cluster of a head and a second node process, each offering one lab
node resource, runs the replications and ships each back; the run directory is laid out byte for byte as
the local engine lays it out. Skipped, with the reason, where Ray is not installed or cannot start."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from accessnet import replication, sweep
from accessnet.ray_engine import RESOURCE

ROOT = Path(__file__).resolve().parent.parent
ray = pytest.importorskip("ray", reason="Ray is not installed (make setup installs the pinned version)")
RAY = str(Path(sys.executable).with_name("ray"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(p: subprocess.Popen) -> None:
    """A node we started, with everything it started (its own session and process group): by its id."""
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    try:
        os.killpg(p.pid, signal.SIGKILL)  # what the node left in its group
    except ProcessLookupError:
        pass


@pytest.fixture(scope="module")
def cluster():
    port = free_port()
    temp = tempfile.mkdtemp(prefix="iwray", dir="/tmp")  # short: Ray's socket paths live under it
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    common = ["--block", "--num-cpus", "1", "--resources", json.dumps({RESOURCE: 1}), "--disable-usage-stats"]
    log = open(Path(temp) / "nodes.log", "ab")
    procs = [subprocess.Popen([RAY, "start", "--head", "--port", str(port), "--include-dashboard=false",
                               "--temp-dir", temp, *common], env=env, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True)]
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            if procs[0].poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"Ray could not start a head node here: {(Path(temp) / 'nodes.log').read_text()[-800:]}")
            time.sleep(0.5)
        procs.append(subprocess.Popen([RAY, "start", "--address", address, *common], env=env, stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True))
        ray.init(address=address, logging_level="WARNING", log_to_driver=False)
        while ray.cluster_resources().get(RESOURCE, 0) < 2:
            if procs[1].poll() is not None or time.monotonic() > deadline:
                pytest.skip(f"Ray could not start a second node here: {(Path(temp) / 'nodes.log').read_text()[-800:]}")
            time.sleep(0.5)
        yield address
    finally:
        ray.shutdown()
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(temp, ignore_errors=True)


def fake_run(sc, case, rep, outdir: Path, want, slot):
    """A stand-in replication (no network): files as a replication writes them, tmp then rename."""
    tmp, final = outdir / f"rep{rep}.tmp", outdir / f"rep{rep}"
    tmp.mkdir(parents=True)
    (tmp / "audio_tx.csv").write_text(f"seq,send_ns\n0,{rep}\n")
    (tmp / "sub").mkdir()
    (tmp / "sub" / "x.bin").write_bytes(bytes(range(256)) * (rep + 1))
    status = "failed" if case.aqm == "iwa" and rep == 1 else "ok"
    meta = {"status": status, "case": case.name, "rep": rep, "switch": "fake", "error": "boom" * (status != "ok")}
    (tmp / "meta.json").write_text(json.dumps(meta, sort_keys=True))
    tmp.rename(final)
    return meta


def tree(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def test_a_sweep_on_two_ray_nodes_writes_what_the_local_engine_writes(cluster, tmp_path):
    from accessnet.ray_engine import execute_ray
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the stand-in travels to the nodes
    units = sweep.check_sweep({"scenarios": ["web1"], "aqms": ["fifo", "iwa"], "iws": [10], "reps": 2}, "t.toml")
    said: list[str] = []
    res = execute_ray(units, tmp_path / "ray", "model", run_one=fake_run, say=said.append)
    assert res == {"ran": 4, "skipped": 0, "failed": 1}
    assert any("on 2 Ray lab node(s)" in s for s in said) and any("ETA" in s for s in said)
    replication.execute(units, tmp_path / "local", "model", run_one=fake_run, say=lambda s: None)
    assert tree(tmp_path / "ray") == tree(tmp_path / "local") and len(tree(tmp_path / "ray")) == 4 * 3
    again = execute_ray(units, tmp_path / "ray", "model", run_one=fake_run, say=said.append)  # resume: nothing left
    assert again == {"ran": 0, "skipped": 4, "failed": 0}


def dying_run(sc, case, rep, outdir, want, slot):
    if case.aqm == "iwa" and rep == 0:
        os._exit(1)  # the worker dies mid-replication, as with a node lost
    return fake_run(sc, case, rep, outdir, want, slot)


def test_a_task_whose_worker_dies_is_recorded_failed_and_the_sweep_goes_on(cluster, tmp_path):
    from accessnet.ray_engine import execute_ray
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    units = sweep.check_sweep({"scenarios": ["web1"], "aqms": ["fifo", "iwa"], "iws": [10], "reps": 1}, "t.toml")
    said: list[str] = []
    res = execute_ray(units, tmp_path / "run", "model", run_one=dying_run, say=said.append)
    assert res == {"ran": 2, "skipped": 0, "failed": 1}
    meta = json.loads((tmp_path / "run" / "web1-hspa-48p-iwa-iw10" / "rep0" / "meta.json").read_text())
    assert meta["status"] == "failed" and "the Ray task died" in meta["error"]
    assert json.loads((tmp_path / "run" / "web1-hspa-48p-fifo-iw10" / "rep0" / "meta.json").read_text())["status"] == "ok"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
def test_a_smoke_sweep_on_the_ray_cluster(cluster, tmp_path):
    """The real thing: two smoke replications, one per lab node, through the same runner as the local engine."""
    spec = tmp_path / "raysmoke.toml"
    spec.write_text('scenarios = ["smoke"]\naqms = ["fifo", "iwa"]\nreps = 1\nswitch = "model"\n')
    runs = {}
    for engine in ("ray", "local"):
        out = tmp_path / engine
        r = subprocess.run([sys.executable, "-m", "accessnet.sweep", str(spec), "--engine", engine, "--ray-address",
                            cluster, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        runs[engine] = next(out.iterdir())
    layouts = {e: sorted(str(p.relative_to(d)) for p in d.rglob("*") if "report" not in p.relative_to(d).parts)
               for e, d in runs.items()}
    assert layouts["ray"] == layouts["local"]
    for meta in runs["ray"].glob("*/rep0/meta.json"):
        assert json.loads(meta.read_text())["status"] == "ok", meta
    assert not list(runs["ray"].glob("*/*.tmp")) and not list(runs["ray"].glob("*/.rep*"))
