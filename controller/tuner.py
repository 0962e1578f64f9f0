"""The closed loop: telemetry in, policy, IWA knobs out, every period logged.

``ClosedLoop`` is the part both switches share: it is fed the telemetry
records one by one (``add``) and, once per period (``tick``), turns what the
period showed into a ``policy.Observation``, asks ``policy.tune`` for the
knobs (IWA's target and the target of CoDel, which controls IWA's
established flows), writes one row to ``tuning.csv`` (inputs and decision)
and returns the parameters to write when they changed. It does no switch
I/O: the BMv2 driver (``run_bmv2``, P4Runtime) and the model switch
(``accessnet.modelswitch``, in-process) apply what it returns. With
``aqm = iwa`` those two targets are the controller's: configured values are
what the switch starts with and is left with (``defined_state``).

A link-rate change (``rate_schedule``) is part of the loop because the
controller owns the switch's idea of the rate: at the scheduled time it
re-derives every rate-dependent parameter (drain time per byte, IWA's
payload conversions, RED thresholds in ns, ...) and the drivers also retune
the drain shaper.

Telemetry records of decision BYPASS (upstream packets: the client's SYN and
ACKs, with reason IWA_WINDOW when IWA rewrote the window) never waited in the
queue: they are counted as window rewrites, never as audio or drops.
"""

from __future__ import annotations

import asyncio
import csv
import dataclasses
import logging
import signal
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from refmodel.constants import TELEMETRY_ETHERTYPE, Aqm, Decision, Reason, TrackFlag, TrafficClass
from refmodel.params import PipelineParams, budget_ns, frame_bytes, iwa_budget_s
from refmodel.telemetry import ETH_HEADER, Record, TelemetryError

from . import policy
from .config import link_tables, params_from_dict

LOG = logging.getLogger("iwlab.tuner")
NS = 1_000_000_000
COLUMNS = ["t_ns", "rate_bps", "aqm", "target_ns", "codel_target_ns", "audio_pkts", "audio_p99_sojourn_ns",
           "new_flows", "windows", "drops", "reason"]


def parse_rate_schedule(spec: str | None) -> list[tuple[float, float]]:
    """'20:1e6,30:2e6' -> [(20.0, 1e6), (30.0, 2e6)]: (seconds after t0, new rate in bit/s)."""
    out = []
    for item in (spec or "").split(","):
        if not item.strip():
            continue
        try:
            at, rate = (float(x) for x in item.split(":"))
        except ValueError:
            raise ValueError(f"rate schedule item {item!r}: expected AT_S:RATE_BPS, e.g. 20:1e6") from None
        if at < 0 or rate <= 0:
            raise ValueError(f"rate schedule item {item!r}: time must be >= 0 and rate > 0")
        out.append((at, rate))
    return sorted(out)


@dataclass
class PeriodStats:
    """What one period's telemetry showed."""

    audio_sojourn_ns: list[int] = field(default_factory=list)
    new_flows: int = 0  # downstream SYN-ACKs that entered the flow tracker
    windows: int = 0  # upstream ACKs whose window IWA rewrote (start shaping)
    drops: int = 0
    records: int = 0

    def add(self, r: Record) -> None:
        self.records += 1
        if r.decision == Decision.BYPASS:  # upstream (or unconfigured): never queued, never dropped
            if r.reason == Reason.IWA_WINDOW:
                self.windows += 1
            return
        if r.decision == Decision.DROP:
            self.drops += 1
        elif r.cls == TrafficClass.UDP:
            self.audio_sojourn_ns.append(r.sojourn_ns)
        if r.tflags & TrackFlag.NEW_FLOW:
            self.new_flows += 1

    def p99(self) -> int | None:
        if not self.audio_sojourn_ns:
            return None
        return int(np.percentile(np.asarray(self.audio_sojourn_ns), 99, method="higher"))


@dataclass
class Action:
    params: PipelineParams
    rate_changed: bool
    rate_bps: float


class ClosedLoop:
    def __init__(self, cfg: dict, *, period_ns: int = 100_000_000,
                 rate_schedule: list[tuple[float, float]] | None = None, t0_ns: int | None = None,
                 log: IO[str] | None = None, now: Callable[[], int] = time.time_ns) -> None:
        self.cfg = cfg
        self.base = params_from_dict(cfg)  # validated before anything is written
        self.params = self.base
        self.rate_bps = float(cfg["link"]["rate_bps"])
        iwa = cfg.get("aqm", {}).get("iwa")
        # the budget and the frame size the switch installed IWA's target from (refmodel.params.iwa_params), from
        # the same table: the jitter budget is its [aqm.iwa] budget_s (config.with_jitter_budget puts a run's there)
        self.budget_ns = budget_ns(iwa_budget_s(iwa))
        self.frame_bytes = frame_bytes(iwa)
        self.period_ns = period_ns
        self.t0_ns = now() if t0_ns is None else t0_ns
        self.schedule = list(rate_schedule or [])
        self.rates: list[tuple[int, float]] = [(self.t0_ns, self.rate_bps)]  # (since, rate): the recent ones
        self.tuning = self.base.queue.aqm == Aqm.IWA  # other AQMs: observed and logged, never written
        self.state = policy.TunerState(target_ns=self.base.iwa.target_ns, codel_target_ns=self.base.codel.target_ns,
                                       budget_cap_ns=self.base.iwa.budget_cap_ns)
        self.stats = PeriodStats()
        self.next_tick_ns: int | None = None
        self.rows = 0
        self._csv = csv.writer(log, lineterminator="\n") if log is not None else None
        self._log = log
        if self._csv is not None:
            self._csv.writerow(COLUMNS)

    def add(self, rec: Record) -> None:
        self.stats.add(rec)

    def _with_rate(self, rate_bps: float) -> PipelineParams:
        return params_from_dict({**self.cfg, "link": {**self.cfg.get("link", {}), "rate_bps": rate_bps}})

    def tick(self, now_ns: int) -> Action | None:
        """Call often; acts once per period. Returns the parameters to write, or None."""
        if self.next_tick_ns is None:
            self.next_tick_ns = now_ns + self.period_ns
            return None
        if now_ns < self.next_tick_ns:
            return None
        self.next_tick_ns += self.period_ns * max(1, (now_ns - self.next_tick_ns) // self.period_ns + 1)
        rate_changed = False
        while self.schedule and now_ns >= self.t0_ns + self.schedule[0][0] * NS:
            _, self.rate_bps = self.schedule.pop(0)
            self.base = self._with_rate(self.rate_bps)
            self.rates.append((now_ns, self.rate_bps))
            rate_changed = True
        st, self.stats = self.stats, PeriodStats()
        obs = policy.Observation(t_ns=now_ns, rate_bps=self.rate_bps, jitter_budget_ns=self.budget_ns,
                                 rate_varies=self.rate_varies(now_ns))
        p99 = st.p99()
        reason = f"link rate -> {self.rate_bps / 1e6:g} Mbit/s; " if rate_changed else ""
        if self.tuning:
            d = policy.tune(self.state, obs, frame_bytes=self.frame_bytes)
            self.state = d.state
            reason += d.reason
            new = dataclasses.replace(
                self.base, iwa=dataclasses.replace(self.base.iwa, target_ns=d.state.target_ns,
                                                   budget_cap_ns=d.state.budget_cap_ns),
                codel=dataclasses.replace(self.base.codel, target_ns=d.state.codel_target_ns))
        else:
            new = self.base
            reason += "observe only (aqm is not iwa)"
        self._row(obs, new, st, p99, reason)
        changed = rate_changed or new != self.params
        self.params = new
        return Action(new, rate_changed, self.rate_bps) if changed else None

    def rate_varies(self, now_ns: int) -> bool:
        """Whether the link's rate changed in the last ``policy.RATE_MEMORY_S``."""
        horizon = now_ns - int(policy.RATE_MEMORY_S * NS)
        while len(self.rates) > 1 and self.rates[1][0] <= horizon:
            self.rates.pop(0)  # superseded before the horizon
        return len(self.rates) > 1

    def defined_state(self) -> PipelineParams:
        """What the switch is left with when the controller stops: the configured knobs at the current rate."""
        return self.base

    def _row(self, obs: policy.Observation, p: PipelineParams, st: PeriodStats, p99: int | None,
             reason: str) -> None:
        self.rows += 1
        if self._csv is None:
            return
        self._csv.writerow([obs.t_ns, int(self.rate_bps), p.queue.aqm.name.lower(), p.iwa.target_ns,
                            p.codel.target_ns, len(st.audio_sojourn_ns),
                            "" if p99 is None else p99, st.new_flows,
                            st.windows, st.drops, reason])
        self._log.flush()


class LinkLoops:
    """One closed loop per access link with parameters of its own ([links.N] in the configuration), beside
    the loop of the defaults (every other link). A record goes to its link's loop, or to the defaults' loop;
    each loop decides from its own link's telemetry, at its own rate, and writes its own rows (``log_for``:
    link -> where, None for the defaults). The rate schedule changes the defaults' rate only."""

    def __init__(self, cfg: dict, *, log_for: Callable[[int | None], IO[str] | None] = lambda link: None,
                 rate_schedule: list[tuple[float, float]] | None = None, **kw) -> None:
        top = {k: v for k, v in cfg.items() if k != "links"}
        self.default = ClosedLoop(top, rate_schedule=rate_schedule, log=log_for(None), **kw)
        self.links = {link: ClosedLoop(t, log=log_for(link), **kw) for link, t in sorted(link_tables(cfg).items())}

    def add(self, rec: Record) -> None:
        self.links.get(rec.link, self.default).add(rec)

    def tick(self, now_ns: int) -> list[tuple[int | None, Action]]:
        """(link, what to write) for every loop whose parameters changed this period; link None: the defaults."""
        acts = [(None, self.default.tick(now_ns))] + [(link, lp.tick(now_ns)) for link, lp in self.links.items()]
        return [(link, act) for link, act in acts if act is not None]


# ----------------------------------------------------------------------------- telemetry source

ETH_P_ALL = 0x0003


def telemetry_socket(ifname: str) -> socket.socket:
    """A raw socket that sees the frames the switch sends out of its monitor port (outgoing included)."""
    # protocol 0, then bound to the interface with ETH_P_ALL: a socket opened with ETH_P_ALL receives from
    # every interface until its bind (the same as accessnet.rawsock.packet_socket; the controller does not
    # depend on the lab package)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((ifname, ETH_P_ALL))  # Python byte-swaps the protocol of an AF_PACKET address itself
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.setblocking(False)
    return s


def drain_records(s: socket.socket, loop: ClosedLoop | LinkLoops) -> int:
    """Feed every telemetry frame waiting on ``s`` to the loop; returns how many."""
    n = 0
    while True:
        try:
            frame = s.recv(256)
        except BlockingIOError:
            return n
        if len(frame) < ETH_HEADER + 64 or struct.unpack_from("!H", frame, 12)[0] != TELEMETRY_ETHERTYPE:
            continue
        try:
            loop.add(Record.decode(frame[ETH_HEADER:]))
            n += 1
        except TelemetryError:
            continue


# ----------------------------------------------------------------------------- BMv2 driver (P4Runtime)


async def run_bmv2(switch, loops: LinkLoops, monitor_if: str | None, *, shaper: Callable[[float], None] | None,
                   counters_every: int = 10, duration_s: float | None = None, ready: Callable[[], None] = lambda: None,
                   connect_timeout_s: float = 40.0) -> int:
    """Install, then tune until SIGTERM/SIGINT (or ``duration_s``); leave the switch in a defined state.

    ``switch`` is a ``BottleneckSwitch``; finsy's ``Switch.run`` keeps its channel up for the whole run
    (reconnecting with backoff when the switch goes away), and the switch's ready handler re-pushes the
    pipeline and re-applies the desired state, tuned knobs included, every time the channel comes back.
    """
    stop = asyncio.Event()
    aio = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        aio.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(switch.sw.run())
    sock = telemetry_socket(monitor_if) if monitor_if else None
    try:
        try:
            await asyncio.wait_for(switch.wait_applied(None), connect_timeout_s)
        except asyncio.TimeoutError:
            raise ConnectionError(f"switch {switch.target.address} unreachable: no P4Runtime channel after "
                                  f"{connect_timeout_s:g} s") from None
        ready()
        loop = loops.default
        LOG.info("tuning every %d ms (aqm=%s, jitter budget %d ms%s)", loop.period_ns // 1_000_000,
                 loop.params.queue.aqm.name.lower(), loop.budget_ns // 1_000_000,
                 "".join(f"; link {lk}: aqm={lp.params.queue.aqm.name.lower()}" for lk, lp in loops.links.items()))
        end = None if duration_s is None else time.monotonic() + duration_s
        periods = 0
        while not stop.is_set() and (end is None or time.monotonic() < end):
            if sock is not None:
                drain_records(sock, loops)
            for link, act in loops.tick(time.time_ns()):
                await _apply(switch, link, act, shaper)
            if loop.rows > periods:
                periods = loop.rows
                if counters_every and periods % counters_every == 0:
                    await _log_counters(switch)
            try:
                await asyncio.wait_for(stop.wait(), 0.01)
            except asyncio.TimeoutError:
                pass
        LOG.info("stopping: leaving the switch with the configured parameters (aqm=%s, rate %g bit/s)",
                 loop.defined_state().queue.aqm.name.lower(), loop.rate_bps)
        try:
            await switch.reconfigure(loop.defined_state())
            for link, lp in loops.links.items():
                await switch.configure_link(link, lp.defined_state())
        except Exception as e:  # noqa: BLE001 - the switch may already be gone
            LOG.warning("could not restore the configured parameters: %r", e)
    finally:
        if sock is not None:
            sock.close()
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - shutting down
            pass
    return 0


async def _apply(sw, link: int | None, act: Action, shaper: Callable[[float], None] | None) -> None:
    """Write a loop's decision: the defaults' (link None; a rate change also retunes the drain shaper) or one
    link's own entries."""
    try:
        if link is not None:
            await sw.set_iwa_knobs(act.params, link=link)
        elif act.rate_changed:
            # the switch first, then the drain: the P4Runtime writes take tens of ms, and a drain already at a
            # lower rate meanwhile would queue behind the model, an excess a flow at the new rate never drains
            # (a radio's slot on BMv2: 40 ms for the whole slot); the other way round the drain is ahead for
            # the instant the FIFO's write takes
            try:
                await sw.reconfigure(act.params)
            finally:
                if shaper is not None:
                    shaper(act.rate_bps)
        else:
            await sw.set_iwa_knobs(act.params)
    except Exception as e:  # noqa: BLE001 - the switch's methods took it as desired state before writing
        LOG.warning("write failed (%r): kept as desired state, re-applied when the switch is back", e)


async def _log_counters(sw) -> None:
    try:
        c = await sw.read_counters()
    except Exception as e:  # noqa: BLE001
        LOG.warning("counter read failed (switch down?): %r", e)
        return
    drops = {TrafficClass(i // 4).name: v[0] for i, v in c.items() if i % 4 == Decision.DROP and v[0]}
    passed = sum(v[0] for i, v in c.items() if i % 4 == Decision.PASS)
    LOG.info("counters: passed %d, drops by class %s", passed, drops or "{}")


def open_log(path: Path | None) -> IO[str] | None:
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    return open(path, "w", newline="")


def link_log_path(path: Path | None, link: int | None) -> Path | None:
    """Where a loop writes its rows: the defaults' (link None) to ``path``, link N's beside it, tuning.csv ->
    tuning-link3.csv (the same columns); no path, no log."""
    return path if path is None or link is None else path.with_name(f"{path.stem}-link{link}{path.suffix}")
