"""Per-run lab names, and what a run leaves behind if it is killed hard (SIGKILL, a crash).

Every replication takes a *lease* on a lab slot before it builds anything:
``/run/iwlab/i<NNN>.lock`` held with ``flock`` for the replication's whole
life. The slot gives the run its own prefix ``i<NNN>`` for every host,
interface and record name, so any number of runs (and the test suite) on one
host never share a name. The kernel drops a ``flock`` when its holder dies, so
a free lock proves its last owner is gone; the record also names the owner's
PID and start time, checked again before anything is touched.

A run registers every process it starts (with its command line), every
interface, every cgroup, every named network namespace and every socket file it creates in
``/run/iwlab/i<NNN>.json``. Only the process that takes a free slot, whose recorded owner is dead,
removes what that dead run left: it kills only those processes whose PID still runs the recorded
command line, deletes only those interfaces, namespaces and files, and removes the record. Nothing is ever
killed by name, and nothing of a live run is ever touched. Cgroups (the initial-RTO ones,
``accessnet.irto``) are removed once the recorded processes are dead.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
from pathlib import Path

from .irto import remove_cgroup
from .netns import delete_namespace

STATE_DIR = Path("/run/iwlab")
MAX_SLOTS = 1000  # prefixes i000..i999: "i999srv-eth0" is 12 characters, within IFNAMSIZ (15)


def cmdline(pid: int) -> str | None:
    """A running process's command line as the record keeps it (NUL-separated), else None."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return None


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the PID, it
    names one process for good (a PID alone can be reused)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()[19]


def alive(pid: int, start: str | None) -> bool:
    now = _start_time(pid)
    return now is not None and (start is None or now == start)


class Registry:
    """The record of one slot: its owner, the processes and the interfaces it made."""

    def __init__(self, prefix: str) -> None:
        self.path = STATE_DIR / f"{prefix}.json"
        self.state: dict = {"owner": os.getpid(), "owner_start": _start_time(os.getpid()), "pids": {}, "links": []}

    def _save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.state))
        tmp.replace(self.path)

    def process(self, pid: int, argv: list[str] | None = None) -> None:
        """Record a process by PID and the command line it runs (``argv`` as started: a process
        launched through mnexec shows it only once it has exec'd)."""
        cmd = "\0".join(argv) + "\0" if argv else cmdline(pid)
        if cmd is not None:
            self.state["pids"][str(pid)] = cmd
            self._save()

    def links(self, names: list[str]) -> None:
        self.state["links"] += names
        self._save()

    def cgroups(self, paths: list[str]) -> None:
        self.state.setdefault("cgroups", []).extend(paths)
        self._save()

    def netns(self, names: list[str]) -> None:
        """Record named network namespaces (``ip netns``), before they are made."""
        self.state.setdefault("netns", []).extend(names)
        self._save()

    def files(self, paths: list[str]) -> None:
        """Record files (e.g. a Unix socket a server binds), before they are made."""
        self.state.setdefault("files", []).extend(paths)
        self._save()

    def clear(self) -> None:
        self.path.unlink(missing_ok=True)


def sweep(prefix: str) -> list[str] | None:
    """Remove what a dead run with this prefix left; returns what was removed, or None (and touches
    nothing) when the record's owner still runs. Call only while holding the slot's lease."""
    path = STATE_DIR / f"{prefix}.json"
    try:
        state = json.loads(path.read_text())
    except FileNotFoundError:
        return []
    except ValueError:
        state = {}
    owner = state.get("owner")
    if owner is not None and owner != os.getpid() and alive(int(owner), state.get("owner_start")):
        return None  # not dead: not ours to clean
    removed = []
    for pid, cmd in state.get("pids", {}).items():
        if cmdline(int(pid)) == cmd:
            try:
                os.kill(int(pid), signal.SIGKILL)
                removed.append(f"pid {pid}")
            except ProcessLookupError:
                pass
    for link in state.get("links", []):
        if subprocess.run(["ip", "link", "del", link], capture_output=True, timeout=10).returncode == 0:
            removed.append(link)
    for ns in state.get("netns", []):
        if delete_namespace(ns):
            removed.append(f"netns {ns}")
    for f in state.get("files", []):
        try:
            Path(f).unlink()
            removed.append(f)
        except FileNotFoundError:
            pass
    for cg in state.get("cgroups", []):
        if Path(cg).is_dir():
            try:
                remove_cgroup(Path(cg))
                removed.append(cg)
            except OSError:
                pass
    path.unlink(missing_ok=True)
    return removed


class Lease:
    """A lab slot held by this process: ``prefix`` for names, ``registry`` for its record.

    ``with Lease() as lease:`` takes the lowest free slot (cleaning what a dead owner left there) and frees
    it on exit. The lock file descriptor is close-on-exec and never shared with children, so a lab process
    that outlives its run does not keep the slot: the next owner cleans it up."""

    def __init__(self) -> None:
        self.fd: int | None = None
        self.prefix = ""
        self.registry: Registry | None = None
        self.removed: list[str] = []

    def acquire(self) -> "Lease":
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        for n in range(MAX_SLOTS):
            prefix = f"i{n:03d}"
            fd = os.open(STATE_DIR / f"{prefix}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            removed = sweep(prefix)
            if removed is None:  # a live owner without the lock (should not happen): leave its slot alone
                os.close(fd)
                continue
            self.fd, self.prefix, self.removed = fd, prefix, removed
            self.registry = Registry(prefix)
            self.registry._save()
            return self
        raise RuntimeError(f"all {MAX_SLOTS} lab slots in {STATE_DIR} are held by live runs")

    def release(self) -> None:
        if self.registry is not None:
            self.registry.clear()
        if self.fd is not None:
            os.close(self.fd)  # drops the flock
            self.fd = None

    def __enter__(self) -> "Lease":
        return self.acquire() if self.fd is None else self

    def __exit__(self, *exc) -> None:
        self.release()


def find_record(owner: int) -> tuple[str, dict] | None:
    """The prefix and record of a live slot owned by process ``owner`` (for tests and tools)."""
    for path in sorted(STATE_DIR.glob("i[0-9][0-9][0-9].json")):
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if state.get("owner") == owner:
            return path.stem, state
    return None
