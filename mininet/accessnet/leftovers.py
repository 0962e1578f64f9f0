"""What a run leaves behind if it is killed hard (SIGKILL, a crash): recorded, and removed next time.

A run registers every process it starts (with its command line) and every
interface it creates in ``/run/iwlab/<prefix>.json``. ``sweep(prefix)`` at the
start of the next run kills only those processes whose PID still runs the
recorded command line, deletes only those interfaces, and removes the record.
Nothing is ever killed by name.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

STATE_DIR = Path("/run/iwlab")


def _cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return None


class Registry:
    def __init__(self, prefix: str) -> None:
        self.path = STATE_DIR / f"{prefix}.json"
        self.state: dict = {"pids": {}, "links": []}

    def _save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state))
        tmp.replace(self.path)

    def process(self, pid: int, argv: list[str] | None = None) -> None:
        """Record a process by PID and the command line it runs (``argv`` as started: a process
        launched through mnexec shows it only once it has exec'd)."""
        cmd = "\0".join(argv) + "\0" if argv else _cmdline(pid)
        if cmd is not None:
            self.state["pids"][str(pid)] = cmd
            self._save()

    def links(self, names: list[str]) -> None:
        self.state["links"] += names
        self._save()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def sweep(prefix: str) -> list[str]:
    """Remove what a killed run with this prefix left; returns what was removed."""
    path = STATE_DIR / f"{prefix}.json"
    if not path.exists():
        return []
    state = json.loads(path.read_text())
    removed = []
    for pid, cmd in state.get("pids", {}).items():
        if _cmdline(int(pid)) == cmd:
            os.kill(int(pid), signal.SIGKILL)
            removed.append(f"pid {pid}")
    for link in state.get("links", []):
        if subprocess.run(["ip", "link", "del", link], capture_output=True).returncode == 0:
            removed.append(link)
    path.unlink(missing_ok=True)
    return removed
