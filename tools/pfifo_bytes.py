"""A packet buffer on Tofino, for docs/tofino.md: the v1model program's pfifo (``refmodel/queue.py``: a
ring of release times) beside the byte limit the TNA program enforces instead
(``refmodel/tofino_queue.py: link_limit_ns``; the TNA queue decides as the v1model's byte limit,
tests/test_tofino_queue.py). Both decide alike while every frame is full-size; this measures what the
seeds' traffic makes of the difference: audio frames of 94 B every 20 ms and six flows' slow starts
(372 kB in all, 1514 B frames, each round a window back to back at 100 Mbit/s, the window doubling from
IW each round trip), open loop (a drop is not retransmitted and does not slow its flow).

``python tools/pfifo_bytes.py`` prints, per link, buffer and IW, each buffer's drops (audio, web) and the
largest sojourn an admitted audio frame and web frame met.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mininet"))

from accessnet.profiles import PROFILES, SEED_BDP  # noqa: E402
from refmodel.constants import Aqm  # noqa: E402
from refmodel.params import QueueParams, pipeline_params  # noqa: E402
from refmodel.queue import QueueModel  # noqa: E402
from refmodel.tofino_queue import link_limit_ns  # noqa: E402

AUDIO_FRAME, AUDIO_GAP_NS = 94, 20_000_000   # web6's audio: 40 B of payload every 20 ms
WEB_FRAME, WEB_PAYLOAD, WEB_GAP_NS = 1514, 1460, 121_000
LINKS = ("hspa", "edge", "lte")   # the seeds' profiles, each with 2 BDP of buffer as web6


def arrivals(rtt_ms: float, iw: int, flows: int = 6, total: int = 372_000) -> list[tuple[int, int, str]]:
    """(time ns, frame bytes, 'audio' or 'web'), in time order: 8 s of audio, the flows starting at 1 s."""
    ev = [(k * AUDIO_GAP_NS, AUDIO_FRAME, "audio") for k in range(400)]
    for f in range(flows):
        sent, window, t = 0, iw, 1_000_000_000 + f * 50_000
        while sent < total // flows:
            for k in range(window):
                if sent >= total // flows:
                    break
                ev.append((t + k * WEB_GAP_NS, WEB_FRAME, "web"))
                sent += WEB_PAYLOAD
            t += int(rtt_ms * 1e6)
            window *= 2
    return sorted(ev)


def run(q: QueueParams, events: list[tuple[int, int, str]]) -> dict[str, float]:
    m = QueueModel()
    out = {"audio drops": 0, "web drops": 0, "audio max ms": 0.0, "web max ms": 0.0}
    for t, size, kind in events:
        p = m.predict(q, t, size)
        if p.over_limit:
            out[f"{kind} drops"] += 1
        else:
            m.commit(p)
            out[f"{kind} max ms"] = max(out[f"{kind} max ms"], p.sojourn_ns / 1e6)
    return out


def main() -> int:
    print(f"{'link':<6} {'buffer':>7} {'IW':>3}  {'pfifo (v1model)':<40} byte limit (TNA)")
    for name in LINKS:
        prof, packets = PROFILES[name], 2 * SEED_BDP[name]
        pfifo = pipeline_params(prof.rate_bps, Aqm.FIFO, limit_pkts=packets).queue
        as_bytes = dataclasses.replace(pfifo, limit_pkts=0, limit_ns=link_limit_ns(pfifo))
        for iw in (3, 10):
            ev = arrivals(prof.rtt_s * 1000, iw)
            cols = []
            for q in (pfifo, as_bytes):
                r = run(q, ev)
                cols.append(f"drops {r['audio drops']:>3} + {r['web drops']:>3}, max {r['audio max ms']:>6.1f} / "
                            f"{r['web max ms']:>6.1f} ms")
            print(f"{name:<6} {packets:>6}p {iw:>3}  {cols[0]:<40} {cols[1]}")
    print("drops: audio + web; max: the largest sojourn of an admitted audio / web frame")
    return 0


if __name__ == "__main__":
    sys.exit(main())
