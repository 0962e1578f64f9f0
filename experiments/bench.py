"""make bench: speed measured side by side in one run, printed as numbers and ratios.

* BMv2 forwarding rate of the bottleneck program with each AQM (telemetry on
  and off), beside the plain forwarding program on the same BMv2 build: the
  ratio is the cost of the queue model + AQM.
* The reference model's packet rate per AQM (what the model switch can carry).

Numbers depend on this shared machine's load: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import sys
import time

from refmodel import Pipeline, Route
from refmodel.params import pipeline_params

AQMS = {
    "fifo": {},
    "red": {"red": dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)},
    "codel": {},
    "pie": {},
    "iwa": {"iwa": dict(target_s=0.03)},
}


def bench_frames(n: int) -> list[bytes]:
    from scapy.all import IP, TCP, Ether, Raw, raw
    base = Ether() / IP(src="10.0.0.1", dst="10.0.1.1")
    return [raw(base / TCP(sport=80, dport=40000 + (i % 64), seq=1 + 100 * i, flags="A") / Raw(b"x" * 100))
            for i in range(n)]


def model_rate(aqm: str, frames: list[bytes]) -> float:
    p = Pipeline({1: Route(2, True)}, pipeline_params(1e9, aqm, limit_pkts=1000, **AQMS[aqm]))
    t = time.perf_counter()
    now = 0
    for f in frames:
        now += 2_000
        p.process(now, f, 1)
    return len(frames) / (time.perf_counter() - t)


def parse_rates(n: int = 20000) -> tuple[float, float]:
    import tempfile
    from pathlib import Path

    import dpkt

    from experiments.telemetry_reader import read_telemetry, read_telemetry_scapy
    from refmodel.telemetry import Record, encode_frame
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.pcap"
        with open(path, "wb") as f:
            w = dpkt.pcap.Writer(f)
            for i in range(n):
                w.writepkt(encode_frame(Record(4, 0, 0, 3, 2, 1514, i, i, i * 1000, 5, 6, 1, 2, 80, 4000, 6, 7, 8)),
                           ts=i / 1000)
        t = time.perf_counter()
        assert len(read_telemetry(path)[0]) == n
        fast = n / (time.perf_counter() - t)
        t = time.perf_counter()
        assert len(read_telemetry_scapy(path)) == n
        slow = n / (time.perf_counter() - t)
    return fast, slow


def bmv2_rate(sw, frames: list[bytes], seconds: float = 3.0) -> float:
    """Offer frames as fast as one raw socket can for ``seconds``; rate = frames out of port 2 / time."""
    sw.listen()
    t0 = time.perf_counter()
    i = 0
    while time.perf_counter() - t0 < seconds:
        sw.tx[1].send(frames[i % len(frames)])
        i += 1
        if i % 64 == 0:
            time.sleep(0)  # let the sniffer threads run
    time.sleep(1.0)
    out = len(sw.sniffers[2].frames)
    return out / seconds, i / seconds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="make bench", description=__doc__)
    ap.add_argument("--seconds", type=float, default=3.0)
    a = ap.parse_args(argv)
    frames = bench_frames(2000)

    print("== reference model (packets/s, one core)")
    base = None
    for aqm in AQMS:
        r = model_rate(aqm, frames * 5)
        base = base or r
        print(f"  model {aqm:<6} {r:>10.0f} pkt/s   ratio to fifo {r / base:.2f}")

    print("== telemetry capture parsing (records/s, same file)")
    fast, slow = parse_rates()
    print(f"  dpkt reader {fast:>10.0f} rec/s   scapy rdpcap {slow:>10.0f} rec/s   ratio {fast / slow:.1f}x")

    from accessnet.bmv2_veth import Bmv2, build_p4, missing_toolchain
    why = missing_toolchain()
    if why:
        print(f"== BMv2: skipped: {why}")
        return 0
    build_p4()
    print(f"== BMv2 forwarding rate ({a.seconds:.0f} s of offered load per row, 154 B frames)")
    sw = Bmv2(k=7, program="plain_forward").start()
    try:
        sw.configure_plain()
        plain, offered = bmv2_rate(sw, frames, a.seconds)
    finally:
        sw.close()
    print(f"  plain_forward        {plain:>10.0f} pkt/s   (offered {offered:.0f} pkt/s)   ratio 1.00")
    for aqm in AQMS:
        for telemetry in (False, True):
            sw = Bmv2(k=7).start()
            try:
                p = pipeline_params(1e9, aqm, limit_pkts=1000, **AQMS[aqm])
                if not telemetry:
                    from dataclasses import replace
                    p = replace(p, queue=replace(p.queue, telemetry=False))
                sw.configure(p)
                r, offered = bmv2_rate(sw, frames, a.seconds)
            finally:
                sw.close()
            tag = f"{aqm}{'+telemetry' if telemetry else ''}"
            print(f"  bottleneck {tag:<16} {r:>10.0f} pkt/s   (offered {offered:.0f})   ratio {r / plain:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
