"""Ctrl-C in the middle of the main job: nothing is left behind (hosts, processes, the leftovers
registry), the unfinished replication is not counted as done, and --resume completes the run.

Each test looks only at its own run's lab slot (found by the run's PID), so it never touches, and is not
confused by, another run on the same host (a ``make mininet`` in another terminal)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from accessnet.leftovers import STATE_DIR, cmdline, find_record

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")


def processes_mentioning(text: str) -> list[str]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit() and int(p.name) != os.getpid():
            try:
                cmd = (p / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in cmd:
                out.append(f"{p.name}: {cmd}")
    return out


def lab_of(pid: int, timeout: float = 30.0) -> str:
    """The lab prefix (slot) of the run with this PID, once it has taken one."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rec = find_record(pid)
        if rec:
            return rec[0]
        time.sleep(0.1)
    raise AssertionError(f"run {pid} took no lab slot")


def lab_hosts(prefix: str) -> list[str]:
    """The run's live Mininet host shells (each holds one of its namespaces and its interfaces)."""
    return processes_mentioning(f"mininet:{prefix}")


def start_smoke_run(out, *extra: str, **popen) -> tuple[subprocess.Popen, list[str], str]:
    """The smoke scenario on the model switch, read until its first replication runs: (process, the
    lines it printed so far, its lab prefix)."""
    cmd = [sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", "model", *extra,
           "--out", str(out)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "rep0: running" in line:
            break
    return p, lines, lab_of(p.pid)


def interruptible() -> None:
    """In the child before exec: SIGINT's default action, as in a terminal. A shell starts background jobs
    with SIGINT ignored (CI runs the suite so) and Python keeps an ignored SIGINT: the run would never see
    the Ctrl-C and would finish its replication."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_leaves_nothing_behind_and_resume_completes(tmp_path):
    # its own process group with Ctrl-C live, as in a terminal
    p, lines, prefix = start_smoke_run(tmp_path, start_new_session=True, preexec_fn=interruptible)
    time.sleep(8)  # mid-run: switch, delay lines, captures, audio and web traffic all running
    assert lab_hosts(prefix), "the lab should be up at this point"
    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group gets SIGINT
    rest, _ = p.communicate(timeout=90)
    out = "".join(lines) + rest
    assert p.returncode == 130, out
    assert "resume with --resume" in out
    assert lab_hosts(prefix) == []
    assert processes_mentioning(str(tmp_path)) == []
    assert find_record(p.pid) is None
    rundir = next(tmp_path.iterdir())
    assert list(rundir.glob("*/rep0.tmp")) and not list(rundir.glob("*/rep0/meta.json"))

    # only the run directory: scenario, reps and switch come from its own record (make mininet RESUME=DIR)
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--resume", str(rundir)], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "1 of" not in r.stdout and "smoke, 1 cases x 1 reps" in r.stdout, r.stdout[-2000:]
    meta = json.loads(next(rundir.glob("*/rep0/meta.json")).read_text())
    assert meta["status"] == "ok" and meta["switch"] == "model"
    assert [h["action"] for h in json.loads((rundir / "run.json").read_text())["history"]] == ["start", "resume"]
    assert processes_mentioning(str(tmp_path)) == []


def registered_pid(owner: int, needle: str, timeout: float = 20.0) -> int:
    """PID of a process that the run ``owner`` registered in its own lab slot, whose command line holds
    needle (never another run's: the record is found by its owner's PID)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        rec = find_record(owner)
        for pid, cmd in (rec[1]["pids"] if rec else {}).items():
            if needle in cmd:
                return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"run {owner} registered no process running {needle!r}")


def test_a_switch_that_dies_fails_its_replication_and_the_run_goes_on(tmp_path):
    p, lines, prefix = start_smoke_run(tmp_path, "--reps", "2")
    time.sleep(5)  # audio flowing through the switch
    os.kill(registered_pid(p.pid, "accessnet.modelswitch"), signal.SIGKILL)
    rest, _ = p.communicate(timeout=180)
    out = "".join(lines) + rest
    assert p.returncode == 0, out  # one of two replications failed: the run itself completed
    rundir = next(tmp_path.iterdir())
    failed = json.loads(next(rundir.glob("*/rep0/meta.json")).read_text())
    assert failed["status"] == "failed" and "switch" in failed["error"], failed
    assert (next(rundir.glob("*/rep0")) / "audio_tx.csv").stat().st_size > 0  # what was measured is kept
    assert json.loads(next(rundir.glob("*/rep1/meta.json")).read_text())["status"] == "ok"
    assert "FAILED replications (1)" in out and "switch process died" in out, out[-2000:]
    assert lab_hosts(prefix) == []
    assert processes_mentioning(str(tmp_path)) == []


def test_a_host_shell_that_dies_fails_its_replication_without_hanging(tmp_path):
    """What another run's cleanup once did to a live run: its host shell killed under it. The replication
    is recorded as failed with its logs (not left as rep0.tmp, not hung on the dead shell), the next one runs."""
    p, lines, prefix = start_smoke_run(tmp_path, "--reps", "2")
    time.sleep(6)
    os.kill(registered_pid(p.pid, f"mininet:{prefix}srv"), signal.SIGKILL)
    rest, _ = p.communicate(timeout=120)
    out = "".join(lines) + rest
    assert p.returncode == 0, out
    rundir = next(tmp_path.iterdir())
    failed = json.loads(next(rundir.glob("*/rep0/meta.json")).read_text())
    assert failed["status"] == "failed" and "host shell" in failed["error"], failed
    assert (next(rundir.glob("*/rep0")) / "audio_rx.csv").exists()
    assert not list(rundir.glob("*/*.tmp"))
    assert json.loads(next(rundir.glob("*/rep1/meta.json")).read_text())["status"] == "ok"
    assert lab_hosts(prefix) == [] and processes_mentioning(str(tmp_path)) == []


def test_a_volley_of_sigterms_stops_the_run_once_and_its_teardown_completes(tmp_path):
    """SIGTERM, as a scheduler or an impatient user sends it: again and again. The first stops the run; the
    rest must not cut short the teardown it started (they used to: the delay line's control FIFO was left in
    the slot's directory and the run died of the signal, 143, instead of exiting 130). Every process the run
    registered is gone, and every file of its slot but the lock."""
    p, lines, prefix = start_smoke_run(tmp_path)
    time.sleep(6)  # mid-run: switch, delay lines, captures, audio and web traffic all running
    rec = find_record(p.pid)
    assert rec is not None and lab_hosts(prefix), "the lab should be up at this point"
    started = {int(pid): cmd for pid, cmd in rec[1]["pids"].items()}
    for _ in range(40):  # 2 s of SIGTERMs, 50 ms apart, until the run is gone
        if p.poll() is not None:
            break
        p.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    rest, _ = p.communicate(timeout=90)
    out = "".join(lines) + rest
    assert p.returncode == 130, out[-2000:]
    assert "further SIGTERMs are ignored" in out and "resume with --resume" in out
    assert lab_hosts(prefix) == [] and processes_mentioning(str(tmp_path)) == []
    assert find_record(p.pid) is None
    assert [f"{pid}: {cmd!r}" for pid, cmd in started.items() if cmdline(pid) == cmd] == []
    left = [f.name for f in STATE_DIR.glob(f"{prefix}*") if f.suffix != ".lock"]
    assert left == []
