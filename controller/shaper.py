"""The drain shaper: the Linux ``tbf`` that makes the switch's egress port a link of the modelled rate.

The switch only *predicts* the wait (its queue model); the tbf is where the
frames really wait, so the two must always run at the same rate and burst.
One place builds the command, used when the lab sets the link up
(``accessnet.topology``) and when the controller changes the rate mid-run.
"""

from __future__ import annotations

import math
import subprocess

BURST_BYTES = 1514  # one full-size frame: the queue model's bucket (link.bucket_bytes)
LIMIT_BYTES = 8_000_000  # far above any modelled buffer: the switch's AQM decides, never the tbf
# The tbf releases a waiting frame from a timer, which fires some microseconds late. With a bucket of
# exactly one frame the tokens earned in that lateness are clipped and lost: measured here, 3.5 us per
# frame, so a busy period of 1.3 s at 2 Mbit/s drifted 0.74 ms behind the modelled queue. A bucket
# SLACK_NS of link time larger keeps them (a frame is then at most SLACK_NS early after an idle period).
SLACK_NS = 200_000


def burst_bytes(rate_bps: float) -> int:
    return BURST_BYTES + math.ceil(rate_bps * SLACK_NS / 8e9)


def tbf_args(dev: str, rate_bps: float, verb: str = "replace") -> list[str]:
    return ["tc", "qdisc", verb, "dev", dev, "root", "handle", "1:", "tbf", "rate", f"{int(rate_bps)}bit",
            "burst", str(burst_bytes(rate_bps)), "limit", str(LIMIT_BYTES)]


def set_rate(dev: str, rate_bps: float) -> None:
    """Change the rate of the running shaper (the queue it holds is kept)."""
    r = subprocess.run(tbf_args(dev, rate_bps, "change"), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"tc could not change the drain shaper on {dev}: {r.stderr.strip()}")
