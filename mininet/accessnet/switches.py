"""The bottleneck switch of a run, in one of three kinds (same ports; the drain: AccessNet.drain):

* ``Bmv2Switch``: ``simple_switch_grpc`` running ``p4src/bottleneck.p4``,
  configured by the P4Runtime controller (``python -m controller``);
* ``ModelSwitch``: the reference model as a userspace forwarder
  (``python -m accessnet.modelswitch``), for machines without BMv2;
* ``KernelSwitch``: a Linux bridge with a kernel qdisc under a tbf drain, for the
  kernel AQM peers on identical traffic.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .profiles import Profile
from .scenario import RED_ROWS
from .topology import ROOT, AccessNet, Ports, sh


@dataclass(frozen=True)
class TuneSpec:
    """What the closed loop needs from the run besides the switch's table (which holds the jitter budget, as its
    [aqm.iwa] budget_s: ``scenario.Case.switch_cfg``): the link-rate schedule."""

    t0_ns: int  # the audio's start: origin of the rate schedule
    rate_changes: tuple[tuple[float, float], ...] = ()  # (seconds after t0, new rate in bit/s)

    def args(self) -> list[str]:
        out = ["--t0-ns", str(self.t0_ns)]
        if self.rate_changes:
            out += ["--rate-schedule", ",".join(f"{a:g}:{r:g}" for a, r in self.rate_changes)]
        return out

P4_PREFIX_DEFAULT = "/opt/p4"
# The switch process runs at a real-time priority, below the delay lines (30, they are the wire) and
# above the audio endpoints (10): packets must not wait for the CPU where the model does not expect it.
REALTIME = ["chrt", "-r", "20"]


def find_p4_tool(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path=os.path.join(os.environ.get("P4_PREFIX", P4_PREFIX_DEFAULT),
                                                                        "bin"))


PINS_FILE = ROOT / "tools" / "toolchain.versions"  # the toolchain's pins, one place (make toolchain)


def read_pins(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of a toolchain.versions file ({} when absent)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    return dict(ln.split("=", 1) for ln in (x.strip() for x in lines) if ln and not ln.startswith("#") and "=" in ln)


def pinned_versions(path: Path = PINS_FILE) -> dict[str, str]:
    """The pinned toolchain as meta.json records it, and whether the installed one was built from these pins."""
    pins = read_pins(path)
    out = {f"{k.lower()}_pin": f"{pins[k + '_REF']} {pins.get(k + '_COMMIT', '')[:10]}".strip()
           for k in ("P4C", "BMV2", "PI", "P4RUNTIME") if k + "_REF" in pins}
    prefix = os.environ.get("P4_PREFIX", P4_PREFIX_DEFAULT)
    installed = read_pins(Path(prefix) / "share" / "iwlab" / "toolchain.versions")
    if not installed:
        out["toolchain_build"] = f"not built by make toolchain ({prefix})"
    else:
        same = all(installed.get(k) == v for k, v in pins.items() if k.endswith("_COMMIT"))
        out["toolchain_build"] = "make toolchain, these pins" if same else "make toolchain, OTHER pins than tools/toolchain.versions"
    return out


@functools.cache
def toolchain_versions() -> dict[str, str]:
    """Versions of the P4 tools a run used (recorded in meta.json), where present, and the pinned ones."""
    out = {}
    for key, tool in (("bmv2", "simple_switch_grpc"), ("p4c", "p4c-bm2-ss")):
        exe = find_p4_tool(tool)
        if exe:
            r = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=10)
            text = (r.stdout + r.stderr).strip().splitlines()
            out[key] = text[-1].strip() if text else "?"
    out.update(pinned_versions())
    return out


def bmv2_available() -> bool:
    return bool(find_p4_tool("simple_switch_grpc")) and (ROOT / "build" / "bottleneck.json").exists()


# The Makefile's P4SRC: what build/bottleneck.json is compiled from.
P4_BUILD_INPUTS = ("p4src/*.p4", "p4src/include/*.p4")


def p4_build_stale(root: Path = ROOT) -> str | None:
    """Why build/bottleneck.json must be (re)compiled, or None when it is newer than every p4src/ file."""
    out = root / "build" / "bottleneck.json"
    if not out.exists():
        return "build/bottleneck.json is missing"
    built = out.stat().st_mtime
    newer = sorted(str(p.relative_to(root)) for pat in P4_BUILD_INPUTS for p in root.glob(pat)
                   if p.stat().st_mtime > built)
    return f"build/bottleneck.json is older than {', '.join(newer)}" if newer else None


def ensure_p4_build(root: Path = ROOT, run=subprocess.run) -> str:
    """Never the stand-in by accident: where the toolchain is present, compile p4src/ (``make build``,
    the Makefile's own p4c command) when build/ is missing or older than p4src/, so BMv2 runs.
    Returns what it did: "no-toolchain", "up-to-date" or "compiled"; raises RuntimeError when the
    compilation fails (the run must not quietly fall back to the model)."""
    if not (find_p4_tool("p4c-bm2-ss") and find_p4_tool("simple_switch_grpc")):
        return "no-toolchain"
    why = p4_build_stale(root)
    if why is None:
        return "up-to-date"
    print(f"compiling the P4 program first ({why}): make build", flush=True)
    r = run(["make", "-C", str(root), "build"])
    if r.returncode != 0:
        raise RuntimeError(f"'make build' failed (exit {r.returncode}): the P4 program does not compile; fix p4src/ "
                           "or run on the reference model on purpose with --switch model")
    return "compiled"


def bmv2_argv(ports: Ports, thrift_port: int, grpc_addr: str, grpc_args: list[str] | tuple[str, ...] = ()) -> list[str]:
    """simple_switch_grpc's command line: ports 1 (server side), 2 (client side) and 3 (monitor), no program
    until the controller pushes one, its Thrift server on ``thrift_port`` (every address of the namespace it
    runs in: it has no option to bind one), its P4Runtime server at ``grpc_addr`` only, ``grpc_args`` (e.g.
    TLS) for that server."""
    return [find_p4_tool("simple_switch_grpc"), "--device-id", "1", *ports.bmv2_args(), "--thrift-port",
            str(thrift_port), "--no-p4", "--", "--grpc-server-addr", grpc_addr, *grpc_args]


def wait_port(port: int, timeout: float = 15.0, alive=lambda: True, node=None) -> None:
    """Wait until something listens on 127.0.0.1:``port`` (inside ``node``'s namespace when given)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            raise RuntimeError("switch process exited during start-up")
        if node is not None:
            if f":{port} " in sh(node, f"ss -Hltn 'sport = :{port}'", timeout=5) + " ":
                return
        else:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


class Switch:
    kind = "?"
    drain = "delayline"  # the lab's drain it needs (topology.DRAINS): a P4 switch's is the delay line

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def start(self, net: AccessNet, cfg: dict, rundir: Path, tune: TuneSpec) -> None:
        raise NotImplementedError

    def pids(self) -> list[int]:
        return [self.proc.pid] if self.proc is not None else []

    def alive(self) -> bool:
        return self.proc is None or self.proc.poll() is None

    def stop(self) -> None:
        terminate(self.proc)


def terminate(proc: subprocess.Popen | None, timeout: float = 10) -> None:
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Bmv2Switch(Switch):
    """BMv2 and its controller run inside the run's switch namespace: the P4Runtime server is bound to that
    namespace's loopback, and BMv2's Thrift server (which listens on every address of its namespace, with
    no option to bind one) is reachable only there: no other run and nothing off the host can reach either,
    and every run can use the default ports."""

    kind = "bmv2"

    def __init__(self) -> None:
        super().__init__()
        self.grpc_port = 9559
        self.thrift_port = 9090
        self.controller: subprocess.Popen | None = None
        self.node = None

    def pids(self) -> list[int]:
        return super().pids() + ([self.controller.pid] if self.controller is not None else [])

    def alive(self) -> bool:
        return super().alive() and (self.controller is None or self.controller.poll() is None)

    def stop(self) -> None:
        terminate(self.controller, timeout=15)  # first: it leaves the switch in its configured state
        super().stop()

    def start(self, net: AccessNet, cfg: dict, rundir: Path, tune: TuneSpec) -> None:
        log = open(rundir / "switch.log", "wb")
        self.node = net.sw
        self.proc = net.sw.popen([*REALTIME, *bmv2_argv(net.ports, self.thrift_port, f"127.0.0.1:{self.grpc_port}")],
                                 stdout=log, stderr=subprocess.STDOUT)
        wait_port(self.grpc_port, alive=self.alive, node=net.sw)
        cfg_path = rundir / "switch.json"
        cfg_path.write_text(json.dumps(cfg, indent=1))
        # The controller lives as long as the run: it installs, then tunes in a closed loop (tuning.csv),
        # re-applies everything if the switch restarts, and restores the configured state when stopped.
        clog_path = rundir / "controller.log"
        self.controller = net.sw.popen(
            [sys.executable, "-m", "controller", "-v", "tune", "--config", str(cfg_path),
             "--address", f"127.0.0.1:{self.grpc_port}", "--monitor-port", "3", "--monitor-if", net.ports.monitor,
             *net.drain_args(), "--log", str(rundir / "tuning.csv"), *tune.args(),
             "--p4info", str(ROOT / "build" / "bottleneck.p4info.txtpb"),
             "--p4blob", str(ROOT / "build" / "bottleneck.json")],
            stdout=open(clog_path, "ab"), stderr=subprocess.STDOUT, cwd=ROOT)
        deadline = time.monotonic() + 120
        while b"installed:" not in clog_path.read_bytes():
            if self.controller.poll() is not None:
                raise RuntimeError(f"the controller exited during installation: see {clog_path}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the controller did not install the pipeline within 120 s: see {clog_path}")
            time.sleep(0.1)
        self._queue_depth()
        self.thread_priorities = prioritise_bmv2_threads(self.proc.pid)
        (rundir / "switch.log").open("a").write(f"[iwlab] packet thread priorities: {self.thread_priorities}\n"
                                                f"[iwlab] egress queue depth: {self.queue_depth}\n")

    def _queue_depth(self) -> None:
        """BMv2's own egress queue must add no drops: make it deep (its rate is unlimited by default)."""
        cli = find_p4_tool("simple_switch_CLI")
        if cli:
            p = self.node.popen(["/usr/bin/python3", cli, "--thrift-port", str(self.thrift_port)],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                out, _ = p.communicate(b"set_queue_depth 16384\n", timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            ok = p.returncode == 0 and b"Could not connect" not in out and b"Error" not in out
            self.queue_depth = "16384" if ok else f"default (set_queue_depth failed: {out.decode(errors='replace')[-200:].strip()})"
        else:
            self.queue_depth = "default (no simple_switch_CLI)"


# simple_switch moves a packet through four threads: receive (stamps ingress_global_timestamp) -> ingress
# pipeline -> egress pipeline (one of 4 workers, by port) -> transmit. At one shared real-time priority, a
# thread that wakes for the next stage waits while the others work through an IW10 burst: the first packet
# of a busy period reached the tbf up to 13 ms after BMv2 stamped it, and the real queue then ran that much
# behind the modelled one for the whole busy period. Later stages get higher priorities (a packet, once
# stamped, runs to completion) and the receive thread the highest (stamps on time). The threads are found
# by creation order (BMv2 1.15: after the pipeline is loaded, nine unnamed threads appear in this order).
BMV2_THREAD_ROLES = ["other", "receive", "ingress", "egress0", "egress1", "egress2", "egress3", "transmit", "other"]
BMV2_PRIORITY = {"receive": 21, "transmit": 24, "egress0": 23, "egress1": 23, "egress2": 23, "egress3": 23,
                 "ingress": 22}


def prioritise_bmv2_threads(pid: int) -> dict[str, int] | str:
    """Give BMv2's packet threads their priorities; returns role -> tid, or why nothing was changed."""
    task = Path(f"/proc/{pid}/task")
    try:
        tids = sorted(int(t) for t in os.listdir(task) if int(t) != pid
                      and (task / t / "comm").read_text().strip() == "simple_switch_g")
    except OSError as e:
        return f"not changed: {e}"
    if len(tids) < len(BMV2_THREAD_ROLES):
        return f"not changed: {len(tids)} switch threads, expected at least {len(BMV2_THREAD_ROLES)}"
    roles = dict(zip(BMV2_THREAD_ROLES, tids[-len(BMV2_THREAD_ROLES):]))
    for role, tid in roles.items():
        if role in BMV2_PRIORITY:
            subprocess.run(["chrt", "-r", "-p", str(BMV2_PRIORITY[role]), str(tid)], capture_output=True)
    return {r: t for r, t in roles.items() if r != "other"}


class ModelSwitch(Switch):
    kind = "model"

    def __init__(self, seed: int = 1) -> None:
        super().__init__()
        self.seed = seed

    def start(self, net: AccessNet, cfg: dict, rundir: Path, tune: TuneSpec) -> None:
        cfg_path = rundir / "switch.json"
        cfg_path.write_text(json.dumps(cfg, indent=1))
        log = open(rundir / "switch.log", "wb")
        # The same closed loop as the P4Runtime controller (controller.tuner), run in-process.
        self.proc = net.sw.popen(
            [*REALTIME, sys.executable, "-m", "accessnet.modelswitch", "--if", f"1={net.ports.server}",
             "--if", f"2={net.ports.client}", "--monitor", net.ports.monitor, "--config", str(cfg_path),
             "--seed", str(self.seed), "--tune-log", str(rundir / "tuning.csv"), *net.drain_args(),
             *tune.args()], stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        time.sleep(0.5)
        if not self.alive():
            raise RuntimeError(f"model switch exited at start: see {rundir / 'switch.log'}")


def kernel_red(buf: dict, rate_bps: float, row: dict) -> str:
    """Linux RED with the seeds' row for the profile (thresholds in 1500 B packets, as in the BRIEF)."""
    avpkt = 1500
    th_min, th_max = row["th_min"] * avpkt, row["th_max"] * avpkt
    limit = max(th_max * 4, buf.get("packets", 0) * 1514, buf.get("bytes", 0))
    burst = max(1, round((2 * th_min + th_max) / (3 * avpkt)))
    return (f"red limit {limit} min {th_min} max {th_max} avpkt {avpkt} burst {burst} "
            f"bandwidth {int(rate_bps)}bit probability {row['max_p']}")


KERNEL_QDISCS = {
    "pfifo": lambda buf, prof: f"pfifo limit {buf.get('packets', 1000)}",
    "kred": lambda buf, prof: kernel_red(buf, prof.rate_bps, RED_ROWS.get(prof.name, RED_ROWS["hspa"])),
    "kcodel": lambda buf, prof: f"codel limit {buf.get('packets', 1000)}",
    "kfq_codel": lambda buf, prof: f"fq_codel limit {buf.get('packets', 1000)}",
    "kpie": lambda buf, prof: f"pie limit {buf.get('packets', 1000)}",
}


class KernelSwitch(Switch):
    kind = "kernel"
    drain = "tbf"  # its AQM is a qdisc, the tbf's child

    def __init__(self, qdisc: str, buffer: dict, prof: Profile) -> None:
        super().__init__()
        self.qdisc = KERNEL_QDISCS[qdisc](buffer, prof)

    def start(self, net: AccessNet, cfg: dict, rundir: Path, tune: TuneSpec) -> None:
        if tune.rate_changes:
            raise ValueError("rate changes are not supported on the kernel backend (tc change would drop its AQM)")
        net.kernel_aqm(self.qdisc)
        (rundir / "switch.log").write_text(f"linux bridge, qdisc under tbf: {self.qdisc}\n")
