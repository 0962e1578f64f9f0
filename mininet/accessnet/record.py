"""A run directory's own record, ``run.json``: what the run is (scenario or sweep, with the data it was
started from), and its history (every start and resume, appended). Resumes read it instead of the files
as they are now, so a run can never mix two scenarios or settings."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

RECORD_FORMAT = 2  # 1: case directories without the scenario's name (before the record kept a history)
DIGEST_SUFFIX = ".json"


def digest_path(digests: Path, key: str) -> Path:
    """Where the digest of replication ``key`` (``<case>/rep<k>``, the sweep's name of it) lies in a directory
    of digests: ``experiments.digest`` writes it there, ``accessnet.sweep --skip-digested`` asks whether it
    exists (the lab never imports the analysis, so the rule lives here)."""
    return Path(digests) / f"{key}{DIGEST_SUFFIX}"


class RecordError(ValueError):
    """A run directory that cannot be resumed as asked; the message says why."""


def history_entry(action: str, reps: int, switch: str) -> dict:
    return {"action": action, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "argv": sys.argv, "pid": os.getpid(),
            "host": socket.gethostname(), "reps": reps, "switch": switch}


def write_record(rundir: Path, rec: dict) -> None:
    tmp = rundir / "run.json.tmp"
    tmp.write_text(json.dumps(rec, indent=1))
    tmp.replace(rundir / "run.json")
