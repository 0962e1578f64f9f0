"""The on/off offered load the Tofino twins are judged under (tests/test_tofino_*.py, tools/pie_clock.py):
``load_on`` times the link's rate for ``on_ms``, then half of it for ``off_ms``, so a queue stands and then
drains; Poisson arrivals of mostly full frames, with some mid-size and audio-size ones."""

from __future__ import annotations

import random

SIZES = (1514, 1514, 1514, 600, 90)


def next_arrival(rng: random.Random, now: int, rate_bps: float, load_on: float = 1.3, on_ms: int = 2000,
                 off_ms: int = 1500) -> tuple[int, int]:
    """(the next frame's arrival time in ns, its size in bytes) after ``now``; the phase is ``now``'s own."""
    load = load_on if (now // 1_000_000) % (on_ms + off_ms) < on_ms else 0.5
    size = rng.choice(SIZES)
    return now + int(rng.expovariate(load * rate_bps / (8 * size)) * 1e9) + 1, size
