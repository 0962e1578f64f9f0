"""The closed-loop policy for IWA 2: a pure function of what one period showed.

Every period (100 ms by default) the controller summarises the switch's
telemetry into an ``Observation`` and calls ``tune(state, obs)``, which
returns the knobs to write and a new state. No I/O here, so the policy is
unit-tested on synthetic statistics.

IWA 2 needs almost no tuning: the data plane sizes every window it grants
from the queue it measures, and its other knobs follow from the link
(``refmodel.params.iwa_params``). What is left, and where each number comes
from (``frame`` is the drain time of one full-size frame at the link rate,
with the data plane's rounding; ``budget`` is the interactive flows' jitter
budget, e.g. a 40 ms jitter buffer):

* ``target_ns``, the queue room for starting flows: ``target_for`` =
  ``budget - max(2 frames, 5 ms)``, never below one frame.

  - Two frames: the queue the target does not size. Every window opens by
    at least one MSS (IWA never advertises less), so a starting flow can
    put one frame above the target when there is no room. The room is
    computed from the queue an ACK sees, one RTT before the data arrives,
    so another frame (e.g. an established flow's) can arrive in between.
    Several flows at the floor at once exceed this: N flows hold at least
    N frames (``docs/iwa.md``, "What it costs").
  - 5 ms: RFC 8289's CoDel target, as the least margin at any rate. Flows
    no window holds (no SYN seen, collisions) and datagrams can add to the
    queue between an ACK and its data; at high rates two frames are far
    less than that.
  - The margin is the larger of the two, not their sum: frames dominate
    below about 4.8 Mbit/s (2 x 1514 B = 5 ms), 5 ms above.
  - One frame floor: the smallest queue a single FIFO can promise behind a
    full-size frame. Below it no starting flow's first segment would fit
    (at EDGE, 160 kbit/s, one 1514 B frame takes 76 ms, over a 40 ms budget:
    there the target is that frame).

* on a link whose rate changes under the queue (a radio redraws its rate every
  slot), ``target_ns`` holds the budget at the lowest rate the link ran at in
  the last ``RATE_MEMORY_S`` (``Observation.rate_low_bps``): the queue the
  target allows, in bytes, is what that rate drains within the budget, and the
  target is those bytes' drain time at the rate now (``target_at``). A queue
  sized for the rate now would take four times as long if the rate dropped
  fourfold within its life, and the switch's model of the queue cannot see a
  drop before the controller tells it (one period later): the model's queue
  was then up to 96 ms shorter than the real one (BMv2, web6 on
  ``pam13radio``). On a fixed-rate link the lowest rate is the rate, and
  nothing changes.

* no feedback from the audio's measured sojourn. An earlier version cut the
  target by the audio's excess over ``budget - frame``: in web6 IW10 runs on
  HSPA it cut the target to one frame after violations the target does not
  cause (a flow leaving its start phase, a host stall), and the starting
  flows' windows then grew by one frame per RTT: 4.9 s bursts instead of
  2.x s. The data plane sizes every grant from the queue it measures; what
  it cannot see (other traffic arriving between a grant and its data) is the
  margin's job. The audio's sojourn is still logged every period.

* ``codel_target_ns``, the target of CoDel, which under IWA holds the queue
  of the flows no window holds: ``target`` itself. Shaped flows' windows
  keep the queue under the target, so CoDel drops from them only if they
  overshoot it for a whole interval; a lower target (RFC 8289's 5 ms, as
  before) dropped from shaped bulk flows that were within the budget: 77 %
  of FIFO's bulk goodput in ``tests/tcpsim.py``, 100 % with ``target``.

* The rate conversions (``payload_ns_q16``, ``bytes_per_ns_q32``) and the
  queue's own numbers are plain functions of the link rate. The tuner
  re-derives them (``refmodel.params``) when the rate changes (the
  scenario's ``rate_changes``), and ``tune`` recomputes ``target_for`` and
  ``codel_target_ns`` in the same period. ``mss_bytes``, ``hold_ns`` and
  ``age_ns`` do not depend on anything observed and are never tuned.

Nothing here depends on a scenario's number of flows, their sizes or the
initial window.
"""

from __future__ import annotations

from dataclasses import dataclass

from refmodel.params import MTU_BYTES, byte_time_q16, drain_ns, iwa_codel_target_ns, iwa_target_ns

NS = 1_000_000_000
FRAME = MTU_BYTES  # a full-size Ethernet frame: 1500 B MTU + 14 B header (no FCS)


RATE_MEMORY_S = 10.0  # how far back the lowest rate reaches: 50 slots of a radio redrawing every 0.2 s


@dataclass(frozen=True)
class Observation:
    t_ns: int
    rate_bps: float  # the link rate in force in this period
    jitter_budget_ns: int  # the interactive flows' jitter budget, e.g. a 40 ms jitter buffer
    rate_low_bps: float | None = None  # the lowest rate in the last RATE_MEMORY_S (None: rate_bps)


@dataclass(frozen=True)
class TunerState:
    target_ns: int  # IWA's target in force
    codel_target_ns: int  # CoDel's target (established flows) in force


@dataclass(frozen=True)
class Decision:
    state: TunerState
    reason: str


def frame_ns(rate_bps: float, frame_bytes: int = FRAME) -> int:
    """Drain time of one full-size frame at ``rate_bps``, rounded as the data plane rounds it."""
    return drain_ns(frame_bytes, byte_time_q16(rate_bps))


# The data plane's defaults derive from the same two functions (refmodel.params), so the loop starts from them.
target_for = iwa_target_ns  # the jitter budget less max(2 frames, 5 ms), never below one frame


def codel_target_for(rate_bps: float, jitter_budget_ns: int, frame_bytes: int = FRAME) -> int:
    """CoDel's target under IWA for the budget (``refmodel.params.iwa_codel_target_ns`` of IWA's target: the
    switch's install takes it from there too)."""
    return iwa_codel_target_ns(target_for(rate_bps, jitter_budget_ns, frame_bytes))


def target_at(rate_bps: float, rate_low_bps: float, jitter_budget_ns: int, frame_bytes: int = FRAME) -> int:
    """The target that holds the budget should the rate drop to ``rate_low_bps``: the bytes the target allows
    at that rate (``target_for``), as drain time at ``rate_bps``. At most the target for ``rate_bps`` itself."""
    low = min(rate_low_bps, rate_bps)
    return min(target_for(rate_bps, jitter_budget_ns, frame_bytes),
               round(target_for(low, jitter_budget_ns, frame_bytes) * low / rate_bps))


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms"


def tune(s: TunerState, o: Observation, frame_bytes: int = FRAME) -> Decision:
    reasons = []
    low = o.rate_bps if o.rate_low_bps is None else o.rate_low_bps
    target = target_at(o.rate_bps, low, o.jitter_budget_ns, frame_bytes)
    if target != s.target_ns:
        reasons.append(f"target {_ms(s.target_ns)} -> {_ms(target)}")
    codel_target = iwa_codel_target_ns(target)
    if codel_target != s.codel_target_ns:
        reasons.append(f"codel target {_ms(s.codel_target_ns)} -> {_ms(codel_target)}")
    return Decision(TunerState(target_ns=target, codel_target_ns=codel_target), "; ".join(reasons) or "steady")
