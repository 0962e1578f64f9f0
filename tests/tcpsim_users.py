"""Web users over kept-alive connections in ``tcpsim``, as the lab's ``users5-keepalive``: the workload behind
docs/iwa-results.md's "The cut" (tcpsim's numbers there), runnable by hand (45 s a draw, too long for the suite).

    python tests/tcpsim_users.py [--draws 4] [--hz 250] [--halving] [--aqm iwa]

Per draw: the audio's share at loss period level >= 2 (40 ms), its worst sojourn, all responses' completion
times summed, RTOs, drops and zero-window probes. ``--halving`` puts back IWA 2's cut (above target an ACK
replaced what it acknowledged less at most half of it) for the comparison.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).parent), str(Path(__file__).parent.parent)]

import numpy as np  # noqa: E402
from tcpsim import Flow, Sim  # noqa: E402
from test_iwa import BUDGET_NS, MS, U32, params  # noqa: E402

from experiments.metrics import loss_levels  # noqa: E402


def users(seed: int, n: int = 5, conns: int = 6, dur_s: int = 60, aqm: str = "iwa", hz: int | None = None) -> Sim:
    """``n`` users with ``conns`` connections each; a page is one object per connection (the page U(100 kB, 1.5
    MB) split unevenly), the next page about two of its download times at the link rate plus Exp(10 s) later;
    Linux's delayed ACKs, half-size segments and split windows; ``hz``: Linux's timer wheel (``tcpsim``)."""
    rng = random.Random(seed)
    flows = []
    t0 = 1000 * MS
    for u in range(n):
        t, pages = t0 + rng.uniform(0, 3000) * MS, []
        while t < t0 + dur_s * 1000 * MS:
            total = rng.uniform(100e3, 1.5e6)
            pages.append((int(t), [max(1000, int(total / conns * rng.uniform(0.3, 1.7))) for _ in range(conns)]))
            t += (total * 8 / 2e6 * 2.0 + rng.expovariate(1 / 10.0)) * 1000 * MS
        for c in range(conns):
            flows.append(Flow(40000 + u * 10 + c, start=pages[0][0] + c * MS // 5, size=pages[0][1][c],
                              isn=1_000_000 * (u * 10 + c + 1), delack=True, half_wnd=True, split_window=True,
                              more=[(at, sizes[c]) for at, sizes in pages[1:]], pages_at=True))
    end = t0 + (dur_s + 5) * 1000 * MS
    return Sim(params(aqm), flows, audio=(t0, end), hz=hz).run(end)


def halving(opening):
    """``StartShaper._opening`` with IWA 2's cut, for the comparison: above target at most half of what an ACK
    acknowledged is held back (``opening`` is the current method; set the result in its place)."""
    from refmodel.params import ns_to_bytes

    def cut(self, p, pkt, now, t, lk, state, edge, end, span, acked, room, deficit, *rest):
        o = opening(self, p, pkt, now, t, lk, state, edge, end, span, acked, room, deficit, *rest)
        return o._replace(grant=acked - min(acked >> 1, ns_to_bytes(p, min(deficit, U32)))) if o.cutting else o
    return cut


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--hz", type=int, default=None)
    ap.add_argument("--aqm", default="iwa")
    ap.add_argument("--halving", action="store_true")
    a = ap.parse_args(argv)
    if a.halving:
        import refmodel.shaper as shaper
        shaper.StartShaper._opening = halving(shaper.StartShaper._opening)
    for seed in range(a.draws):
        s = users(seed, aqm=a.aqm, hz=a.hz)
        lost = np.array([so > BUDGET_NS for _, so in s.audio])
        level2 = float(np.mean(loss_levels(lost) >= 2))
        done = sum(sum(f.done_at) for f in s.flows.values()) / 1e9
        print(f"draw {seed}: level>=2 {100 * level2:.2f} %  worst {max(so for _, so in s.audio) / MS:.1f} ms  "
              f"responses {done:.1f} s  RTOs {sum(f.rtos for f in s.flows.values())}  drops {len(s.drops)}  "
              f"probes {sum(f.probes for f in s.flows.values())}", flush=True)


if __name__ == "__main__":
    main()
