"""The reference model as a switch: a userspace forwarder for when BMv2 is absent.

``python -m accessnet.modelswitch --if 1=IF1 --if 2=IF2 --monitor IF3 --config CFG.json``

It reads frames from raw sockets on the switch ports, runs each through
``refmodel.Pipeline`` (the same decisions, sojourn and telemetry the P4
program computes), sends admitted frames out of their egress port (where the
drain does the waiting) and each telemetry record to the monitor
port. The configuration's ``[links.N]`` sections give access links their
clients and parameters, as the controller writes them to BMv2. With
``--tune-log`` it also runs the controller's closed loops
(``controller.tuner.LinkLoops``: the defaults' and one per link with
parameters of its own) on its own telemetry, exactly as the P4Runtime
controller does for BMv2. Stops cleanly on SIGTERM/SIGINT and prints its
counters.
"""

from __future__ import annotations

import argparse
import json
import selectors
import signal
import socket
import sys
import time
from pathlib import Path

from controller import shaper
from controller.config import links_from_dict, params_from_dict, with_jitter_budget
from controller.tuner import LinkLoops, link_log_path, open_log, parse_rate_schedule
from refmodel.params import JITTER_BUDGET_MS
from refmodel.pipeline import Pipeline, Route
from refmodel.telemetry import encode_frame

from .rawsock import enable_auxdata, packet_socket, recv_frame

SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4


def open_port(ifname: str) -> socket.socket:
    s = packet_socket(ifname)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
    except OSError:
        pass  # older kernels: outgoing frames are filtered by pkttype below
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    enable_auxdata(s)
    s.setblocking(False)
    return s


def make_pipeline(routes: dict[int, Route], cfg: dict, seed: int) -> Pipeline:
    """The model with the configuration's defaults and its [links.N]: what the controller writes to BMv2."""
    links, clients = links_from_dict(cfg)
    return Pipeline(routes, params_from_dict(cfg), seed=seed, links=clients, link_params=links)


def apply_tuning(pipeline: Pipeline, loops: LinkLoops, now_ns: int, drain: shaper.Drain | None = None) -> int:
    """One turn of the closed loops: what changed goes to the model's defaults (a rate change also to the drain
    shaper) or to a link's own parameters. Returns how many loops wrote."""
    acts = loops.tick(now_ns)
    for link, act in acts:
        if link is not None:
            pipeline.configure_link(link, act.params)
            continue
        pipeline.configure(act.params)
        if act.rate_changed and drain is not None:  # after the model, as the controller does (controller.tuner)
            drain.set_rate(act.rate_bps)
    return len(acts)


def serve(ifaces: dict[int, str], routes: dict[int, Route], cfg: dict, monitor: str | None, seed: int,
          loop: LinkLoops | None = None, drain: shaper.Drain | None = None) -> int:
    pipeline = make_pipeline(routes, cfg, seed)
    socks = {port: open_port(name) for port, name in ifaces.items()}
    mon = open_port(monitor) if monitor else None
    sel = selectors.DefaultSelector()
    for port, s in socks.items():
        sel.register(s, selectors.EVENT_READ, port)
    running = True

    def stop(*_):
        nonlocal running
        running = False

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    n_in = n_out = errors = 0
    while running:
        if loop is not None:
            apply_tuning(pipeline, loop, time.time_ns(), drain)
        for key, _ in sel.select(timeout=0.01):
            s = key.fileobj
            while True:
                try:
                    frame, addr = recv_frame(s)  # VLAN tags restored, as BMv2 (libpcap) sees frames
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue
                n_in += 1
                res = pipeline.process(time.time_ns(), frame, key.data)
                try:
                    if res.egress is not None:
                        socks[res.egress].send(res.frame)
                        n_out += 1
                    if res.record is not None:
                        if loop is not None:
                            loop.add(res.record)
                        if mon is not None:
                            mon.send(encode_frame(res.record))
                except OSError:
                    errors += 1
    c = pipeline.counters
    print(json.dumps({"frames_in": n_in, "frames_out": n_out, "send_errors": errors,
                      "counters": {i: [c.packets[i], c.bytes[i]] for i in range(len(c.packets)) if c.packets[i]}}),
          file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.modelswitch", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--if", dest="ifs", action="append", required=True, help="PORT=IFNAME")
    ap.add_argument("--route", action="append", default=["1>2:down", "2>1:up"], help="IN>OUT:down|up")
    ap.add_argument("--monitor", help="interface of the monitor (telemetry) port")
    ap.add_argument("--config", required=True, help="JSON file: the switch table ([link], [buffer], [aqm], "
                    "any [links.N])")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tune-log", type=Path, help="run the controller's closed loops in-process, log them here "
                    "(a link with parameters of its own: beside it, tuning-linkN.csv)")
    ap.add_argument("--jitter-budget-ms", type=float, default=None, metavar="MS",
                    help="the audio's jitter budget: IWA's target at install and in the loop (default: the "
                    f"configuration's [aqm.iwa] budget_s, else {JITTER_BUDGET_MS:g} ms)")
    ap.add_argument("--rate-schedule", help="AT_S:RATE_BPS[,...] after --t0-ns")
    ap.add_argument("--t0-ns", type=int)
    shaper.add_args(ap)
    a = ap.parse_args(argv)
    ifaces = {int(k): v for k, v in (s.split("=", 1) for s in a.ifs)}
    routes = {}
    for r in a.route:
        ports, d = r.split(":")
        i, o = ports.split(">")
        routes[int(i)] = Route(int(o), d == "down")
    with open(a.config) as f:
        cfg = with_jitter_budget(json.load(f), a.jitter_budget_ms)
    logs: list = []

    def log_for(link: int | None):
        logs.append(open_log(link_log_path(a.tune_log, link)))
        return logs[-1]

    try:
        loop = None
        if a.tune_log is not None:
            loop = LinkLoops(cfg, log_for=log_for, t0_ns=a.t0_ns,
                             rate_schedule=parse_rate_schedule(a.rate_schedule))
        return serve(ifaces, routes, cfg, a.monitor, a.seed, loop, shaper.from_args(a.shaper_dev, a.drain_control))
    finally:
        for log in logs:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
