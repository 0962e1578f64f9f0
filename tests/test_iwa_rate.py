"""IWA on a link whose rate changes under it (a radio, issue 32 item 5): a flow's share follows the link.

A shaped flow's window stops growing at its share of the path and the budget, ``bytes(rtt + target) >>
ceil(log2 n)``. The bytes were once fixed at the flow's first ACK, at the rate of that moment: on
``pam13radio`` a page that started in a 1.1 Mbit/s slot kept its six flows at one MSS each (a share of
about 1.1 kB) through the 3-4 Mbit/s slots that followed, and the link idled (BMv2, 2026-11-27: windows
of 1.4 kB for up to 0.9 s at 3-4 Mbit/s). Now the flow keeps its RTT and each ACK converts at the link's
rate and target of the moment, so after a rate rise the flows fill the link as flows that started at the
new rate do.

Closed loops in ``tcpsim.py`` (the lab's HSPA delays), the rate and target written as the controller writes
them on a radio (``controller.policy.target_at``: the budget held at the lowest rate seen).
"""

from __future__ import annotations

import pytest
from tcpsim import Flow, Sim
from test_iwa import MS

from controller.policy import target_at
from refmodel.params import pipeline_params

LOW, HIGH = 0.5e6, 2e6  # a fourfold rise, as the lab's ``ratesteps``
BUDGET_NS = 40 * MS
STEP_AT = 3000 * MS
WINDOW = (4500 * MS, 7500 * MS)  # a while after the rise: the flows' windows have had time to follow
FLOWS = 6


def radio_params(rate_bps: float):
    """What the controller writes for the rate now, the lowest rate seen being LOW (``tune``)."""
    target = target_at(rate_bps, LOW, BUDGET_NS)
    return pipeline_params(rate_bps, "iwa", limit_pkts=256, iwa=dict(target_s=target / 1e9))


def delivered_bps(s: Sim, window: tuple[int, int]) -> float:
    """Data the switch passed downstream in ``window`` (every segment counted by its size on the wire)."""
    n = sum(1 for t, _, _, _ in s.data if window[0] <= t < window[1])
    return n * 1514 * 8 / ((window[1] - window[0]) / 1e9)


def six_long_flows(start_rate: float, step: bool) -> Sim:
    flows = [Flow(40000 + i, start=i * MS, size=3_000_000) for i in range(FLOWS)]
    s = Sim(radio_params(start_rate), flows, audio=(0, WINDOW[1]))
    if step:
        s.at(STEP_AT, lambda: s.p.configure(radio_params(HIGH)))
    return s.run(WINDOW[1])


@pytest.fixture(scope="module")
def risen():
    return six_long_flows(LOW, step=True)


@pytest.fixture(scope="module")
def started_high():
    return six_long_flows(HIGH, step=False)


def test_after_a_rate_rise_flows_fill_the_link_as_flows_that_started_at_the_new_rate(risen, started_high):
    """With the share fixed at the first ACK's rate, the risen flows carried 0.90 Mbit/s here against 1.80 for
    flows that started at 2 Mbit/s."""
    got, ref = delivered_bps(risen, WINDOW), delivered_bps(started_high, WINDOW)
    assert ref > 0.75 * HIGH and got >= 0.9 * ref, (got, ref)


def test_the_audio_budget_holds_through_the_rise(risen):
    """The rise gives the flows more room, not more queue than the budget: every audio packet after it waited
    less than the jitter budget (the switch's sojourn of each)."""
    after = [soj for t, soj in risen.audio if t > STEP_AT]
    assert len(after) > 200 and max(after) < BUDGET_NS, max(after)
