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
  1 and 10 MSS. Expected parallel starts is the largest number of SYN-ACKs
  seen in one period, decaying by half each second without starts.
* feedback: a period in which the audio's 99th percentile sojourn exceeded
  the target halves the allowance (down to 1 MSS); a second without such a
  period lets it grow back by one MSS per period towards the formula's value.

A link-rate change enters through ``Observation.rate_bps`` and is absorbed in
the same period: target is a time and allowance is recomputed from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MSS = 1460
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
    allowance_bytes: int = MSS
    expected_starts: float = 1.0
    last_violation_ns: int = -10 * NS
    last_start_ns: int = 0


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
    return int(min(10 * MSS, max(MSS, target_bytes / max(1.0, starts))))


def tune(s: TunerState, o: Observation, period_ns: int = 100_000_000) -> Decision:
    reasons = []
    # expected number of flows starting together
    starts = s.expected_starts
    if o.new_flows > starts:
        starts = float(o.new_flows)
        reasons.append(f"{o.new_flows} flows started")
    elif o.t_ns - s.last_start_ns >= NS and starts > 1.0:
        starts = max(1.0, starts / 2)
    last_start = o.t_ns if o.new_flows else s.last_start_ns
    if o.t_ns - s.last_start_ns >= NS and o.new_flows == 0:
        last_start = o.t_ns  # restart the decay clock

    target = target_for(o.rate_bps, o.jitter_budget_ns)
    if target != s.target_ns:
        reasons.append(f"target {s.target_ns / 1e6:.1f} -> {target / 1e6:.1f} ms")
    ceiling = allowance_for(o.rate_bps, target, starts)

    allowance = min(s.allowance_bytes, ceiling)
    last_violation = s.last_violation_ns
    if o.audio_p99_sojourn_ns is not None and o.audio_p99_sojourn_ns > target:
        allowance = max(MSS, allowance // 2)
        last_violation = o.t_ns
        reasons.append(f"audio p99 sojourn {o.audio_p99_sojourn_ns / 1e6:.1f} ms > target: allowance halved")
    elif o.t_ns - last_violation >= NS and allowance < ceiling:
        allowance = min(ceiling, allowance + MSS)
        reasons.append("no violation for 1 s: allowance +1 MSS")
    new = replace(s, target_ns=target, allowance_bytes=allowance, expected_starts=starts,
                  last_violation_ns=last_violation, last_start_ns=last_start)
    return Decision(new, "; ".join(reasons) or "steady")
