"""Units of work: one replication (a topology, a switch and a list of workloads), and the runner that
executes a list of them for both the main job (``accessnet.run``) and sweeps (``accessnet.sweep``).

Each replication is written to ``<run>/<case>/rep<k>.tmp`` and renamed to ``rep<k>`` only when complete
(or failed, with its logs and the reason in meta.json), so an interrupted run loses nothing finished and a
resume runs exactly what is missing. Each one runs in a lab slot of its own (``leftovers.Lease``), so any
number of runs on one host never touch each other. Neither entry point imports the other.
"""

from __future__ import annotations

import json
import logging
import multiprocessing as mp
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from refmodel.params import ConfigError

from . import scenario as scen
from .addresses import hosts, ipv6_missing
from .irto import InitialRto
from .irto import unavailable as irto_unavailable
from .keepawake import steal_ms
from .leftovers import Lease
from .switches import (KERNEL_QDISCS, Bmv2Switch, KernelSwitch, ModelSwitch, Switch, TuneSpec, bmv2_available,
                       toolchain_versions)
from .topology import ROOT, RWND_LOADER, RWND_OBJECT, AccessNet, kernel_qdisc_error
from .workloads import STARTUP_BUDGET_S, Lab, Workload, merge_tcp_logs, plan_of, run_limit_s, workloads_for

LOG = logging.getLogger("iwlab.run")


class Interrupted(BaseException):
    """A stop asked for (SIGTERM, see ``stop_on_sigterm``): the replication in progress is abandoned and its
    lab torn down, the finished ones are kept. A BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on its way (a failed replication's record, a library's retry) takes it for a
    failure and goes on."""


def stop_on_sigterm(say: Callable[[str], None] = lambda s: print(s, file=sys.stderr)) -> None:
    """The first SIGTERM raises Interrupted; from then on SIGTERM is ignored, so the teardown it starts (the
    switch, the captures, the namespaces, the slot's record) runs to the end. A second SIGTERM used to land
    in that teardown and cut it short, leaving processes and files for the slot's next owner. SIGKILL still
    stops at once (the next run in the slot removes what is left: ``accessnet.leftovers``)."""
    def on_term(*_) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        say("SIGTERM: stopping; the lab is torn down first, further SIGTERMs are ignored (SIGKILL forces)")
        raise Interrupted()

    signal.signal(signal.SIGTERM, on_term)


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


def pick_switch(case: scen.Case, want: str, seed: int) -> Switch:
    if case.aqm in scen.KERNEL_AQMS:
        return KernelSwitch(case.aqm, case.buffer, case.profile)
    if want == "kernel":
        raise ConfigError(f"aqm {case.aqm!r} runs on the P4 switch, not on the kernel backend")
    if want == "bmv2" or (want == "auto" and bmv2_available()):
        return Bmv2Switch()
    return ModelSwitch(seed)


def preflight(units: Sequence[Unit], want: str | None) -> None:
    """Refuse, before anything starts, what every replication of a case would fail on: a P4 AQM on the
    kernel backend, BMv2 asked for where it is absent, a kernel AQM this kernel lacks (tried for real), an
    initial RTO or a phone's window without its BPF program, IPv6 on a kernel without it."""
    tried: dict[str, str | None] = {}
    v6 = [u for u in units if u.case.ip == 6]
    if v6 and ipv6_missing():
        raise ConfigError(f"{v6[0].sc.name}: [run] ip = 6 cannot run here: {ipv6_missing()}")
    window = [u for u in units if u.case.profile.client_window_bytes is not None]
    missing = [f for f in (RWND_OBJECT, RWND_LOADER) if not f.exists()]
    if window and missing:
        raise ConfigError(f"{window[0].sc.name}: profile {window[0].case.profile.name!r} sets the phone's window "
                          f"(client_window_bytes), but {missing[0].name} is missing: run 'make setup' (clang and "
                          "libbpf-dev build it)")
    irto = [u for u in units if u.sc.irto_s is not None]
    if irto and irto_unavailable():
        raise ConfigError(f"{irto[0].sc.name}: [run] irto_s = {irto[0].sc.irto_s:g} cannot be set here: "
                          f"{irto_unavailable()}")
    for u in units:
        kind = want or u.sc.switch
        if u.case.aqm in scen.P4_AQMS:
            if kind == "kernel":
                raise ConfigError(f"{u.case.name}: aqm {u.case.aqm!r} runs on the P4 switch, not on the kernel backend")
            if kind == "bmv2" and not bmv2_available():
                raise ConfigError(f"{u.case.name}: switch 'bmv2' asked for, but BMv2 (simple_switch_grpc and "
                                  "build/bottleneck.json) is not available here")
            continue
        qdisc = KERNEL_QDISCS[u.case.aqm](u.case.buffer, u.case.profile)
        if qdisc not in tried:
            tried[qdisc] = kernel_qdisc_error(qdisc, u.case.profile.rate_bps)
        if tried[qdisc]:
            raise ConfigError(f"{u.case.name}: aqm {u.case.aqm!r} ('{qdisc}') is not available in this kernel: "
                              f"{tried[qdisc]}")


def source_version() -> str:
    """The project's commit, "+dirty" with uncommitted changes, "unknown" outside a git clone: which code a
    replication ran (results from before and after a fix must be told apart)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10,
                              check=True).stdout.strip()
    try:
        commit = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return commit + ("+dirty" if dirty else "")


def new_meta(sc: scen.Scenario, case: scen.Case, rep: int, seed: int, loads: list[Workload], switch: Switch) -> dict:
    meta = {
        "status": "failed", "scenario": sc.name, "case": case.name, "rep": rep, "seed": seed,
        "pair": case.pair_key,
        "profile": case.profile.as_meta(),
        "buffer": case.buffer, "aqm": case.aqm, "iw": case.iw, "cc": sc.cc, "nodelay": sc.nodelay,
        "irto_s": sc.irto_s, "ip": case.ip,
        "jitter_budget_ms": case.jitter_budget_ms,
        "n_flows": sum(w.n_flows() for w in loads), "plan": plan_of(loads), "switch": switch.kind,
        "versions": {"kernel": platform.release(), "python": platform.python_version(),
                     "source": source_version()},
    }
    if switch.kind == "bmv2":
        meta["versions"].update(toolchain_versions())
    return meta


def start_lab(sc: scen.Scenario, case: scen.Case, net: AccessNet, switch: Switch, loads: list[Workload], out: Path,
              meta: dict, irto: InitialRto | None = None) -> Lab:
    """Network up, TCP settings (with ``irto``, the initial RTO's program attached to the server's and
    the client's cgroups), switch and captures running; the audio's start t0 is fixed before the switch
    starts, so the controller knows the origin of the scenario's link-rate schedule."""
    run_cfg = case.spec.get("run", {})
    net.start()
    meta["delay"] = "netem" if net.netem else "delayline"
    meta["drain"] = net.drain  # "delayline": the access link's delay line releases on the model's times; "tbf"
    net.set_tcp(sc.cc)
    net.set_iw(case.iw)
    if case.profile.client_window_bytes is not None:
        net.set_client_window(case.profile.client_window_bytes)
    if irto is not None:
        irto.start({"srv": net.srv, "cli": net.cli})
    t0 = time.time_ns() + int(STARTUP_BUDGET_S * 1e9)
    duration = run_limit_s(sc.duration_s, loads, case.profile.rate_bps)
    tail_s = float(run_cfg.get("tail_s", 2.0))
    # A radio profile's rates (the replication's seed: paired across AQMs), or the scenario's own changes.
    changes = case.profile.rate_schedule(meta["seed"], duration + tail_s + 2) or tuple(
        (float(a), float(r)) for a, r in run_cfg.get("rate_changes", []))
    tune = TuneSpec(t0, changes)  # the jitter budget is in case.switch_cfg ([aqm.iwa] budget_s)
    meta["rate_changes"] = [list(x) for x in tune.rate_changes]
    addrs = hosts(case.ip)
    lab = Lab(net, out, t0, duration, tail_s, sc.cc, addrs.server, addrs.client, nodelay=sc.nodelay)
    switch.start(net, case.switch_cfg, out, tune)
    for pid in switch.pids():
        net.registry.process(pid)
    for node, intf, name, flt in ((net.srv, "srv-eth0", "server", []), (net.cli, "cli-eth0", "client", []),
                                  (net.mon, "mon-eth0", "telemetry", ["ether", "proto", "0x88b5"])):
        lab.procs.append(node.popen(["tcpdump", "-i", f"{net.prefix}{intf}", "-s", "128", "-U", "-w",
                                     str(out / f"{name}.pcap"), *flt],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(1.0)  # captures up (and exec'd: their command lines are final)
    for c in lab.procs:
        net.registry.process(c.pid)
    slack = (t0 - time.time_ns()) / 1e9
    if slack < 0.2:
        raise RuntimeError(f"switch start-up took {STARTUP_BUDGET_S - slack:.1f} s, more than the "
                           f"{STARTUP_BUDGET_S} s budget")
    meta.update(duration_limit_s=duration, audio_start_ns=t0)
    tcp = [s for s in (w.tcp_start_s() for w in loads) if s is not None]
    meta["tcp_start_ns"] = lab.at(min(tcp)) if tcp else None
    return lab


def t0_monotonic(t0_ns: int) -> float:
    """The monotonic-clock time of ``t0_ns`` (CLOCK_REALTIME): the audio's start, which start_lab sets up to
    STARTUP_BUDGET_S after the lab came up. The run's limit and audio_only_s count from it, not from the
    moment the workloads were started (which cut every run short by the start-up's slack: issue 35's Pion
    sender was stopped at t = 24 of its 31 s)."""
    return time.monotonic() + (t0_ns - time.time_ns()) / 1e9


def wait_for_end(lab: Lab, switch: Switch, loads: list[Workload], audio_only_s: float) -> None:
    """Until the workloads that end a run are done (+ tail), or audio alone ran its time, or the limit; a
    dead switch or host shell fails the replication."""
    enders = [w for w in loads if w.ends_run()]
    begin = t0_monotonic(lab.t0_ns)  # the times count from the audio's start, up to STARTUP_BUDGET_S ahead
    deadline, done_at = begin + 1.0 + lab.duration_s, None
    while time.monotonic() < deadline:
        if not switch.alive():
            raise RuntimeError("the switch process died during the run")
        dead = lab.net.dead_hosts()
        if dead:
            raise RuntimeError(f"host shell(s) {', '.join(dead)} died during the run")
        if enders and all(w.done() for w in enders):
            done_at = done_at or time.monotonic()
            if time.monotonic() - done_at >= lab.tail_s:
                return
        if not enders and (time.monotonic() - begin >= audio_only_s or loads[0].done()):
            return
        time.sleep(0.1)


def finish(loads: list[Workload], lab: Lab, case: scen.Case) -> None:
    """Senders stop first and their last packets arrive before anything else stops; then the logs."""
    for w in loads:
        w.stop()
    time.sleep(2 * (case.profile.delay_ms + case.profile.server_delay_ms) / 1000 + 0.3)
    stop_gracefully(lab.procs, 10.0)
    merge_tcp_logs(loads, lab.out)


def run_rep(sc: scen.Scenario, case: scen.Case, rep: int, outdir: Path, want_switch: str, slot: int = 0) -> dict:
    """One replication into ``outdir/rep<k>`` (atomically), in a lab slot of its own. ``slot`` is the
    runner's worker number (kept for the interface; names come from the lease)."""
    final, tmp = outdir / f"rep{rep}", outdir / f"rep{rep}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    seed = case.rep_seed(sc.seed, rep)  # paired: the same for every AQM of the scenario (Case.pair_key)
    loads = workloads_for(case.spec, seed)
    switch = pick_switch(case, want_switch, seed)
    meta = new_meta(sc, case, rep, seed, loads, switch)
    started, lab, net, irto = time.time(), None, None, None
    with Lease() as lease:
        if lease.removed:
            LOG.warning("removed what a dead run left in lab slot %s: %s", lease.prefix, ", ".join(lease.removed))
        meta["lab"] = lease.prefix
        try:
            net = AccessNet(lease.prefix, case.profile, logdir=tmp, registry=lease.registry, drain=switch.drain)
            if sc.irto_s is not None:
                irto = InitialRto(sc.irto_s, lease.prefix, lease.registry, tmp)
            lab = start_lab(sc, case, net, switch, loads, tmp, meta, irto)
            for w in loads:
                w.start(lab)
            steal0 = steal_ms()
            wait_for_end(lab, switch, loads, float(case.spec.get("run", {}).get("audio_only_s", 15.0)))
            finish(loads, lab, case)
            meta["host_steal_ms"] = round(steal_ms() - steal0, 1)   # what the hypervisor took meanwhile
            meta["status"] = "ok"
        except (Interrupted, KeyboardInterrupt):
            meta["error"] = "interrupted"  # not kept: the replication is redone on --resume
            raise
        except Exception as e:  # noqa: BLE001 - a failed replication is recorded, the sweep goes on
            meta["error"] = f"{type(e).__name__}: {e}".replace(str(tmp), str(final))  # where its logs will be
            LOG.error("%s rep%d failed: %s", case.name, rep, meta["error"])
        finally:
            # SIGTERM first: the traffic tools flush their logs on it, so a failed replication keeps what it
            # measured up to the failure (SIGKILL would lose their buffered log lines).
            stop_gracefully(lab.procs if lab else [], 3.0)
            switch.stop()
            if net is not None:
                net.stop()
            if irto is not None:
                try:
                    irto.stop()
                except Exception as e:  # noqa: BLE001 - recorded; the slot's next owner removes the rest
                    LOG.error("%s rep%d: %s", case.name, rep, e)
                    meta.setdefault("error", f"{type(e).__name__}: {e}")
                    meta["status"] = "failed"
                meta["irto_calls"] = irto.calls  # how often the program set an initial RTO
            meta["duration_s"] = round(time.time() - started, 3)
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
            if meta.get("error") != "interrupted":
                shutil.rmtree(final, ignore_errors=True)
                tmp.rename(final)
    return meta


def stop_gracefully(procs: list[subprocess.Popen], timeout: float) -> None:
    """SIGTERM every process still running, wait up to ``timeout`` s for all, then SIGKILL the rest."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ============================================================================ the runner of units


def done(rundir: Path, u: Unit) -> bool:
    return (rundir / u.dirname / f"rep{u.rep}" / "meta.json").exists()


RunOne = Callable[[scen.Scenario, scen.Case, int, Path, str, int], dict]


def _worker(slot: int, tasks, results, rundir: Path, want: str | None, run_one: RunOne) -> None:
    stop_on_sigterm(say=lambda s: None)  # the parent says it
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


class Progress:
    """One line per finished replication, with an ETA (shared by the local and the Ray engine)."""

    def __init__(self, n: int, parallel: int, say: Callable[[str], None]) -> None:
        self.n, self.parallel, self.say = n, max(1, parallel), say
        self.durations: list[float] = []
        self.failed = 0

    def report(self, key: str, status: str, kind: str, err: str, dt: float) -> None:
        self.durations.append(dt)
        self.failed += status != "ok"
        i = len(self.durations)
        left = self.n - i
        eta = sum(self.durations) / i * left / self.parallel / 60
        self.say(f"[{i}/{self.n}] {key}: {status} ({kind}) in {dt:.1f}s{'  ' + err if status != 'ok' else ''}"
                 f"{f', ETA {eta:.1f} min' if left else ''}")


def execute(units: Sequence[Unit], rundir: Path, want: str | None = None, jobs: int = 1, run_one: RunOne | None = None,
            say: Callable[[str], None] = print) -> dict:
    """Run every unit not yet done (switch kind ``want``, else each scenario's); progress and ETA through
    ``say``. Returns counts."""
    run_one = run_one or run_rep
    todo = [u for u in units if not done(rundir, u)]
    skipped = len(units) - len(todo)
    if skipped:
        say(f"{skipped} of {len(units)} replications already done: not redone")
    n = len(todo)
    progress = Progress(n, jobs, say)

    if jobs <= 1:
        for i, u in enumerate(todo, 1):
            say(f"[{i}/{n}] {u.key}: running")
            t = time.time()
            meta = run_one(u.sc, u.case, u.rep, rundir / u.dirname, want or u.sc.switch, 0)
            progress.report(u.key, meta.get("status"), meta.get("switch"), meta.get("error", ""), time.time() - t)
        return {"ran": n, "skipped": skipped, "failed": progress.failed}

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
        for _ in range(n):
            while True:
                try:
                    progress.report(*results.get(timeout=1.0))
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
    return {"ran": n, "skipped": skipped, "failed": progress.failed}
