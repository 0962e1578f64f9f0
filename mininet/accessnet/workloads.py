"""Workloads as objects: each section of a scenario file (``[audio]``, ``[web]``, ``[burst]``, ``[bulk]``,
``[users]``, ``[rtc]``, ``[webrtc]``, ``[quic]``) is one class here that owns its random plan, its processes,
its stop and its logs.

A replication is a topology, a switch and a list of workloads (``accessnet.replication``); the runner
knows nothing of any workload. Adding a workload is one class with a ``section`` name here (and its keys in
``accessnet.scenario``); no runner code changes.

Each workload draws its randomness from a generator seeded with the replication's seed and its own
section name, so the draws of one workload never depend on which other workloads a scenario has, and every
AQM of a scenario sees the same draws in one replication number (``Case.rep_seed``).
"""

from __future__ import annotations

import math
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from .browse import DEFAULTS as USERS_DEFAULTS
from .irto import preexec
from .topology import ROOT, AccessNet
from .web import WEB_PORT, merge_flow_logs
from .webrtc import DEFAULTS as WEBRTC_DEFAULTS
from .webrtc import PION_BINARY, STACK

AUDIO_PORT, RTC_PORT = 5004, 5006
QUIC_PORT = 4433  # UDP
QUIC_READY_S = 15.0  # the QUIC server imports aioquic and makes its certificate before it listens
STARTUP_BUDGET_S = 10.0  # switch + pipeline + controller + captures, before the audio starts (t0)
WEBRTC_SIGNAL_PORT = 5008  # TCP, the offer/answer (flow k: + k); the media's UDP ports are ICE's own (ephemeral)
PY = sys.executable
# The audio endpoints run at a real-time priority (10: below the switch, 20, and the delay lines, 30) so
# that CPU load does not delay their timestamps: the audio's OWD must measure the network, not the
# scheduler. Bulk TCP endpoints stay at normal priority: they must never starve the wire.
REALTIME = ["chrt", "-r", "10"]


@dataclass
class Lab:
    """What a workload needs from the running replication: the network, where logs go, the clock origin
    (the audio's start), the time limit, the server's and the phone's addresses in the run's IP family
    (``[run] ip``: a workload that takes its addresses from here talks over the run's family), and a way to
    start processes that the runner stops and cleans."""

    net: AccessNet
    out: Path
    t0_ns: int
    duration_s: float
    tail_s: float
    cc: str
    server_ip: str
    client_ip: str
    nodelay: bool = False  # the web server sets TCP_NODELAY on its connections ([run] nodelay)
    procs: list[subprocess.Popen] = field(default_factory=list)
    web_server: subprocess.Popen | None = None

    def spawn(self, node, args: list[str], name: str, realtime: bool = False, exe: str | None = None) -> subprocess.Popen:
        """``python -m <args>`` (or the program ``exe`` with ``args``) in a host, output to ``<name>.out``,
        registered for cleanup."""
        f = open(self.out / f"{name}.out", "wb")
        prog = [exe] if exe else [PY, "-m"]
        argv = [*(REALTIME if realtime else []), *prog, *args]
        p = node.popen(argv, stdout=f, stderr=subprocess.STDOUT, cwd=str(ROOT),
                       env={**os.environ, "PYTHONUNBUFFERED": "1"}, preexec_fn=preexec(node))  # irto's cgroup
        self.procs.append(p)
        self.net.registry.process(p.pid, [*prog, *args])
        return p

    def ensure_web_server(self) -> None:
        """One web server per replication, shared by every TCP workload (it listens on both families)."""
        if self.web_server is None:
            self.web_server = self.spawn(self.net.srv, ["accessnet.web", "server", "--port", str(WEB_PORT), "--cc",
                                                        self.cc, "--log", str(self.out / "server_flows.jsonl"),
                                                        *(["--nodelay"] if self.nodelay else [])],
                                         "web_server")
            time.sleep(0.3)

    def at(self, s: float) -> int:
        return self.t0_ns + int(s * 1e9)

    def listen_s(self) -> float:
        """A receiver's --duration (counted from its own start, up to STARTUP_BUDGET_S before t0): to 5 s past
        the run's limit whatever the start-up's slack; finish() stops it sooner. Constant, so two AQMs of a
        replication start the same command lines. (duration_s + 5 alone ended the receivers at t ~ 28 of a
        32 s run on the model switch: issue 35.)"""
        return self.duration_s + 5 + STARTUP_BUDGET_S


class Workload:
    """One traffic component of a replication. Subclasses set ``section`` and override what they need."""

    section: ClassVar[str] = ""
    tcp: ClassVar[bool] = False  # its flows go into flows.csv (its client logs merged with its server's log)
    # (client logs' glob, server log) that merge_tcp_logs joins into flows.csv, when ``tcp``
    flow_logs: ClassVar[tuple[str, str]] = ("client_flows_*.csv", "server_flows.jsonl")

    def __init__(self, cfg: dict, seed: int) -> None:
        self.cfg = dict(cfg)
        self.seed = seed
        self.rng = random.Random(f"{seed}/{self.section}")
        self.plan: dict[str, Any] = self.draw()
        self.procs: list[subprocess.Popen] = []

    def draw(self) -> dict:
        """The replication's random plan of this workload (JSON, recorded in meta.json)."""
        return {}

    def transfers(self) -> list[dict]:
        """Short transfers ({start_s, flows, bytes}) that a replication's time limit must leave room for."""
        return []

    def tcp_start_s(self) -> float | None:
        """When its first TCP flow starts (s after the audio's start), None without TCP."""
        return None

    def n_flows(self) -> int:
        return 0

    def start(self, lab: Lab) -> None:
        raise NotImplementedError

    def ends_run(self) -> bool:
        """True when the replication may end once this workload is done (and the others that end it)."""
        return False

    def done(self) -> bool:
        return all(p.poll() is not None for p in self.procs)

    def stop(self) -> None:
        """First phase of the stop: senders stop sending (their last packets still arrive afterwards)."""

    def collect(self, out: Path) -> None:
        """After every process has stopped: turn its logs into the replication's data files."""


def _start_range(cfg: dict) -> tuple[float, float]:
    lo, hi = cfg.get("start_s", [10, 12])
    return float(lo), float(hi)


class Audio(Workload):
    """CBR audio, server to phone; always present. It ends the run only when nothing else does."""

    section = "audio"

    def start(self, lab: Lab) -> None:
        a = self.cfg
        lab.spawn(lab.net.cli, ["accessnet.audio", "recv", "--port", str(AUDIO_PORT), "--log",
                                str(lab.out / "audio_rx.csv"), "--duration", str(lab.listen_s())], "audio_rx",
                  realtime=True)
        self.sender = lab.spawn(lab.net.srv, [
            "accessnet.audio", "send", "--dst", lab.client_ip, "--port", str(AUDIO_PORT),
            "--interval-ms", str(a.get("interval_ms", 20)), "--payload", str(a.get("payload", 40)),
            "--duration", str(lab.duration_s), "--start-at", str(lab.t0_ns), "--log", str(lab.out / "audio_tx.csv")],
            "audio_tx", realtime=True)

    def done(self) -> bool:
        return self.sender.poll() is not None

    def stop(self) -> None:
        _stop_sender(self.sender)


def _stop_sender(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Bursts(Workload):
    """Parallel downloads starting together: one client per burst (TCP web clients here; ``Quic``'s own)."""

    tcp = True

    def transfers(self) -> list[dict]:
        return [b for b in self.plan["bursts"] if not b.get("bulk")]

    def tcp_start_s(self) -> float | None:
        return min(b["start_s"] for b in self.plan["bursts"])

    def n_flows(self) -> int:
        return sum(b["flows"] for b in self.plan["bursts"])

    def start(self, lab: Lab) -> None:
        lab.ensure_web_server()
        for b in self.plan["bursts"]:
            k = b["burst"]
            self.procs.append(lab.spawn(lab.net.cli, [
                "accessnet.web", "client", "--dst", lab.server_ip, "--port", str(WEB_PORT),
                "--flows", str(b["flows"]),
                "--bytes", str(b["bytes"]), "--burst", str(k), "--start-at", str(lab.at(b["start_s"])),
                "--timeout", str(lab.duration_s), "--log", str(lab.out / f"client_flows_{k}.csv")], f"web_client_{k}"))

    def ends_run(self) -> bool:
        return True


class Web(Bursts):
    """``[web]``: N parallel flows, total_bytes split evenly, all starting at U(start_s)."""

    section = "web"

    def draw(self) -> dict:
        lo, hi = _start_range(self.cfg)
        n = int(self.cfg.get("flows", 1))
        return {"bursts": [{"start_s": self.rng.uniform(lo, hi), "flows": n,
                            "bytes": int(self.cfg.get("total_bytes", 372_000)) // n}]}


class Burst(Bursts):
    """``[burst]``: burstN+N, a burst at U(start_s) and a similar one second_after_s later."""

    section = "burst"

    def draw(self) -> dict:
        lo, hi = _start_range(self.cfg)
        n = int(self.cfg.get("flows", 1))
        first = self.rng.uniform(lo, hi)
        per = int(self.cfg.get("total_bytes", 180_000)) // n
        second = first + float(self.cfg.get("second_after_s", 1.0))
        return {"bursts": [{"start_s": s, "flows": n, "bytes": per} for s in (first, second)]}


class Bulk(Bursts):
    """``[bulk]``: one long-lived flow from start_s (it never stretches the time limit)."""

    section = "bulk"

    def draw(self) -> dict:
        return {"bursts": [{"start_s": float(self.cfg.get("start_s", 5.0)), "flows": 1,
                            "bytes": int(self.cfg.get("bytes", 1_000_000_000)), "bulk": True}]}


class Users(Workload):
    """``[users]``: web users, each page downloads of U(min, max) bytes with Exp(idle) between (the tool
    draws them from this replication's seed), over a fresh connection per page, a browser's pool of kept-alive
    connections, or one HTTP/2-like connection per user (``mode``; accessnet.browse). One row per page in
    flows.csv: the user is its burst."""

    section = "users"
    tcp = True

    def __init__(self, cfg: dict, seed: int) -> None:
        super().__init__({**USERS_DEFAULTS, **cfg}, seed)

    def draw(self) -> dict:
        plan = {"seed": self.rng.getrandbits(48), "count": int(self.cfg["count"]),
                "start_s": float(self.cfg["start_s"])}
        mode = self.cfg["mode"]
        if mode != "fresh":  # a fresh user's plan stays as it always was
            plan.update(mode=mode, objects=int(self.cfg["objects"]))
            if mode == "keepalive":
                plan["connections"] = int(self.cfg["connections"])
        return plan

    def tcp_start_s(self) -> float | None:
        return self.plan["start_s"]

    def n_flows(self) -> int:
        return self.plan["count"]

    def browser_args(self) -> list[str]:
        """The persistent modes' arguments (none for fresh users: their command is as it always was)."""
        u = self.cfg
        if u["mode"] == "fresh":
            return []
        args = ["--mode", u["mode"], "--objects", str(int(u["objects"]))]
        if u["mode"] == "keepalive":
            args += ["--connections", str(int(u["connections"]))]
        if "keepalive_timeout_s" in u:
            args += ["--keepalive-timeout-s", str(float(u["keepalive_timeout_s"]))]
        return args

    def start(self, lab: Lab) -> None:
        u = self.cfg
        lab.ensure_web_server()
        self.procs.append(lab.spawn(lab.net.cli, [
            "accessnet.web", "users", "--dst", lab.server_ip, "--port", str(WEB_PORT),
            "--users", str(self.plan["count"]),
            "--min-bytes", str(int(u["min_bytes"])), "--max-bytes", str(int(u["max_bytes"])),
            "--idle-mean-s", str(float(u["idle_mean_s"])), "--start-at", str(lab.at(self.plan["start_s"])),
            "--duration", str(lab.duration_s - self.plan["start_s"] - lab.tail_s), "--seed", str(self.plan["seed"]),
            "--log", str(lab.out / "client_flows_users.csv"), *self.browser_args()], "web_users"))

    def ends_run(self) -> bool:
        return True


class Rtc(Workload):
    """``[rtc]``: one adaptive real-time flow, server to phone (accessnet.rtc)."""

    section = "rtc"

    def start(self, lab: Lab) -> None:
        r = self.cfg
        rstart = float(r.get("start_s", 0.0))
        lab.spawn(lab.net.cli, ["accessnet.rtc", "recv", "--port", str(RTC_PORT), "--log", str(lab.out / "rtc_rx.csv"),
                                "--duration", str(lab.listen_s())], "rtc_rx", realtime=True)
        self.sender = lab.spawn(lab.net.srv, [
            "accessnet.rtc", "send", "--dst", lab.client_ip, "--port", str(RTC_PORT),
            "--size", str(int(r.get("size", 1200))),
            "--start-kbps", str(float(r.get("start_kbps", 128))), "--max-kbps", str(float(r.get("max_kbps", 2500))),
            "--duration", str(lab.duration_s - rstart - lab.tail_s), "--start-at", str(lab.at(rstart)),
            "--log", str(lab.out / "rtc_tx.csv")], "rtc_tx", realtime=True)

    def stop(self) -> None:
        _stop_sender(self.sender)


class WebRtc(Workload):
    """``[webrtc]``: one real WebRTC flow, server to phone: ``stack = "aiortc"`` (the default; accessnet.webrtc:
    receiver-side delay-based estimate, REMB) or ``"pion"`` (build/pion-rtc: Pion's send-side GCC with TWCC
    feedback, loss-based controller and pacer), with the same command line, encoder and logs. Its per-packet
    logs are rtc_tx.csv / rtc_rx.csv in the [rtc] flow's columns, so the rtc metrics (goodput, loss, OWD, TFS)
    read them unchanged; webrtc_tx_stats.csv / webrtc_rx_stats.csv hold its controller's state per second, and
    for aiortc webrtc_rx_trace.csv its estimator's input and state per packet (``webrtc.RX_TRACE``); the keys
    ``diag_arrival`` and ``diag_rtt_ms`` pass the receiver's diagnostics (issue 35; off by default). The
    stack is in meta.json's plan (``plan.workloads.webrtc.stack``). It ends the run when its sender has sent its
    media (the sender's duration ends with the run's, less its start and the tail)."""

    section = "webrtc"

    def draw(self) -> dict:
        return {"stack": self.cfg.get("stack", STACK)}  # no random draw: the record of which stack ran

    def start(self, lab: Lab) -> None:
        r = {**WEBRTC_DEFAULTS, **self.cfg}
        rstart = float(r.get("start_s", 0.0))
        pion = self.plan["stack"] == "pion"
        exe, prog = (str(PION_BINARY), []) if pion else (None, ["accessnet.webrtc"])
        self.senders = []
        for k in range(int(r.get("flows", 1))):  # flow k: its own signalling port and logs (suffix _k, k >= 1)
            sfx, port = (f"_{k}" if k else ""), str(WEBRTC_SIGNAL_PORT + k)
            diag = [] if pion else ["--trace", str(lab.out / f"webrtc_rx_trace{sfx}.csv"), *(
                ["--diag-arrival", r["diag_arrival"]] if "diag_arrival" in r else []), *(
                ["--diag-rtt-ms", str(float(r["diag_rtt_ms"]))] if "diag_rtt_ms" in r else [])]
            lab.spawn(lab.net.cli, [*prog, "recv", "--local-ip", lab.client_ip,
                                    "--signal-port", port,
                                    "--max-burst-ms", str(float(r["max_burst_ms"])), "--duration", str(lab.listen_s()),
                                    "--log", str(lab.out / f"rtc_rx{sfx}.csv"),
                                    "--stats", str(lab.out / f"webrtc_rx_stats{sfx}.csv"), *diag], f"webrtc_rx{sfx}",
                      realtime=True, exe=exe)
            sender = lab.spawn(lab.net.srv, [
                *prog, "send", "--dst", lab.client_ip, "--local-ip", lab.server_ip,
                "--signal-port", port,
                "--start-kbps", str(float(r["start_kbps"])), "--min-kbps", str(float(r["min_kbps"])),
                "--max-kbps", str(float(r["max_kbps"])), "--fps", str(float(r["fps"])),
                "--duration", str(lab.duration_s - rstart - lab.tail_s), "--start-at", str(lab.at(rstart)),
                "--log", str(lab.out / f"rtc_tx{sfx}.csv"), "--stats", str(lab.out / f"webrtc_tx_stats{sfx}.csv")],
                f"webrtc_tx{sfx}", realtime=True, exe=exe)
            self.senders.append(sender)
            self.procs.append(sender)

    def ends_run(self) -> bool:
        return True

    def stop(self) -> None:
        for sender in self.senders:
            _stop_sender(sender)


class Quic(Bursts):
    """``[quic]``: a page over QUIC (aioquic; accessnet.quic): ``connections`` parallel connections of ``streams``
    streams each, ``total_bytes`` split evenly over all the streams, starting at U(start_s). For the analysis a
    connection is a flow (flows.csv, joined with the QUIC server's log on the client's UDP port: ``rtos`` are
    its PTO expiries, ``retrans`` the packets aioquic declared lost), so the overlap filter, burst completion
    and the report read a QUIC page as a web burst. The route's initcwnd (the case's IW) does not reach it:
    aioquic starts every connection with its own window of 10 datagrams."""

    section = "quic"
    flow_logs = ("client_quic_*.csv", "server_quic.jsonl")

    def draw(self) -> dict:
        lo, hi = _start_range(self.cfg)
        c, total = int(self.cfg.get("connections", 1)), int(self.cfg.get("total_bytes", 372_000))
        return {"bursts": [{"start_s": self.rng.uniform(lo, hi), "flows": c, "bytes": total // c, "quic": True,
                            "streams": int(self.cfg.get("streams", 6))}], "total_bytes": total}

    def start(self, lab: Lab) -> None:
        server = lab.spawn(lab.net.srv, ["accessnet.quic", "server", "--host", lab.server_ip, "--port", str(QUIC_PORT),
                                         "--log", str(lab.out / "server_quic.jsonl")], "quic_server")
        wait_for_line(lab.out / "quic_server.out", "listening on", server, QUIC_READY_S)
        for b in self.plan["bursts"]:
            k = b["burst"]
            self.procs.append(lab.spawn(lab.net.cli, [
                "accessnet.quic", "client", "--dst", lab.server_ip, "--port", str(QUIC_PORT),
                "--connections", str(b["flows"]), "--streams", str(b["streams"]),
                "--bytes", str(self.plan["total_bytes"]), "--burst", str(k), "--start-at", str(lab.at(b["start_s"])),
                "--timeout", str(lab.duration_s), "--log", str(lab.out / f"client_quic_{k}.csv"),
                "--streams-log", str(lab.out / f"quic_streams_{k}.csv")], f"quic_client_{k}"))


def wait_for_line(path: Path, text: str, proc: subprocess.Popen, timeout_s: float) -> None:
    """Until a server's output holds ``text`` (it is ready); a server that exits or takes longer than
    ``timeout_s`` fails the replication with the end of its output."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        out = path.read_text(errors="replace") if path.exists() else ""
        if text in out:
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path.stem} exited ({proc.returncode}) before it was ready: {out[-500:]!r}")
        time.sleep(0.05)
    raise RuntimeError(f"{path.stem} was not ready after {timeout_s:g} s (no {text!r} in {path.name})")


WORKLOADS: dict[str, type[Workload]] = {w.section: w for w in (Audio, Web, Burst, Bulk, Users, Rtc, WebRtc, Quic)}


def workloads_for(spec: dict, seed: int) -> list[Workload]:
    """The workloads of a scenario's traffic sections (audio always), each with this replication's plan;
    bursts are numbered 0, 1, ... across workloads (the ``burst`` column of flows.csv)."""
    out = [cls(spec.get(name, {}), seed) for name, cls in WORKLOADS.items() if name == "audio" or name in spec]
    for k, b in enumerate(b for w in out for b in w.plan.get("bursts", [])):
        b["burst"] = k
    return out


def plan_of(workloads: list[Workload]) -> dict:
    """meta.json's ``plan``: the bursts (as before) and every workload's own plan."""
    bursts = [b for w in workloads for b in w.plan.get("bursts", [])]
    return {"bursts": bursts, "workloads": {w.section: w.plan for w in workloads}}


def run_limit_s(duration_s: float, workloads: list[Workload], rate_bps: float) -> float:
    """A replication's hard time limit: the scenario's ``duration_s``, stretched on slow links so that its
    short transfers can finish: the last start + 4 x all their bytes at the link rate + 5 s (web6 on EDGE:
    372 kB take 18.6 s at 160 kbit/s, so 40 s cut every burst short). Bulk flows never stretch it."""
    short = [t for w in workloads for t in w.transfers()]
    if not short:
        return duration_s
    need = max(t["start_s"] for t in short) + 4 * sum(t["flows"] * t["bytes"] for t in short) * 8 / rate_bps + 5
    return max(duration_s, math.ceil(need))


def merge_tcp_logs(workloads: list[Workload], out: Path) -> None:
    """flows.csv from every flow workload's client logs, each kind joined with its own server's log (the web
    server's for TCP, the QUIC server's for QUIC: ``flow_logs``)."""
    pairs = list(dict.fromkeys(w.flow_logs for w in workloads if w.tcp))
    if pairs:
        merge_flow_logs([(sorted(out.glob(clients)), out / server) for clients, server in pairs], out / "flows.csv")
