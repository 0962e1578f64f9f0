"""PIE's update clock, for docs/tofino.md: the TNA program's PIE (``refmodel/tofino_pie.py``), updated on the
packet generator's ticks, beside the v1model program's (``refmodel/pie.py``), updated on the first packet at
least ``tupdate`` after the previous update. Each on its own queue (``refmodel/queue.py``), the same arrivals,
sizes and random draws: on/off load, 2 s at 1.3 times the link's rate then 1.5 s at half of it, RFC 8033's
defaults, a buffer of 400 ms.

``python tools/pie_clock.py [--seconds 30] [--seeds 0,1,2] [--rates 1e6,2e6,10e6,40e6]`` (a tick every tupdate)
prints, per rate and seed, each PIE's drops and the backlog the packets met on arrival (mean, ms).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.onoff import next_arrival  # noqa: E402
from refmodel.constants import Aqm  # noqa: E402
from refmodel.params import pipeline_params  # noqa: E402
from refmodel.pie import Pie  # noqa: E402
from refmodel.queue import QueueModel  # noqa: E402
from refmodel.tofino_pie import TnaPie, pie_knobs  # noqa: E402

def run(seed: int, rate_bps: float, seconds: float) -> dict[str, tuple[int, float]]:
    p = pipeline_params(rate_bps, Aqm.PIE, limit_bytes=int(0.4 * rate_bps / 8))
    q, pp = p.queue, p.pie
    k = pie_knobs(pp, q.mtu_ns)
    rng = random.Random(seed)
    q_v1, q_tna, v1, tna = QueueModel(), QueueModel(), Pie(), TnaPie()
    now = (3 << 32) + 700_000_000
    end, tick = now + int(seconds * 1e9), now
    drops, backlog, n = {"v1model": 0, "tna": 0}, {"v1model": 0, "tna": 0}, 0
    while now < end:
        now, size = next_arrival(rng, now, rate_bps)
        while tick < now:
            tna.second_pass(k, tna.tick(k, max(q_tna.tat, tick) - tick))   # q_tick's tat' - now
            tick += pp.tupdate_ns
        rand = rng.getrandbits(32)
        n += 1
        a = q_v1.predict(q, now, size)
        drop = v1.decide(pp, q, a, rand).drop
        drops["v1model"] += drop
        backlog["v1model"] += a.backlog_ns
        if not drop:
            q_v1.commit(a)
        b = q_tna.predict(q, now, size)
        drop = b.over_limit or tna.decide(k, b.backlog_ns, rand)[0]
        drops["tna"] += drop
        backlog["tna"] += b.backlog_ns
        if not drop:
            q_tna.commit(b)
    return {w: (drops[w], backlog[w] / n / 1e6) for w in drops}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--rates", default="1e6,2e6,10e6,40e6")
    a = ap.parse_args()
    print("rate (Mbit/s)  seed  v1model drops  mean backlog (ms)  TNA drops  mean backlog (ms)")
    for rate in (float(r) for r in a.rates.split(",")):
        for seed in (int(s) for s in a.seeds.split(",")):
            r = run(seed, rate, a.seconds)
            print(f"{rate / 1e6:13g}  {seed:4d}  {r['v1model'][0]:13d}  {r['v1model'][1]:17.1f}  "
                  f"{r['tna'][0]:9d}  {r['tna'][1]:17.1f}", flush=True)


if __name__ == "__main__":
    main()
