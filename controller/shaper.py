"""The drain: what makes the switch's egress port a link of the modelled rate.

The switch only *predicts* the wait (its queue model); the drain is where the
frames really wait, so the two must always run at the same rate and burst. Two
drains, one per kind of switch:

* ``DelaylineDrain`` (the P4 switches, BMv2 and the model): the access link's
  delay line (``mininet/accessnet/delayline.c``) releases each frame at the
  model's own release time, ``max(t, tat - bucket)`` with absolute ``tat``, so
  a stall of the host delays frames but never the link's service: the real
  queue cannot fall behind the model for good. Rate changes go to it through a
  FIFO.
* ``Tbf`` (the kernel backend, whose AQM is a qdisc and needs a parent): Linux's
  ``tbf``, whose tokens are clipped at its bucket while its timer is late.

One place builds the commands, used when the lab sets the link up
(``accessnet.topology``) and when the controller changes the rate mid-run.
"""

from __future__ import annotations

import errno
import math
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

BURST_BYTES = 1514  # one full-size frame: the queue model's bucket (link.bucket_bytes)
LIMIT_BYTES = 8_000_000  # far above any modelled buffer: the switch's AQM decides, never the tbf
# The tbf releases a waiting frame from a timer, which fires some microseconds late. With a bucket of
# exactly one frame the tokens earned in that lateness are clipped and lost: measured here, 3.5 us per
# frame, so a busy period of 1.3 s at 2 Mbit/s drifted 0.74 ms behind the modelled queue. A bucket
# SLACK_NS of link time larger keeps them (a frame is then at most SLACK_NS early after an idle period).
SLACK_NS = 200_000
OPEN_WAIT_S = 2.0  # how long a rate change waits for the delay line to open its FIFO (it does as it starts)


class Drain(Protocol):
    def set_rate(self, rate_bps: float) -> None:
        """Change the link's rate mid-run (what is already queued keeps its place)."""


def burst_bytes(rate_bps: float) -> int:
    return BURST_BYTES + math.ceil(rate_bps * SLACK_NS / 8e9)


def tbf_args(dev: str, rate_bps: float, verb: str = "replace") -> list[str]:
    return ["tc", "qdisc", verb, "dev", dev, "root", "handle", "1:", "tbf", "rate", f"{int(rate_bps)}bit",
            "burst", str(burst_bytes(rate_bps)), "limit", str(LIMIT_BYTES)]


def delayline_args(rate_bps: float, control: Path, bucket_bytes: int = BURST_BYTES) -> list[str]:
    """The delay line's options that make its first direction the drain (before its interfaces)."""
    return ["-r", format(rate_bps, ".17g"), "-b", str(bucket_bytes), "-c", str(control)]


@dataclass(frozen=True)
class Tbf:
    dev: str

    def set_rate(self, rate_bps: float) -> None:
        r = subprocess.run(tbf_args(self.dev, rate_bps, "change"), capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"tc could not change the drain shaper on {self.dev}: {r.stderr.strip()}")


@dataclass(frozen=True)
class DelaylineDrain:
    control: Path  # the delay line's control FIFO

    def set_rate(self, rate_bps: float) -> None:
        if not rate_bps > 0:
            raise ValueError(f"drain rate {rate_bps!r}: must be > 0 bit/s")
        deadline = time.monotonic() + OPEN_WAIT_S
        while True:  # non-blocking: with no delay line reading, open fails (ENXIO) rather than hang the controller
            try:
                fd = os.open(self.control, os.O_WRONLY | os.O_NONBLOCK)
                break
            except OSError as e:  # ENXIO: not (yet: it opens the FIFO as it starts) read by the delay line
                if e.errno != errno.ENXIO or time.monotonic() > deadline:
                    raise RuntimeError(f"the drain's delay line does not listen on {self.control}: {e}") from None
                time.sleep(0.01)
        try:
            os.write(fd, f"{format(rate_bps, '.17g')}\n".encode())  # one line < PIPE_BUF: written whole
        finally:
            os.close(fd)


def add_args(ap) -> None:
    """The options that name the drain a rate change goes to (the controller's ``tune``, the model switch)."""
    ap.add_argument("--shaper-dev", help="interface whose tbf drain shaper follows rate changes")
    ap.add_argument("--drain-control", help="the drain's delay line's control FIFO: it follows rate changes")


def from_args(dev: str | None, control: str | Path | None) -> Drain | None:
    """The drain a controller's command line names (``--shaper-dev`` or ``--drain-control``), if any."""
    if dev and control:
        raise ValueError("name one drain: --shaper-dev (a tbf) or --drain-control (the delay line's FIFO)")
    if control:
        return DelaylineDrain(Path(control))
    return Tbf(dev) if dev else None
