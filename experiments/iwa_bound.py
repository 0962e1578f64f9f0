"""What the audio's jitter budget allows a web burst: a lower bound on its completion time (docs/iwa-results.md,
"What it costs").

What it bounds. One class of AQM and sender, no other:

* a single FIFO on the access link, the audio in the same queue as the web data;
* an AQM that acts by dropping (or marking) packets or by limiting windows (IWA's rewritten receive window),
  and keeps the queue under ``growth_s``;
* the switch forwards every ACK unchanged in time (it may rewrite a window field, but never holds an ACK back
  or spaces ACKs out);
* senders that are ACK-clocked and unpaced: each ACK releases its data at once, back to back.

It is not a bound for a switch that re-times ACKs (delays or spaces them to pace the senders) or for paced
senders (Linux's fq pacing, BBR): their data reaches the link spread over the round trip, not as one train,
so a window can grow by more than the queue holds without the queue exceeding it. Issue 33's fluid estimate
for web6 at HSPA there: about 1.9-2.1 s with the queue within the target, between this bound and the
link-rate limit.

A burst of ``flows`` parallel flows of ``size`` bytes each starts on an idle access link. While the flows'
windows together are below the path's BDP, each round trip's data reaches the bottleneck as one train at the
link rate (the ACK clock keeps the spacing the link gave it), so what a round adds to the window on top of
replacing what was acknowledged waits in the queue until the train has passed: the round's growth is the
queue's peak. An AQM that holds every queue under ``growth_s`` therefore lets the windows grow by at most
``growth_s`` of link time per round trip, and the first round by that much too (one frame per flow at
least: no window is below one segment). Once the windows fill the BDP the link is busy until the last frame.

Fluid model, in full-size frames: round k sends ``w_k`` frames, ``w_1 = max(growth, flows)``, ``w_{k+1} =
w_k + growth``; a round with ``w_k`` below the BDP takes one RTT; from the first round at or above it, or
the round that holds the last frame, the rest goes at the link rate. Completion, from the clients' SYNs:
the handshake and the request (two RTTs), the rounds below the BDP, then the remaining frames. With an
unbounded ``growth_s`` it is the link-rate limit (two RTTs plus every frame at the link rate). It ignores
the request's and ACKs' own serialization and any loss (a loss only adds time).

Which queue: ``bound_at_target_s`` is the bound at IWA's own target (the budget less its margin,
``controller.policy.target_for``), ``bound_at_budget_s`` the bound for an AQM that lets the queue use the
audio's whole budget; both default to the project's jitter budget (``refmodel.params.JITTER_BUDGET_MS``, 40 ms).
web6 (6 x 62 kB, IW10) at HSPA (2 Mbit/s, RTT 162 ms), Linux's 1448 B segments in 1514 B frames: 2.23 s at
IWA's target (27.9 ms), 2.13 s at the 40 ms budget; the link-rate limit is 1.88 s (two round trips, 0.324 s,
plus 389 kB at 2 Mbit/s, 1.556 s).
"""

from __future__ import annotations

from controller.policy import target_for
from refmodel.params import JITTER_BUDGET_MS, budget_ns

FRAME = 1514  # bytes on the wire of a full-size segment (Ethernet + IPv4 + TCP with timestamps + payload)
MSS = 1448  # its payload: Linux's MSS with TCP timestamps on a 1500 B MTU


def budget_bound_s(rate_bps: float, rtt_s: float, flows: int, size: int, growth_s: float,
                   frame: int = FRAME, mss: int = MSS) -> float:
    """Completion time (s) of ``flows`` flows of ``size`` bytes starting together, their windows growing by
    at most ``growth_s`` of link time per round trip: a lower bound for the AQMs and senders of the module
    docstring's class only (single FIFO, drops or windows, ACKs forwarded unchanged in time, ACK-clocked
    unpaced senders), not for ACK re-timing or pacing."""
    if rate_bps <= 0 or rtt_s <= 0 or flows < 1 or size < 1 or growth_s <= 0:
        raise ValueError(f"budget_bound_s: rate {rate_bps}, rtt {rtt_s}, flows {flows}, size {size} and "
                         f"growth {growth_s} must be positive")
    ft = frame * 8 / rate_bps  # link time of one frame
    bdp = rtt_s / ft  # frames in flight that keep the link busy
    growth = growth_s / ft
    left = flows * wire_bytes(size, frame, mss) / frame  # in full frames' link time
    t = 2 * rtt_s  # handshake and request
    w = max(growth, flows)
    while w < bdp and left > w:
        left -= w
        t += rtt_s
        w += growth
    return t + left * ft


def bound_at_target_s(rate_bps: float, rtt_s: float, flows: int, size: int, budget_ms: float = JITTER_BUDGET_MS,
                      frame: int = FRAME, mss: int = MSS) -> float:
    """The bound (``budget_bound_s``) at IWA's own target for the audio's ``budget_ms``: the queue IWA allows,
    the budget less max(2 frames, 5 ms) (``controller.policy.target_for``; 27.9 ms at 2 Mbit/s for 40 ms)."""
    growth_s = target_for(rate_bps, budget_ns(budget_ms / 1e3), frame) / 1e9
    return budget_bound_s(rate_bps, rtt_s, flows, size, growth_s, frame, mss)


def bound_at_budget_s(rate_bps: float, rtt_s: float, flows: int, size: int, budget_ms: float = JITTER_BUDGET_MS,
                      frame: int = FRAME, mss: int = MSS) -> float:
    """The bound (``budget_bound_s``) for an AQM that lets the queue use the audio's whole ``budget_ms``: what
    no AQM of the class (module docstring) that keeps the audio within its budget can beat."""
    return budget_bound_s(rate_bps, rtt_s, flows, size, budget_ms / 1e3, frame, mss)


def link_rate_limit_s(rate_bps: float, rtt_s: float, flows: int, size: int, frame: int = FRAME,
                      mss: int = MSS) -> float:
    """The same burst with the link busy from its first frame: two RTTs plus every frame at the link rate (web6
    at HSPA: 1.88 s). No AQM beats it, whatever it does to ACKs or pacing: the handshake and the request take two
    round trips, and the link goes no faster."""
    return 2 * rtt_s + flows * wire_bytes(size, frame, mss) * 8 / rate_bps


def wire_bytes(size: int, frame: int = FRAME, mss: int = MSS) -> int:
    """Bytes on the wire of one flow's ``size`` bytes of payload in full segments (the last one short)."""
    full, rest = divmod(size, mss)
    return full * frame + (rest + frame - mss if rest else 0)


# Linux sends a window of one MSS as two half-size segments (tcp_bound_to_half_wnd: segments are at most half the
# largest window the peer ever advertised), so a flow at IWA's floor puts two frames of MSS/2 on the wire a round.
FLOOR_WIRE = 2 * (MSS // 2 + FRAME - MSS)


def floor_flows(rate_bps: float, rtt_s: float, target_s: float, floor_wire: int = FLOOR_WIRE) -> float:
    """How many flows at their one-MSS floor the path and the target hold: each has its floor in flight every
    round trip, so ``n`` of them hold ``n * floor_wire`` bytes against the link's ``rate * (rtt + target)``. Beyond
    it the floors alone keep a queue above the target standing, whatever any window-based AQM does, until flows
    finish or pause (a drop's timeout, a zero window's probe): docs/iwa.md, "N flows x one MSS"."""
    if rate_bps <= 0 or rtt_s <= 0 or target_s < 0 or floor_wire <= 0:
        raise ValueError(f"floor_flows: rate {rate_bps}, rtt {rtt_s}, target {target_s} and floor {floor_wire} "
                         f"must be positive")
    return rate_bps / 8 * (rtt_s + target_s) / floor_wire


def floor_queue_s(flows: int, rate_bps: float, rtt_s: float, floor_wire: int = FLOOR_WIRE) -> float:
    """The standing queue (s) that ``flows`` flows at their floor hold: their floors beyond one round trip's
    worth of the link (the ACK clock then runs at the link rate, and each round trip stretches by the queue)."""
    return max(0.0, flows * floor_wire * 8 / rate_bps - rtt_s)
