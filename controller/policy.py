"""The closed-loop tuning policy for IWA: a pure function of what one period showed.

Every period (100 ms by default) the controller summarises the data plane's
telemetry into an ``Observation`` and calls ``tune(state, obs)``, which
returns the knobs to write and a new state. No I/O here, so the policy is
unit-tested on synthetic statistics.

* ``target``: the interactive flows' jitter budget minus a margin (two
  full-size frames at the link rate, at least 5 ms), never below one
  frame's drain time (at EDGE one 1514 B frame takes 76 ms: no single-queue
  AQM can promise less).
* ``allowance``: what each of the flows that start together may put in the
  queue within the target: target bytes / expected parallel starts, between
  ``MIN_ALLOWANCE`` (2 MSS) and 10 MSS. Expected parallel starts is the largest number of SYN-ACKs
  seen in one period, decaying by half each second without starts, never below
  ``PRIOR_STARTS``.
* feedback: a period in which the audio's 99th percentile sojourn exceeded
  the target halves the allowance (down to ``MIN_ALLOWANCE``); a second without such a
  period lets it grow back by one MSS per period towards the formula's value.
  Changes are held while a burst's start window is open (``PRIOR_STARTS``).

* ``window``: how long after its SYN-ACK a flow counts as starting. It must
  cover the time the parallel starts need to deliver their ``start_bytes`` at
  the link rate (with 50 % slack), or the end of a big burst on a slow link
  escapes IWA as "established" traffic: at least 2 s, at most 10 s. It grows
  when flows start and returns to its one-flow value one window after the
  last start.

A link-rate change enters through ``Observation.rate_bps`` and is absorbed in
the same period: target is a time and allowance and window are recomputed
from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MSS = 1460
# Each starting flow gets at least two segments through: its receiver acknowledges them at once (delayed
# ACKs: one per two segments) and the rest of its window is recovered by RACK/TLP. Measured on web6 IW10
# (BMv2, 3 reps): a 1 MSS floor gave 18 RTOs and 4.1 s bursts, the static 2 MSS 0 RTOs and 2.2 s.
MIN_ALLOWANCE = 2 * MSS
# Browsers open up to 6 connections per server: the allowance is sized for at least that many parallel
# starts *before* they come. It cannot be sized after: each flow's SYN-ACK reserves the allowance in force
# when it passes, and the data plane keeps that reserve for the start window. So the allowance never
# changes while a burst's window is open (changes wait until it closes): lowering it mid-burst left the
# reserve of the higher value standing, every starting segment above target, 18 RTOs in 3 web6 runs.
PRIOR_STARTS = 6.0
FRAME = 1514
NS = 1_000_000_000


@dataclass(frozen=True)
class Observation:
    t_ns: int
    rate_bps: float
    jitter_budget_ns: int  # e.g. a 40 ms jitter buffer
    new_flows: int  # SYN-ACKs seen in the period
    audio_p99_sojourn_ns: int | None  # None: no interactive packet in the period
    surplus_drops: int = 0


@dataclass(frozen=True)
class TunerState:
    target_ns: int = 30_000_000
    allowance_bytes: int = MIN_ALLOWANCE
    expected_starts: float = 6.0
    last_violation_ns: int = -10 * NS
    last_start_ns: int = 0
    window_ns: int = 2 * NS
    burst_ns: int = -100 * NS  # when flows last started (the window's clock)
    planned_bytes: int = 0  # the allowance to write once the current burst's window is over (0: none)


@dataclass(frozen=True)
class Decision:
    state: TunerState
    reason: str


def frame_ns(rate_bps: float) -> int:
    return int(FRAME * 8 * NS / rate_bps)


def target_for(rate_bps: float, budget_ns: int) -> int:
    margin = max(2 * frame_ns(rate_bps), 5_000_000)
    return max(frame_ns(rate_bps), budget_ns - margin)


def allowance_for(rate_bps: float, target_ns: int, starts: float) -> int:
    target_bytes = target_ns * rate_bps / 8 / NS
    return int(min(10 * MSS, max(MIN_ALLOWANCE, target_bytes / max(1.0, starts))))


def window_for(rate_bps: float, starts: float, start_bytes: int) -> int:
    need = 1.5 * max(1.0, starts) * start_bytes * 8 * NS / rate_bps
    return int(min(10 * NS, max(2 * NS, need)))


def tune(s: TunerState, o: Observation, period_ns: int = 100_000_000, start_bytes: int = 65536) -> Decision:
    reasons = []
    # expected number of flows starting together
    starts = s.expected_starts
    if o.new_flows > starts:
        starts = float(o.new_flows)
        reasons.append(f"{o.new_flows} flows started")
    elif o.new_flows:
        reasons.append(f"{o.new_flows} flows started")
    elif o.t_ns - s.last_start_ns >= NS and starts > PRIOR_STARTS:
        starts = max(PRIOR_STARTS, starts / 2)
    last_start = o.t_ns if o.new_flows else s.last_start_ns
    if o.t_ns - s.last_start_ns >= NS and o.new_flows == 0:
        last_start = o.t_ns  # restart the decay clock

    target = target_for(o.rate_bps, o.jitter_budget_ns)
    if target != s.target_ns:
        reasons.append(f"target {s.target_ns / 1e6:.1f} -> {target / 1e6:.1f} ms")
    ceiling = allowance_for(o.rate_bps, target, starts)

    burst = o.t_ns if o.new_flows else s.burst_ns
    frozen = o.t_ns - burst < s.window_ns  # a burst's reserve is live: its flows announced the current value
    planned = min(s.planned_bytes or s.allowance_bytes, ceiling)
    last_violation = s.last_violation_ns
    if o.audio_p99_sojourn_ns is not None and o.audio_p99_sojourn_ns > target:
        last_violation = o.t_ns
        what = "allowance halved" if planned > MIN_ALLOWANCE else "allowance at its floor"
        planned = max(MIN_ALLOWANCE, planned // 2)
        reasons.append(f"audio p99 sojourn {o.audio_p99_sojourn_ns / 1e6:.1f} ms > target: {what}")
    elif o.t_ns - last_violation >= NS and planned < ceiling:
        planned = min(ceiling, planned + MSS)
        reasons.append("no violation for 1 s: allowance +1 MSS")
    if frozen and planned != s.allowance_bytes:
        reasons.append("(held until the burst's start window ends)")
    allowance = s.allowance_bytes if frozen else planned
    if o.new_flows:
        window = max(s.window_ns, window_for(o.rate_bps, o.new_flows, start_bytes))
    elif o.t_ns - burst >= s.window_ns:
        window = window_for(o.rate_bps, 1, start_bytes)
    else:
        window = max(s.window_ns, window_for(o.rate_bps, 1, start_bytes))
    if window != s.window_ns:
        reasons.append(f"window {s.window_ns / 1e9:.2f} -> {window / 1e9:.2f} s")
    new = replace(s, target_ns=target, allowance_bytes=allowance, expected_starts=starts,
                  last_violation_ns=last_violation, last_start_ns=last_start, window_ns=window, burst_ns=burst,
                  planned_bytes=planned)
    return Decision(new, "; ".join(reasons) or "steady")
