"""What-if runs of PAM'13's web workloads in the tests' TCP simulator (``tests/tcpsim.py``), for docs/seeds.md.

``python tools/pam13_whatif.py RATES RWNDS`` (comma-separated bit/s and bytes), e.g.
``python tools/pam13_whatif.py 625000,2500000 6291456,32768``: per link rate, client receive window, IW
(3, 10) and N (1, 2, 6) parallel flows of 372/N kB, a FIFO of 256 packets, 11 ms from the server to the switch
and 6 ms on the access link (profile ``pam13``), Linux-like delayed ACKs, the audio every 20 ms. Prints the
transfer's duration (first SYN to the last flow's last byte), the share of audio packets queued more than 40 ms
while it ran (the simulator's stand-in for the loss at a 40 ms jitter buffer), the largest IPDV and the
largest queueing delay. A simulator, not the lab: it reproduced the lab's BMv2 run of ``pam13`` (docs/seeds.md).
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT)]

import numpy as np  # noqa: E402
from tcpsim import Flow, Sim  # noqa: E402

from refmodel.params import pipeline_params  # noqa: E402

MS = 1_000_000
START = 2000 * MS  # the flows' first SYN; the audio runs from 0 to 14 s
TOTAL = 372_000
BUFFER = 256


def run(rate: float, iw: int, n: int, rwnd: int) -> tuple[float, float, float, float]:
    """(duration s, share queued > 40 ms, IPDV max s, queueing max s) of one web workload."""
    flows = [Flow(41000 + i, START + i * 200_000, TOTAL // n, iw=iw, rwnd=rwnd, delack=True) for i in range(n)]
    s = Sim(pipeline_params(rate, "fifo", limit_pkts=BUFFER), flows, audio=(0, 14000 * MS),
            d_client=6 * MS).run(16000 * MS)
    done = [f.done for f in flows]
    end = START + max(done) if all(d is not None for d in done) else 14000 * MS
    t = np.array([a for a, _ in s.audio])
    soj = np.array([b for _, b in s.audio])
    during = (t >= START) & (t <= end)
    return (end - START) / 1e9, float((soj[during] > 40 * MS).mean()), float(np.diff(soj).max()) / 1e9, \
        float(soj.max()) / 1e9


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    rates = [float(x) for x in argv[0].split(",")]
    rwnds = [int(x) for x in argv[1].split(",")]
    for rate, rwnd in itertools.product(rates, rwnds):
        for iw, n in itertools.product((3, 10), (1, 2, 6)):
            dur, late, ipdv, qmax = run(rate, iw, n, rwnd)
            print(f"{rate / 1e6:.3f} Mbit/s, window {rwnd // 1024} kB, IW{iw} N={n}: {dur:.2f} s, "
                  f"{late * 100:.1f} % queued > 40 ms, IPDV max {ipdv:.3f} s, queue max {qmax:.3f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
