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
    N frames (``docs/iwa.md``, "N flows x one MSS").
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
  slot; ``Observation.rate_varies``: a change in the last ``RATE_MEMORY_S``),
  ``target_ns`` is still ``target_for`` the rate now, and ``budget_cap_ns``
  (``cap_for``), the audio's budget, arms the data plane's budget cap
  (``refmodel/iwa.py``): a full-size frame of new data that would leave more
  queue than the cap behind it is dropped. What a rate drop leaves in flight
  was granted at the old rate and no window can recall it; the cap drops it
  instead of queueing it ahead of the audio. On a fixed-rate link the cap is
  0 (off) and nothing changes.

  - The cap never lies nearer above the target than the margin the target
    keeps below the budget (two frames, or 5 ms), so it is the budget itself
    wherever the target is above its one-frame floor, and three frames where
    the budget holds fewer (below about 0.9 Mbit/s at 40 ms). A cap at the
    budget there left less than one frame above the windows' own target (at
    0.5 Mbit/s: target 24 ms, one frame; budget 40 ms), so after a drop it
    took nearly every frame in flight beyond the target: flows lost whole
    windows and waited for timeouts (``tests/tcpsim.py``, web6 on HSPA's
    fourfold rate steps, 6 seeds: 14.7 timeouts a page, the page 7.65 s
    against 3.70 s without a cap; with the margin 2.3 and 4.08 s; the audio
    at level >= 2 0.0 % with either cap, 0.6 % without; BMv2 in docs/iwa-results.md).
    The audio cannot be held to a budget of under two frames anyway: one
    frame in service and the target's one frame queued are more than it.

  An earlier policy held the target at the budget of the lowest rate
  of the last 10 s instead (a target of one frame on ``pam13radio``): the
  audio kept its budget, but the windows could hardly grow in the fast slots
  and the link idled; web6's page took 1.3-1.6 x FIFO's there (BMv2,
  ``docs/iwa-results.md``).

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

from refmodel.params import (MTU_BYTES, byte_time_q16, drain_ns, iwa_budget_cap_ns, iwa_codel_target_ns,
                             iwa_target_ns)

NS = 1_000_000_000
FRAME = MTU_BYTES  # a full-size Ethernet frame: 1500 B MTU + 14 B header (no FCS)


RATE_MEMORY_S = 10.0  # a link whose rate changed this recently is one whose rate changes: 50 radio slots of 0.2 s


@dataclass(frozen=True)
class Observation:
    t_ns: int
    rate_bps: float  # the link rate in force in this period
    jitter_budget_ns: int  # the interactive flows' jitter budget, e.g. a 40 ms jitter buffer
    rate_varies: bool = False  # the link's rate changed in the last RATE_MEMORY_S


@dataclass(frozen=True)
class TunerState:
    target_ns: int  # IWA's target in force
    codel_target_ns: int  # CoDel's target (established flows) in force
    budget_cap_ns: int = 0  # the data plane's budget cap in force (0: off)


@dataclass(frozen=True)
class Decision:
    state: TunerState
    reason: str


def frame_ns(rate_bps: float, frame_bytes: int = FRAME) -> int:
    """Drain time of one full-size frame at ``rate_bps``, rounded as the data plane rounds it."""
    return drain_ns(frame_bytes, byte_time_q16(rate_bps))


# The data plane's defaults derive from the same two functions (refmodel.params), so the loop starts from them.
target_for = iwa_target_ns  # the jitter budget less max(2 frames, 5 ms), never below one frame
cap_for = iwa_budget_cap_ns  # the budget, never nearer above the target than the target's margin below it


def codel_target_for(rate_bps: float, jitter_budget_ns: int, frame_bytes: int = FRAME) -> int:
    """CoDel's target under IWA for the budget (``refmodel.params.iwa_codel_target_ns`` of IWA's target: the
    switch's install takes it from there too)."""
    return iwa_codel_target_ns(target_for(rate_bps, jitter_budget_ns, frame_bytes))


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms"


def tune(s: TunerState, o: Observation, frame_bytes: int = FRAME) -> Decision:
    reasons = []
    target = target_for(o.rate_bps, o.jitter_budget_ns, frame_bytes)
    if target != s.target_ns:
        reasons.append(f"target {_ms(s.target_ns)} -> {_ms(target)}")
    codel_target = iwa_codel_target_ns(target)
    if codel_target != s.codel_target_ns:
        reasons.append(f"codel target {_ms(s.codel_target_ns)} -> {_ms(codel_target)}")
    cap = cap_for(o.rate_bps, o.jitter_budget_ns, frame_bytes) if o.rate_varies else 0
    if cap != s.budget_cap_ns:
        reasons.append(f"budget cap {_ms(s.budget_cap_ns) if s.budget_cap_ns else 'off'} -> {_ms(cap) if cap else 'off'}")
    return Decision(TunerState(target_ns=target, codel_target_ns=codel_target, budget_cap_ns=cap),
                    "; ".join(reasons) or "steady")
