"""Initial retransmission timeout (scenario key ``[run] irto_s``), set with a BPF sock_ops program.

Linux asks a cgroup's sock_ops program for a connection's initial RTO (``BPF_SOCK_OPS_TIMEOUT_INIT``,
``tcp_timeout_init()``): it is the retransmission timer of the SYN at the active opener and of the SYN-ACK
at the passive one, 1 s by default (RFC 6298). ``bpf/irto.bpf.c`` answers with the value in its map;
``build/irto-attach`` (libbpf) loads it, writes the value and attaches it to the cgroups with BPF links
that live exactly as long as the loader process: however a run ends, even by SIGKILL, the kernel detaches
the program when the loader dies, and nothing is pinned.

``InitialRto`` makes one cgroup v2 directory per host (``<cgroup2>/iwlab/<prefix><host>``, server and
client), moves the host's shell into it and starts every process the lab spawns in that host inside it
(``preexec``: the child joins the cgroup before it execs, so every socket it opens is the cgroup's; sockets
take their cgroup when created). Both endpoints get the value, like the one TCP of the simulations in the
seeds: the client's SYN and the server's SYN-ACK. ``stop()`` ends the loader, moves any process still in
the cgroups back to the runner's own cgroup and removes the directories. A run that dies hard leaves
them in its slot's record (``leftovers``), and the next owner of the slot removes them.

What the initial RTO does not reach in Linux: a connection that got an RTT sample from its handshake (the
normal case) computes its RTO from that sample; one whose SYN or SYN-ACK was retransmitted and that has no
sample (no timestamps) falls back to 3 s (``TCP_TIMEOUT_FALLBACK``, RFC 6298 (5.7)) whatever the initial
RTO. ``tests/test_irto.py`` shows both in a capture.
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import time
from pathlib import Path

from refmodel.params import ConfigError

LOG = logging.getLogger("iwlab.irto")
ROOT = Path(__file__).resolve().parents[2]
BPF_OBJECT = ROOT / "build" / "irto.bpf.o"
LOADER = ROOT / "build" / "irto-attach"
MIN_S, MAX_S = 0.001, 120.0  # TCP_RTO_MAX is 120 s: the kernel caps the reply there


def check_irto(value, label: str) -> float | None:
    """``[run] irto_s``: absent (None) = the kernel's default, nothing attached; else seconds in
    [0.001, 120], a whole number of milliseconds."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
        and MIN_S <= value <= MAX_S
    if ok and abs(value * 1000 - round(value * 1000)) > 1e-6:
        ok = False
    if not ok:
        raise ConfigError(f"{label}: [run] irto_s = {value!r}: must be the initial retransmission timeout in "
                          f"seconds, a number in [{MIN_S}, {MAX_S:g}] with at most millisecond precision "
                          "(leave it out for the kernel's default, 1 s)")
    return float(value)


def cgroup2_mount() -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or, on hybrid systems,
    ``/sys/fs/cgroup/unified``), None without one."""
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            if right.split()[:1] == ["cgroup2"]:
                return Path(left.split()[4])
    except OSError:
        pass
    return None


def own_cgroup() -> Path | None:
    """This process's cgroup v2 directory (where leftovers go back to)."""
    mnt = cgroup2_mount()
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return mnt / line[3:].lstrip("/") if mnt else None
    except OSError:
        pass
    return mnt


def unavailable() -> str | None:
    """Why irto_s cannot work here, or None."""
    if os.geteuid() != 0:
        return "needs root (BPF and cgroups)"
    if cgroup2_mount() is None:
        return "no cgroup v2 hierarchy mounted"
    for f in (BPF_OBJECT, LOADER):
        if not f.exists():
            return f"{f.relative_to(ROOT)} missing: run 'make setup' (clang and libbpf-dev build it)"
    return None


def remove_cgroup(path: Path, back_to: Path | None = None) -> None:
    """Move what still runs in ``path`` to ``back_to`` (default: this process's cgroup), then remove it."""
    if not path.exists():
        return
    dest = back_to or own_cgroup()
    for _ in range(50):
        try:
            pids = (path / "cgroup.procs").read_text().split()
        except OSError:
            pids = []
        for pid in pids:
            try:
                (dest / "cgroup.procs").write_text(pid)
            except OSError:
                pass  # exited meanwhile
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)  # a process still exiting
    path.rmdir()  # raises: the caller says so


class InitialRto:
    """The sock_ops program attached to one cgroup per host for one replication."""

    def __init__(self, irto_s: float, prefix: str, registry=None, logdir: Path | None = None) -> None:
        self.ms = int(round(irto_s * 1000))
        self.prefix = prefix
        self.registry = registry
        self.logdir = logdir
        self.cgroups: dict[str, Path] = {}
        self.proc: subprocess.Popen | None = None
        self.calls: int | None = None

    def start(self, hosts: dict) -> "InitialRto":
        """``hosts``: {short name: Mininet node}; their shells join their cgroups, ``preexec(node)`` gives
        the rest. Raises with the loader's own words if the program cannot be loaded or attached."""
        why = unavailable()
        if why:
            raise RuntimeError(f"irto_s: {why}")
        base = cgroup2_mount() / "iwlab"
        base.mkdir(exist_ok=True)
        for name, node in hosts.items():
            cg = base / f"{self.prefix}{name}"
            if cg.exists():
                remove_cgroup(cg)
            cg.mkdir()
            self.cgroups[name] = cg
            if self.registry is not None:
                self.registry.cgroups([str(cg)])
            node.irto_cgroup = cg
            if getattr(node, "pid", None):
                (cg / "cgroup.procs").write_text(str(node.pid))  # the host's shell: what node.cmd runs
        argv = [str(LOADER), str(BPF_OBJECT), str(self.ms), *map(str, self.cgroups.values())]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if self.registry is not None:
            self.registry.process(self.proc.pid, argv)
        ready, _, _ = select.select([self.proc.stdout], [], [], 10.0)
        line = self.proc.stdout.readline().decode(errors="replace") if ready else ""
        if not line.startswith("ready"):
            self.proc.kill()
            _, err = self.proc.communicate(timeout=5)
            self.proc = None
            raise RuntimeError(f"irto-attach failed: {err.decode(errors='replace').strip() or 'no answer in 10 s'}")
        LOG.info("initial RTO %d ms on %s", self.ms, ", ".join(str(c) for c in self.cgroups.values()))
        return self

    def stop(self) -> None:
        """End the loader (its links go with it), then remove the cgroups; idempotent, safe after a failed
        start."""
        if self.proc is not None:
            try:
                out, err = self.proc.communicate(input=b"", timeout=5)  # end of stdin: it detaches and says
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            for line in out.decode(errors="replace").splitlines():
                if line.startswith("calls "):
                    self.calls = int(line.split()[1])
            if err.strip() and self.logdir is not None:
                (self.logdir / "irto.log").write_bytes(err)
            self.proc = None
        failed = []
        for cg in self.cgroups.values():
            try:
                remove_cgroup(cg)
            except OSError as e:
                failed.append(f"{cg}: {e}")
        self.cgroups.clear()
        if failed:
            raise RuntimeError(f"irto: cgroup(s) not removed: {'; '.join(failed)}")


def preexec(node):
    """For ``node.popen(..., preexec_fn=...)``: the child joins the host's initial-RTO cgroup before it
    execs, None when the host has none."""
    cg = getattr(node, "irto_cgroup", None)
    if cg is None:
        return None
    procs = str(cg / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    return join
