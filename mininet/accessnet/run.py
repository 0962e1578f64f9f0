"""The main job: ``make mininet SCENARIO=web6 [REPS=n]``.

For every case of the scenario (profile x buffer x AQM x IW) and every
replication: build the access network, start the switch (BMv2, or the
reference model when BMv2 is absent, or a kernel bridge for kernel AQMs),
start captures and traffic, wait, collect, tear down. Each replication is
written to ``results/<run>/<case>/rep<k>.tmp`` and renamed to ``rep<k>`` only
when complete, so an interrupted run loses nothing finished and resumes
where it stopped (``--resume RUN_DIR``). A replication that fails (switch
crash, hang, time-out) is recorded as failed with its logs, and the rest go on.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from refmodel.params import ConfigError

from . import scenario as scen
from .leftovers import Lease
from .switches import (Bmv2Switch, KernelSwitch, ModelSwitch, Switch, TuneSpec, bmv2_available, ensure_p4_build,
                       toolchain_versions)
from .topology import CLIENT_IP, ROOT, SERVER_IP, AccessNet

LOG = logging.getLogger("iwlab.run")
AUDIO_PORT, WEB_PORT, RTC_PORT = 5004, 8080, 5006
PY = sys.executable
# The audio endpoints run at a real-time priority (10: below the switch, 20,
# and the delay lines, 30) so that CPU load does not delay their timestamps:
# the audio's OWD must measure the network, not the scheduler. Bulk TCP
# endpoints stay at normal priority: they must never starve the wire.
REALTIME = ["chrt", "-r", "10"]
STARTUP_BUDGET_S = 10.0  # switch + pipeline + controller + captures, before the audio starts


class Interrupted(Exception):
    pass


def pick_switch(case: scen.Case, want: str, seed: int, slot: int = 0) -> Switch:
    if case.aqm in scen.KERNEL_AQMS:
        return KernelSwitch(case.aqm, case.buffer, case.profile)
    if want == "kernel":
        raise ConfigError(f"aqm {case.aqm!r} runs on the P4 switch, not on the kernel backend")
    if want == "bmv2" or (want == "auto" and bmv2_available()):
        return Bmv2Switch()
    return ModelSwitch(seed)


def traffic_plan(spec: dict, rng: random.Random) -> dict:
    """When and what the TCP side sends, drawn from the scenario with the rep's seed."""
    plan: dict = {"bursts": []}
    if "web" in spec:
        w = spec["web"]
        lo, hi = w.get("start_s", [10, 12])
        n = int(w.get("flows", 1))
        plan["bursts"].append({"start_s": rng.uniform(lo, hi), "flows": n,
                               "bytes": int(w.get("total_bytes", 372_000)) // n})
    if "burst" in spec:
        b = spec["burst"]
        lo, hi = b.get("start_s", [10, 12])
        n = int(b.get("flows", 1))
        first = rng.uniform(lo, hi)
        per = int(b.get("total_bytes", 180_000)) // n
        plan["bursts"].append({"start_s": first, "flows": n, "bytes": per})
        plan["bursts"].append({"start_s": first + float(b.get("second_after_s", 1.0)), "flows": n, "bytes": per})
    if "bulk" in spec:
        b = spec["bulk"]
        plan["bursts"].append({"start_s": float(b.get("start_s", 5.0)), "flows": 1,
                               "bytes": int(b.get("bytes", 1_000_000_000)), "bulk": True})
    return plan


def run_limit_s(duration_s: float, plan: dict, rate_bps: float) -> float:
    """A replication's hard time limit: the scenario's ``duration_s``, stretched on slow links so that its
    short transfers can finish: the last start + 4 x all their bytes at the link rate + 5 s (web6 on EDGE:
    372 kB take 18.6 s at 160 kbit/s, so 40 s cut every burst short). Bulk flows never stretch it."""
    short = [b for b in plan["bursts"] if not b.get("bulk")]
    if not short:
        return duration_s
    need = max(b["start_s"] for b in short) + 4 * sum(b["flows"] * b["bytes"] for b in short) * 8 / rate_bps + 5
    return max(duration_s, math.ceil(need))


def run_rep(sc: scen.Scenario, case: scen.Case, rep: int, outdir: Path, want_switch: str, slot: int = 0) -> dict:
    """One replication into ``outdir/rep<k>`` (atomically), in a lab slot of its own (``leftovers.Lease``:
    its own prefix, namespaces and record), so it never touches another run."""
    final = outdir / f"rep{rep}"
    tmp = outdir / f"rep{rep}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    seed = case.rep_seed(sc.seed, rep)  # paired: the same for every AQM of the scenario (Case.pair_key)
    rng = random.Random(seed)
    plan = traffic_plan(case.spec, rng)
    run_cfg = case.spec.get("run", {})
    audio = case.spec.get("audio", {})
    meta = {
        "status": "failed", "scenario": sc.name, "case": outdir.name, "rep": rep, "seed": seed,
        "profile": {"name": case.profile.name, "rate_bps": case.profile.rate_bps,
                    "delay_ms": case.profile.delay_ms, "server_delay_ms": case.profile.server_delay_ms},
        "buffer": case.buffer, "aqm": case.aqm, "iw": case.iw, "cc": sc.cc,
        "n_flows": sum(b["flows"] for b in plan["bursts"]), "plan": plan,
        "versions": {"kernel": platform.release(), "python": platform.python_version()},
    }
    switch = pick_switch(case, want_switch, seed, slot)
    meta["switch"] = switch.kind
    if switch.kind == "bmv2":
        meta["versions"].update(toolchain_versions())
    lease = Lease().acquire()
    if lease.removed:
        LOG.warning("removed what a dead run left in lab slot %s: %s", lease.prefix, ", ".join(lease.removed))
    meta["lab"] = lease.prefix
    net = AccessNet(lease.prefix, case.profile, logdir=tmp, registry=lease.registry)
    procs: list[subprocess.Popen] = []

    def spawn(node, args, name):
        f = open(tmp / f"{name}.out", "wb")
        argv = [*(REALTIME if args[0] in ("accessnet.audio", "accessnet.rtc") else []), PY, "-m", *args]
        p = node.popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT),
                       env={**os.environ, "PYTHONUNBUFFERED": "1"})
        procs.append(p)
        net.registry.process(p.pid, [PY, "-m", *args])
        return p

    started = time.time()
    try:
        net.start()
        meta["delay"] = "netem" if net.netem else "delayline"
        net.set_tcp(sc.cc)
        net.set_iw(case.iw)
        # The audio starts at t0, fixed before the switch starts so the controller knows the origin of the
        # scenario's link-rate schedule; switch, controller and captures must be up by then.
        t0 = time.time_ns() + int(STARTUP_BUDGET_S * 1e9)
        tune = TuneSpec(t0, float(run_cfg.get("jitter_budget_ms", 40.0)),
                        tuple((float(a), float(r)) for a, r in run_cfg.get("rate_changes", [])))
        meta["rate_changes"] = [list(x) for x in tune.rate_changes]
        switch.start(net, case.switch_cfg, tmp, tune)
        for pid in switch.pids():
            net.registry.process(pid)
        caps = [
            net.srv.popen(["tcpdump", "-i", f"{net.prefix}srv-eth0", "-s", "128", "-U", "-w",
                           str(tmp / "server.pcap")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            net.cli.popen(["tcpdump", "-i", f"{net.prefix}cli-eth0", "-s", "128", "-U", "-w",
                           str(tmp / "client.pcap")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            net.mon.popen(["tcpdump", "-i", f"{net.prefix}mon-eth0", "-s", "128", "-U", "-w",
                           str(tmp / "telemetry.pcap"), "ether", "proto", "0x88b5"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        ]
        procs.extend(caps)
        time.sleep(1.0)  # captures up (and exec'd: their command lines are final)
        for c in caps:
            net.registry.process(c.pid)

        duration = run_limit_s(sc.duration_s, plan, case.profile.rate_bps)
        meta["duration_limit_s"] = duration
        tail = float(run_cfg.get("tail_s", 2.0))
        slack = (t0 - time.time_ns()) / 1e9
        if slack < 0.2:
            raise RuntimeError(f"switch start-up took {STARTUP_BUDGET_S - slack:.1f} s, more than the "
                               f"{STARTUP_BUDGET_S} s budget")
        meta["audio_start_ns"] = t0
        spawn(net.cli, ["accessnet.audio", "recv", "--port", str(AUDIO_PORT), "--log", str(tmp / "audio_rx.csv"),
                        "--duration", str(duration + 5)], "audio_rx")
        sender = spawn(net.srv, ["accessnet.audio", "send", "--dst", CLIENT_IP, "--port", str(AUDIO_PORT),
                                 "--interval-ms", str(audio.get("interval_ms", 20)),
                                 "--payload", str(audio.get("payload", 40)), "--duration", str(duration),
                                 "--start-at", str(t0), "--log", str(tmp / "audio_tx.csv")], "audio_tx")
        clients = []
        if plan["bursts"]:
            spawn(net.srv, ["accessnet.web", "server", "--port", str(WEB_PORT), "--cc", sc.cc,
                            "--log", str(tmp / "server_flows.jsonl")], "web_server")
            time.sleep(0.3)
            meta["tcp_start_ns"] = t0 + int(min(b["start_s"] for b in plan["bursts"]) * 1e9)
            for k, b in enumerate(plan["bursts"]):
                clients.append(spawn(net.cli, [
                    "accessnet.web", "client", "--dst", SERVER_IP, "--port", str(WEB_PORT),
                    "--flows", str(b["flows"]), "--bytes", str(b["bytes"]), "--burst", str(k),
                    "--start-at", str(t0 + int(b["start_s"] * 1e9)), "--timeout", str(duration),
                    "--log", str(tmp / f"client_flows_{k}.csv")], f"web_client_{k}"))
        else:
            meta["tcp_start_ns"] = None
        if "users" in case.spec:  # the rtc+web workload's web users
            u = case.spec["users"]
            if not plan["bursts"]:
                spawn(net.srv, ["accessnet.web", "server", "--port", str(WEB_PORT), "--cc", sc.cc,
                                "--log", str(tmp / "server_flows.jsonl")], "web_server")
                time.sleep(0.3)
            ustart = t0 + int(float(u.get("start_s", 2.0)) * 1e9)
            meta["tcp_start_ns"] = min(ustart, meta["tcp_start_ns"] or ustart)
            meta["n_flows"] = meta["n_flows"] + int(u.get("count", 5))
            clients.append(spawn(net.cli, [
                "accessnet.web", "users", "--dst", SERVER_IP, "--port", str(WEB_PORT),
                "--users", str(int(u.get("count", 5))), "--min-bytes", str(int(u.get("min_bytes", 100_000))),
                "--max-bytes", str(int(u.get("max_bytes", 1_500_000))),
                "--idle-mean-s", str(float(u.get("idle_mean_s", 10.0))), "--start-at", str(ustart),
                "--duration", str(duration - float(u.get("start_s", 2.0)) - tail), "--seed", str(seed),
                "--log", str(tmp / "client_flows_users.csv")], "web_users"))
        rtc_sender = None
        if "rtc" in case.spec:  # one adaptive real-time flow (accessnet.rtc)
            r = case.spec["rtc"]
            rstart = float(r.get("start_s", 0.0))
            spawn(net.cli, ["accessnet.rtc", "recv", "--port", str(RTC_PORT), "--log", str(tmp / "rtc_rx.csv"),
                            "--duration", str(duration + 5)], "rtc_rx")
            rtc_sender = spawn(net.srv, [
                "accessnet.rtc", "send", "--dst", CLIENT_IP, "--port", str(RTC_PORT),
                "--size", str(int(r.get("size", 1200))), "--start-kbps", str(float(r.get("start_kbps", 128))),
                "--max-kbps", str(float(r.get("max_kbps", 2500))), "--duration", str(duration - rstart - tail),
                "--start-at", str(t0 + int(rstart * 1e9)), "--log", str(tmp / "rtc_tx.csv")], "rtc_tx")

        only_audio = float(run_cfg.get("audio_only_s", 15.0))
        deadline = time.monotonic() + 1.0 + duration
        done_at = None
        while time.monotonic() < deadline:
            if not switch.alive():
                raise RuntimeError("the switch process died during the run")
            dead = net.dead_hosts()
            if dead:
                raise RuntimeError(f"host shell(s) {', '.join(dead)} died during the run")
            if clients and all(c.poll() is not None for c in clients):
                done_at = done_at or time.monotonic()
                if time.monotonic() - done_at >= tail:
                    break
            if not clients and time.monotonic() - (deadline - duration) >= only_audio:
                break
            if sender.poll() is not None and not clients:
                break
            time.sleep(0.1)
        # Stop the senders first and let their last packets arrive before anything else stops.
        for snd in (sender, rtc_sender):
            if snd is not None and snd.poll() is None:
                snd.send_signal(signal.SIGTERM)
                snd.wait(timeout=10)
        time.sleep(2 * (case.profile.delay_ms + case.profile.server_delay_ms) / 1000 + 0.3)
        stop_gracefully(procs, 10.0)
        if plan["bursts"] or "users" in case.spec:
            from .web import merge_flows
            merge_flows(sorted(tmp.glob("client_flows_*.csv")), tmp / "server_flows.jsonl", tmp / "flows.csv")
        meta["status"] = "ok"
    except (Interrupted, KeyboardInterrupt):
        meta["error"] = "interrupted"  # not kept: the replication is redone on --resume
        raise
    except Exception as e:  # noqa: BLE001 - a failed replication is recorded, the sweep goes on
        meta["error"] = f"{type(e).__name__}: {e}"
        LOG.error("%s rep%d failed: %s", case.name, rep, meta["error"])
    finally:
        # SIGTERM first: the traffic tools flush their logs on it, so a failed replication keeps what it
        # measured up to the failure (SIGKILL would lose their buffered log lines).
        stop_gracefully(procs, 3.0)
        switch.stop()
        net.stop()
        lease.release()
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make mininet", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", default="web6", help="name in mininet/scenarios/ or a path to a .toml")
    ap.add_argument("--reps", type=int, help="replications (default: the scenario's)")
    ap.add_argument("--switch", choices=["auto", "bmv2", "model", "kernel"], help="override the scenario's")
    ap.add_argument("--out", type=Path, default=ROOT / "results", help="where run directories go")
    ap.add_argument("--resume", type=Path, help="continue an interrupted run directory")
    ap.add_argument("--jobs", type=int, default=1, help="replications at once (default 1: see accessnet.sweep)")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if os.geteuid() != 0:
        print("make mininet needs root (network namespaces)", file=sys.stderr)
        return 2
    try:
        sc = scen.load(a.scenario)
    except ConfigError as e:
        print(f"scenario error: {e}", file=sys.stderr)
        return 2
    reps = a.reps or sc.reps
    want = a.switch or sc.switch
    if want in ("auto", "bmv2") and any(c.aqm in scen.P4_AQMS for c in sc.cases):
        try:
            ensure_p4_build()  # never the stand-in by accident: compile p4src/ first where p4c is present
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    if want in ("auto", "model") and not bmv2_available() and any(c.aqm in scen.P4_AQMS for c in sc.cases):
        print("NOTE: BMv2 (simple_switch_grpc + build/bottleneck.json) is not available here: the reference model "
              "runs as the switch (userspace forwarder). Results are marked switch=model. To run the real P4 "
              "switch, install the toolchain once: make toolchain (about 60 min on 2 cores; see the README).")
    rundir = a.resume or a.out / f"{time.strftime('%Y%m%d-%H%M%S')}-{sc.name}"
    rundir.mkdir(parents=True, exist_ok=True)
    (rundir / "run.json").write_text(json.dumps({"scenario": sc.name, "file": sc.data, "argv": sys.argv,
                                                 "reps": reps, "switch": want}, indent=1))

    def on_signal(*_):
        raise Interrupted()

    signal.signal(signal.SIGTERM, on_signal)
    from .sweep import Unit, execute
    units = [Unit(sc, c, r, c.name) for c in sc.cases for r in range(reps)]
    print(f"run {rundir} : {len(sc.cases)} cases x {reps} reps")
    try:
        res = execute(units, rundir, want, jobs=a.jobs)
    except (KeyboardInterrupt, Interrupted):
        print(f"interrupted: finished replications are kept; resume with --resume {rundir}", file=sys.stderr)
        return 130
    failed = res["failed"]
    from .summary import print_summary
    print_summary(rundir)
    return 1 if res["ran"] and failed == res["ran"] else 0


if __name__ == "__main__":
    sys.exit(main())
