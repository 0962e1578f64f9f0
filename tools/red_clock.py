"""RED's average on ticks, for docs/tofino.md: the TNA design's RED (``refmodel/tofino_red.py``: the average
moved by the packet generator's ticks, 2^-k per tick) beside the v1model program's (``refmodel/red.py``:
ns-2's, moved by every arriving packet). Each on its own queue (``refmodel/queue.py``), the same arrivals,
sizes and random draws; the seeds' RED and REDok rows (thresholds, w_q, max_p, their buffers in packets) on
their links; with them ``TnaRed``, the whole TNA RED (the gate from the previous packet's second pass).
Two loads: the on/off load of the other Tofino twins (experiments/onoff.py: 2 s at 1.3 times
the rate, 1.5 s at half of it), and the seeds' web traffic, open loop (tools/pfifo_bytes.py: audio and six
flows' slow starts; IW10).

``python tools/red_clock.py [--seconds 60] [--seeds 0,1,2] [--ticks-ms 1,10]`` prints, per row, load and
tick period, each RED's drops (early + forced; the buffer's own drops apart) and the mean average (ms).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mininet"))

from accessnet.profiles import PROFILES, SEED_BDP  # noqa: E402
from accessnet.scenario import RED_ROWS, REDOK_ROWS  # noqa: E402
from experiments.onoff import next_arrival  # noqa: E402
from refmodel.constants import Aqm, Reason  # noqa: E402
from refmodel.params import pipeline_params  # noqa: E402
from refmodel.queue import QueueModel  # noqa: E402
from refmodel.red import Red  # noqa: E402
from refmodel.tofino_red import SecondPassRed, TickRed, TnaRed, tick_shift, tna_red_knobs  # noqa: E402
from tools.pfifo_bytes import arrivals as web_arrivals  # noqa: E402


def rows() -> list[tuple[str, str, dict, int]]:
    """(name, link, RED row, buffer in packets): RED with 2 BDP, REDok with its own buffer (as the seeds)."""
    out = [(f"red {link}", link, row, 2 * SEED_BDP[link]) for link, row in RED_ROWS.items()]
    out += [(f"redok {link}", link, row, pkts) for link, (row, pkts) in REDOK_ROWS.items()]
    return out


def onoff(seed: int, rate_bps: float, seconds: float):
    rng, now = random.Random(seed), 1_000
    while now < seconds * 1e9:
        now, size = next_arrival(rng, now, rate_bps)
        yield now, size, rng.getrandbits(32)


def web(seed: int, rtt_ms: float):
    rng = random.Random(seed)
    for t, size, _ in web_arrivals(rtt_ms, 10):
        yield t + 1_000, size, rng.getrandbits(32)


def run(link: str, row: dict, packets: int, tick_ns: int, frames) -> dict[str, tuple[int, float]]:
    """Both REDs on the same frames: name -> (RED's drops, the mean average in ms at the arrivals)."""
    p = pipeline_params(PROFILES[link].rate_bps, Aqm.RED, limit_pkts=packets, red=row)
    q, rp = p.queue, p.red
    k = tick_shift(row["w_q"], PROFILES[link].rate_bps, rp.mean_pktsize, tick_ns)
    idle_arrivals = PROFILES[link].rate_bps / (8 * rp.mean_pktsize) * tick_ns / 1e9
    reds = {"v1model": Red(), "tna": TickRed(), "weighted": TickRed(), "pass2": SecondPassRed(),
            "tna red": TnaRed(tna_red_knobs(rp, q.byte_time_q16))}
    queues = {w: QueueModel() for w in reds}
    drops, avg_sum, n, tick = {w: 0 for w in reds}, {w: 0 for w in reds}, 0, 0
    for now, size, rand in frames:
        while tick <= now:   # the link's ticks up to this arrival (q_tick's delay: the backlog then)
            reds["tna"].tick(max(queues["tna"].tat - tick, 0), k)
            reds["weighted"].tick_weighted(max(queues["weighted"].tat - tick, 0), row["w_q"], idle_arrivals)
            tick += tick_ns
        n += 1
        for w in reds:
            pred = queues[w].predict(q, now, size)
            v = reds[w].decide(rp, pred, rand)
            drops[w] += v.drop and v.reason != Reason.LIMIT
            avg_sum[w] += reds[w].avg
            if not v.drop:
                queues[w].commit(pred)
    return {w: (drops[w], avg_sum[w] / max(n, 1) / 1e6) for w in reds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--ticks-ms", default="1,10")
    a = ap.parse_args()
    print("row          load    tick  k   drops (mean avg ms): v1model, ticks 2^-k, ticks weighted by arrivals, "
          "per packet in a second pass, the TNA program's RED (TnaRed)   [per seed]")
    for name, link, row, packets in rows():
        for load in ("on/off", "web"):
            for tick_ms in (float(t) for t in a.ticks_ms.split(",")):
                tick_ns = int(tick_ms * 1e6)
                k = tick_shift(row["w_q"], PROFILES[link].rate_bps, 1500, tick_ns)
                cells = []
                for seed in (int(s) for s in a.seeds.split(",")):
                    prof = PROFILES[link]
                    frames = onoff(seed, prof.rate_bps, a.seconds) if load == "on/off" else web(seed, prof.rtt_s * 1000)
                    r = run(link, row, packets, tick_ns, frames)
                    cells.append(" ".join(f"{r[w][0]:5d} ({r[w][1]:6.1f})" for w in r))
                print(f"{name:<12} {load:<7} {tick_ms:3g}ms {k:2d}  " + "   ".join(cells), flush=True)


if __name__ == "__main__":
    main()
