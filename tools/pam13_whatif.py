"""What-if runs of PAM'13's web workloads in the tests' TCP simulator (``tests/tcpsim.py``), for docs/seeds.md.

``python tools/pam13_whatif.py RATES RWNDS`` (comma-separated bit/s and bytes), e.g.
``python tools/pam13_whatif.py 625000,2500000 6291456,32768``: per fixed link rate and client receive window;
``python tools/pam13_whatif.py --profile pam13radio [--seeds 20]``: a profile of mininet/accessnet/profiles.py,
its radio's rate drawn per slot from each seed as the lab draws it, and its client window.

Per IW (3, 10) and N (1, 2, 6) parallel flows of 372/N kB, a FIFO of 256 packets, 11 ms from the server to the
switch and the profile's access-link delay (6 ms for fixed rates, as profile ``pam13``), Linux-like delayed
ACKs, the audio every 20 ms. Prints the transfer's duration (first SYN to the last flow's last byte), the share
of audio packets queued more than 40 ms while it ran (the simulator's stand-in for the loss at a 40 ms jitter
buffer), the IPDV's 99th percentile and largest value, and the queueing delay's median and largest value while
the transfer ran. With seeds: medians over seeds, except the largest values, which are over all seeds (Table 1's
Max is over its 50 replications). A simulator, not the lab: it reproduced the lab's BMv2 run of ``pam13``
(docs/seeds.md).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT), str(ROOT / "mininet")]

import numpy as np  # noqa: E402
from tcpsim import Flow, Sim  # noqa: E402

from accessnet.profiles import PROFILES, Profile  # noqa: E402
from refmodel.params import pipeline_params  # noqa: E402

MS = 1_000_000
START = 2000 * MS  # the flows' first SYN; the audio runs from 0 to 14 s
EARLY = 1000 * MS  # Fig. 6: the initial windows' first second (the report's PAM13_FIG6_EARLY_S) against the rest
TOTAL = 372_000
BUFFER = 256


def run(prof: Profile, iw: int, n: int, rwnd: int, seed: int = 0) -> dict:
    """One web workload on ``prof`` (its radio's rates drawn from ``seed``): duration, lateness, IPDV, queue."""
    flows = [Flow(41000 + i, START + i * 200_000, TOTAL // n, iw=iw, rwnd=rwnd, delack=True) for i in range(n)]
    sim = Sim(pipeline_params(prof.rate_bps, "fifo", limit_pkts=BUFFER), flows, audio=(0, 14000 * MS),
              d_client=int(prof.delay_ms * MS))
    for at_s, rate in prof.rate_schedule(seed, 16.0):  # as the controller rewrites the link rate in the lab
        sim.at(int(at_s * 1e9), sim.p.configure, pipeline_params(rate, "fifo", limit_pkts=BUFFER))
    sim.run(16000 * MS)
    done = [f.done for f in flows]
    end = START + max(done) if all(d is not None for d in done) else 14000 * MS
    t = np.array([a for a, _ in sim.audio])
    soj = np.array([b for _, b in sim.audio])
    during = (t >= START) & (t <= end)
    ipdv = np.diff(soj[during]) / 1e9
    early = during & (t < START + EARLY)
    return {"dur": (end - START) / 1e9, "late": float((soj[during] > 40 * MS).mean()),
            "early": share(soj[early] > 40 * MS), "rest": share(soj[during & ~early] > 40 * MS),
            "ipdv99": float(np.percentile(ipdv, 99)), "ipdvmax": float(ipdv.max()),
            "qmed": float(np.median(soj[during])) / 1e9, "qmax": float(soj[during].max()) / 1e9}


def share(flags: np.ndarray) -> float:
    return float(flags.mean()) if len(flags) else float("nan")


def report(label: str, rows: list[dict]) -> None:
    med = {k: float(np.nanmedian([r[k] for r in rows])) for k in rows[0]}
    print(f"{label}: {med['dur']:.2f} s, {med['late'] * 100:.1f} % queued > 40 ms, IPDV p99 {med['ipdv99']:.3f} s "
          f"max {max(r['ipdvmax'] for r in rows):.3f} s, queue median {med['qmed']:.3f} s "
          f"max {max(r['qmax'] for r in rows):.3f} s, queued > 40 ms in the first {EARLY / 1e9:g} s "
          f"{med['early'] * 100:.0f} % / after {med['rest'] * 100:.0f} %", flush=True)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("rates", nargs="?", help="fixed link rates, bit/s, comma-separated")
    ap.add_argument("rwnds", nargs="?", help="client receive windows, bytes, comma-separated")
    ap.add_argument("--profile", choices=sorted(PROFILES), help="a lab profile instead of fixed rates")
    ap.add_argument("--seeds", type=int, default=10, help="replications per case with --profile (default 10)")
    a = ap.parse_args(argv)
    if a.profile:
        prof = PROFILES[a.profile]
        rwnd = prof.client_window_bytes or 502 << 7
        for iw, n in itertools.product((3, 10), (1, 2, 6)):
            rows = [run(prof, iw, n, rwnd, seed) for seed in range(a.seeds)]
            report(f"{prof.name}, {a.seeds} seeds, IW{iw} N={n}", rows)
        return 0
    if not (a.rates and a.rwnds):
        ap.error("give RATES and RWNDS, or --profile")
    for rate, rwnd in itertools.product([float(x) for x in a.rates.split(",")], [int(x) for x in a.rwnds.split(",")]):
        prof = Profile("fixed", rate, 6.0)
        for iw, n in itertools.product((3, 10), (1, 2, 6)):
            report(f"{rate / 1e6:.3f} Mbit/s, window {rwnd // 1024} kB, IW{iw} N={n}", [run(prof, iw, n, rwnd)])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
