"""Ctrl-C in the middle of the main job: nothing is left behind (interfaces, processes, the leftovers
registry), the unfinished replication is not counted as done, and --resume completes the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


def lab_links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return [line.split(":")[1].strip() for line in out.splitlines() if line.split(":")[1].strip().startswith("i0")]


def test_ctrl_c_leaves_nothing_behind_and_resume_completes(tmp_path):
    cmd = [sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", "model", "--out", str(tmp_path)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)  # its own process group, as in a terminal
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "rep0: running" in line:
            break
    time.sleep(8)  # mid-run: switch, delay lines, captures, audio and web traffic all running
    assert lab_links(), "the lab should be up at this point"
    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C does: the whole foreground group gets SIGINT
    rest, _ = p.communicate(timeout=90)
    out = "".join(lines) + rest
    assert p.returncode == 130, out
    assert "resume with --resume" in out
    assert lab_links() == []
    assert processes_mentioning(str(tmp_path)) == []
    assert not Path("/run/iwlab/i0.json").exists()
    rundir = next(tmp_path.iterdir())
    assert list(rundir.glob("*/rep0.tmp")) and not list(rundir.glob("*/rep0/meta.json"))

    r = subprocess.run([*cmd[:-2], "--resume", str(rundir)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    meta = json.loads(next(rundir.glob("*/rep0/meta.json")).read_text())
    assert meta["status"] == "ok"
    assert lab_links() == []


def registered_pid(needle: str, timeout: float = 20.0) -> int:
    """PID of the process the running lab registered (leftovers registry) whose command line holds needle."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            pids = json.loads(Path("/run/iwlab/i0.json").read_text())["pids"]
        except (OSError, ValueError, KeyError):
            pids = {}
        for pid, cmd in pids.items():
            if needle in cmd:
                return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"no registered process runs {needle!r}")


def test_a_switch_that_dies_fails_its_replication_and_the_run_goes_on(tmp_path):
    cmd = [sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", "model", "--reps", "2",
           "--out", str(tmp_path)]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    for line in p.stdout:
        lines.append(line)
        if "rep0: running" in line:
            break
    time.sleep(5)  # audio flowing through the switch
    os.kill(registered_pid("accessnet.modelswitch"), signal.SIGKILL)
    rest, _ = p.communicate(timeout=180)
    out = "".join(lines) + rest
    assert p.returncode == 0, out  # one of two replications failed: the run itself completed
    rundir = next(tmp_path.iterdir())
    failed = json.loads(next(rundir.glob("*/rep0/meta.json")).read_text())
    assert failed["status"] == "failed" and "switch" in failed["error"], failed
    assert (next(rundir.glob("*/rep0")) / "audio_tx.csv").stat().st_size > 0  # what was measured is kept
    assert json.loads(next(rundir.glob("*/rep1/meta.json")).read_text())["status"] == "ok"
    assert "FAILED replications (1)" in out and "switch process died" in out, out[-2000:]
    assert lab_links() == []
    assert processes_mentioning(str(tmp_path)) == []
