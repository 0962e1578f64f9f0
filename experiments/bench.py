"""make bench: speed measured side by side in one run, printed as numbers and ratios.

* BMv2's packets per second of its own CPU time for the bottleneck program
  with each AQM (telemetry on and off), beside the plain forwarding program on
  the same BMv2 build: the ratio is the cost of the queue model + AQM. At
  1 Gbit/s the queue stays empty, so an AQM's busy path (RED's early-drop test,
  CoDel's dropping state, PIE's probability) never runs there; a second set of
  rows offers the same frames to a link 20 % slower than the load, where a
  queue stands and the AQMs act, and counts frames offered per CPU-second.
* The reference model's packet rate per AQM (what the model switch can carry).
* What BMv2 executes per packet for each program (experiments/bmv2_work.py): tables, conditions, action
  primitives and expressions counted with uprobes, and the metadata fields zeroed per packet. These
  counts do not depend on the machine's load: they say why the rates above differ.

Numbers depend on this shared machine's load: compare ratios within one run. A single pair of runs moved
FIFO's ratio between 0.44 and 0.61 within minutes here, so every BMv2 row runs in ``--rounds`` rounds, each
with plain forwarding measured at its start and end, and the ratio printed is the median with its range.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import replace
from statistics import median
from pathlib import Path

import dpkt

from experiments.bmv2_work import Work, count, metadata_fields, missing, uprobes
from experiments.telemetry_reader import read_telemetry, read_telemetry_scapy
from refmodel import Pipeline, Route
from refmodel.constants import Telemetry
from refmodel.aqms import SELECTORS
from refmodel.params import PipelineParams, pipeline_params
from refmodel.telemetry import Record, encode_frame

# Every AQM with a data plane of its own (refmodel/aqms/), with the knobs it is benched with: RED needs its row
# (the seeds' hspa row), IWA a fixed target; the others their defaults.
KNOBS = {"red": {"red": dict(w_q=0.002, max_p=0.1, th_min=5, th_max=20)}, "iwa": {"iwa": dict(target_s=0.03)}}
AQMS = {a.name: KNOBS.get(a.name, {}) for a in SELECTORS}


def bench_frames(n: int) -> list[bytes]:
    from scapy.all import IP, TCP, Ether, Raw, raw  # scapy: slow to import, the frames alone need it
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


def rx_packets(ifname: str) -> int:
    return int(Path(f"/sys/class/net/{ifname}/statistics/rx_packets").read_text())


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and all its threads so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bmv2_rate(sw, frames: list[bytes], seconds: float, pps: float) -> tuple[float, float, float, float]:
    """BMv2's packet rate per second of its own CPU time: ``pps`` frames per second (paced, below what BMv2
    can carry, so nothing queues or drops) for ``seconds``; the kernel counts what BMv2 sends (the veth
    peers' rx counters) and /proc what BMv2 spent. Returns (frames out of port 2, telemetry records out of
    port 3) per CPU-second of BMv2, the fraction of offered frames forwarded, and the frames offered per
    CPU-second (what a run with drops is compared by).

    On this shared 2-core machine a wall-clock rate under overload measured the sender as much as BMv2:
    an unpinned sender at full speed takes about half of BMv2's time, Python sniffers on every port slowed
    the sender, and the ratio between two programs moved from 0.45 to 0.75 with the method. CPU time per
    packet at a load both programs carry depends on neither."""
    out_if, mon_if = sw.ifs[2][0], sw.ifs[3][0]
    time.sleep(0.5)
    out0, mon0, cpu0 = rx_packets(out_if), rx_packets(mon_if), cpu_seconds(sw.proc.pid)
    n = int(seconds * pps)
    t0 = time.perf_counter()
    for i in range(n):
        sw.tx[1].send(frames[i % len(frames)])
        ahead = t0 + (i + 1) / pps - time.perf_counter()
        if ahead > 0:
            time.sleep(ahead)
    time.sleep(1.0)  # what BMv2 still holds drains
    cpu = cpu_seconds(sw.proc.pid) - cpu0
    out, mon = rx_packets(out_if) - out0, rx_packets(mon_if) - mon0
    return out / cpu, mon / cpu, out / n, n / cpu


@contextmanager
def bmv2_with(params: PipelineParams | None, telemetry: bool = True):
    """A fresh BMv2 running the bottleneck program with ``params`` (telemetry on or off), or the plain
    forwarding program (``params`` None); closed on exit."""
    from accessnet.bmv2_veth import Bmv2  # BMv2 runs only (finsy, gRPC)
    sw = Bmv2(k=7, program="plain_forward" if params is None else "bottleneck").start()
    try:
        if params is None:
            sw.configure_plain()
        else:
            sw.configure(params if telemetry else replace(params, queue=replace(params.queue, telemetry=Telemetry.OFF)))
        yield sw
    finally:
        sw.close()


def measure(frames: list[bytes], a: argparse.Namespace, params: PipelineParams | None,
            telemetry: bool = True) -> tuple[float, float, float, float]:
    """bmv2_rate on a fresh BMv2 (``bmv2_with``)."""
    with bmv2_with(params, telemetry) as sw:
        return bmv2_rate(sw, frames, a.seconds, a.pps)


def work(frames: list[bytes], params: PipelineParams | None, telemetry: bool = True, n: int = 400) -> Work:
    """What BMv2 executes per packet for ``n`` frames (experiments/bmv2_work.py), on a fresh BMv2 set up
    as in ``measure``."""
    from accessnet.bmv2_veth import find_tool  # BMv2 runs only (finsy, gRPC)
    with bmv2_with(params, telemetry) as sw:
        out_if = sw.ifs[2][0]

        def drive() -> None:
            out0 = rx_packets(out_if)
            for i in range(n):
                sw.tx[1].send(frames[i % len(frames)])
                time.sleep(0.002)   # a trap per event slows BMv2: offer frames slowly
            deadline = time.monotonic() + 20
            while rx_packets(out_if) - out0 < n and time.monotonic() < deadline:
                time.sleep(0.05)
            if rx_packets(out_if) - out0 < n:
                raise RuntimeError(f"BMv2 forwarded {rx_packets(out_if) - out0} of {n} frames")
            time.sleep(0.3)   # the last frames' telemetry records

        with tempfile.TemporaryDirectory() as d, uprobes(find_tool("simple_switch_grpc")) as events:
            return count(sw.proc.pid, events, n, drive, Path(d) / "stat.txt")


def light_rows() -> list[tuple[str, PipelineParams, bool]]:
    """(name, parameters, telemetry) of the bottleneck's rows at 1 Gbit/s: every AQM, telemetry off and on."""
    return [(f"{aqm}{'+telemetry' if telemetry else ''}", pipeline_params(1e9, aqm, limit_pkts=1000, **AQMS[aqm]),
             telemetry) for aqm in AQMS for telemetry in (False, True)]


def print_work(frames: list[bytes]) -> None:
    from accessnet.bmv2_veth import ROOT  # BMv2 runs only (finsy, gRPC)
    why = missing()
    if why:
        print(f"== BMv2 work per packet: skipped: {why}")
        return
    print("== BMv2 work per packet (uprobes; exact, whatever the load): tables applied, conditions, action "
          "primitives, expressions; metadata fields zeroed per packet")
    for name, params, telemetry in [("plain_forward", None, False)] + [
            (f"bottleneck {name}", params, telemetry) for name, params, telemetry in light_rows()]:
        w = work(frames, params, telemetry)
        fields = metadata_fields(ROOT / "build" / f"{'plain_forward' if params is None else 'bottleneck'}.json")
        print(f"  {name:<27} tables {w.tables:5.1f}   ifs {w.conditions:5.1f}   primitives {w.primitives:6.1f}   "
              f"expressions {w.expressions:6.1f}   fields {fields}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="make bench", description=__doc__)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--pps", type=float, default=2000.0, help="offered frames per second (BMv2 must carry it)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every BMv2 row (medians and ranges)")
    ap.add_argument("--work", action="store_true", help="only the work per packet (exact counts, no timing)")
    return ap


def print_model_rates(frames: list[bytes]) -> None:
    """The reference model's packet rate per AQM, and its ratio to the first AQM's (FIFO's)."""
    print("== reference model (packets/s, one core)")
    base = None
    for aqm in AQMS:
        r = model_rate(aqm, frames * 5)
        base = base or r
        print(f"  model {aqm:<6} {r:>10.0f} pkt/s   ratio to fifo {r / base:.2f}")


def print_parse_rates() -> None:
    """The telemetry reader's records per second beside scapy's on the same capture."""
    print("== telemetry capture parsing (records/s, same file)")
    fast, slow = parse_rates()
    print(f"  dpkt reader {fast:>10.0f} rec/s   scapy rdpcap {slow:>10.0f} rec/s   ratio {fast / slow:.1f}x")


def bmv2_rows(rate: float) -> list[tuple[str, PipelineParams, bool, bool]]:
    """(name, parameters, telemetry, standing) of every BMv2 row: the light rows at 1 Gbit/s, then every AQM
    on a link of ``rate`` bit/s (slower than the load: a queue stands), without telemetry."""
    rows = [(name, params, telemetry, False) for name, params, telemetry in light_rows()]
    rows += [(f"{aqm} (standing queue)", pipeline_params(rate, aqm, limit_pkts=48, **AQMS[aqm]), False, True)
             for aqm in AQMS]
    return rows


def bmv2_rounds(frames: list[bytes], a: argparse.Namespace, rows: list[tuple[str, PipelineParams, bool, bool]]
                ) -> tuple[list[float], dict[str, list[tuple[float, float, float, float]]]]:
    """Every row measured ``a.rounds`` times, each round between two measurements of plain forwarding, so a
    row's ratio is to its own round's (the machine's load moves between rounds). Returns each round's plain
    forwarding rate and, per row and round, (ratio, rate, records, share forwarded); a standing-queue row's
    rate is the frames offered per CPU-second."""
    print(f"== BMv2 packets per second of its own CPU time ({a.pps:.0f} frames/s offered for {a.seconds:.0f} s "
          f"per row, 154 B frames), {a.rounds} rounds; each round measures plain forwarding at its start and end "
          "and every row between them, and a row's ratio is to that round's plain forwarding")
    plains: list[float] = []
    got: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name, *_ in rows}
    for rnd in range(a.rounds):
        first = measure(frames, a, None)[0]
        results = [(name, measure(frames, a, params, telemetry)) for name, params, telemetry, _ in rows]
        last = measure(frames, a, None)[0]
        plain = (first + last) / 2
        plains.append(plain)
        for (name, (r, records, share, offered)), (_, _, _, standing) in zip(results, rows):
            got[name].append(((offered if standing else r) / plain, offered if standing else r, records, share))
        print(f"  round {rnd + 1}/{a.rounds}: plain forwarding {first:.0f} and {last:.0f} pkt/cpu-s", flush=True)
    return plains, got


def print_bmv2_rates(rows: list[tuple[str, PipelineParams, bool, bool]], plains: list[float],
                     got: dict[str, list[tuple[float, float, float, float]]], rate: float) -> None:
    """The rounds' medians: plain forwarding, then every row with its ratio's median and range."""
    print(f"  plain_forward               {median(plains):>10.0f} pkt/cpu-s (median)   ratio 1.00")
    for name, _, telemetry, standing in rows:
        if standing and name == rows[-len(AQMS)][0]:
            print(f"  -- under a standing queue: the same load on a {rate / 1e6:.2f} Mbit/s link (48 packets), "
                  "frames offered per CPU-second, no telemetry")
        ratios = [g[0] for g in got[name]]
        rec = f"   records {median(g[2] for g in got[name]):.0f}/cpu-s" if telemetry else ""
        print(f"  bottleneck {name:<26} {median(g[1] for g in got[name]):>10.0f} pkt/cpu-s   (forwarded "
              f"{median(g[3] for g in got[name]):.0%})   ratio {median(ratios):.2f} "
              f"[{min(ratios):.2f}-{max(ratios):.2f}]{rec}")


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    frames = bench_frames(2000)
    if a.work:
        from accessnet.bmv2_veth import build_p4  # BMv2 runs only (finsy, gRPC)
        build_p4()
        print_work(frames)
        return 0
    print_model_rates(frames)
    print_parse_rates()
    from accessnet.bmv2_veth import build_p4, missing_toolchain  # BMv2 runs only (finsy, gRPC)
    why = missing_toolchain()
    if why:
        print(f"== BMv2: skipped: {why}")
        return 0
    build_p4()
    rate = 0.8 * a.pps * len(frames[0]) * 8
    rows = bmv2_rows(rate)
    plains, got = bmv2_rounds(frames, a, rows)
    print_bmv2_rates(rows, plains, got, rate)
    print_work(frames)
    return 0


if __name__ == "__main__":
    sys.exit(main())
