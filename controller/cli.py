"""Command line: ``python -m controller {install,set-aqm,counters,tune} --help``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from refmodel.constants import Decision, TrafficClass
from refmodel.params import ConfigError
from refmodel.pipeline import Route

from . import config
from .switch import BottleneckSwitch, DesiredState, SwitchTarget, connect_with_backoff

LOG = logging.getLogger("iwlab.controller")


def parse_routes(spec: str) -> dict[int, Route]:
    """'1>2:down,2>1:up' -> {1: Route(2, True), 2: Route(1, False)}"""
    routes = {}
    try:
        for item in spec.split(","):
            ports, direction = item.split(":")
            src, dst = ports.split(">")
            if direction not in ("down", "up"):
                raise ValueError(direction)
            routes[int(src)] = Route(int(dst), direction == "down")
    except ValueError:
        raise ConfigError(f"--routes {spec!r}: expected e.g. '1>2:down,2>1:up'") from None
    return routes


def add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1:9559", help="P4Runtime address (default: loopback)")
    p.add_argument("--device-id", type=int, default=1)
    p.add_argument("--election-id", type=int, default=10)
    p.add_argument("--p4info", type=Path, default=Path("build/bottleneck.p4info.txtpb"))
    p.add_argument("--p4blob", type=Path, default=Path("build/bottleneck.json"))
    p.add_argument("--tls-ca", type=Path, help="enable TLS: CA certificate of the switch")
    p.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS)")
    p.add_argument("--tls-key", type=Path, help="client key (mutual TLS)")


def target_from(args) -> SwitchTarget:
    tls = None
    if args.tls_ca:
        import finsy as fy
        tls = fy.GRPCCredentialsTLS(cacert=args.tls_ca, cert=args.tls_cert, private_key=args.tls_key)
    return SwitchTarget(args.address, args.device_id, args.election_id, args.p4info, args.p4blob, tls)


async def cmd_install(args) -> int:
    params = config.load(args.config, args.aqm)
    state = DesiredState(params, parse_routes(args.routes), args.monitor_port)
    ctx, sw = await connect_with_backoff(lambda: BottleneckSwitch(target_from(args), state))
    try:
        await sw.wait_applied()
        print(f"installed: aqm={params.queue.aqm.name.lower()} on {args.address}")
    finally:
        await ctx.__aexit__(None, None, None)
    return 0


async def cmd_counters(args) -> int:
    target = target_from(args)
    import finsy as fy
    opts = fy.SwitchOptions(p4info=target.p4info, device_id=target.device_id,
                            initial_election_id=target.election_id, role_name="")
    async with fy.Switch("reader", target.address, opts) as sw:
        rows = []
        async for c in sw.read(fy.P4CounterEntry("class_decision")):
            if c.data and c.data.packet_count:
                cls, dec = divmod(c.index, 4)
                rows.append((TrafficClass(cls).name, Decision(dec).name, c.data.packet_count, c.data.byte_count))
    print(f"{'class':<10} {'decision':<8} {'packets':>10} {'bytes':>12}")
    for r in sorted(rows):
        print(f"{r[0]:<10} {r[1]:<8} {r[2]:>10} {r[3]:>12}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m controller", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("install", help="push the pipeline and configure the bottleneck")
    p.add_argument("--config", required=True, type=Path, help="TOML file with [link], [buffer], [aqm]")
    p.add_argument("--aqm", help="override the AQM named in the config")
    p.add_argument("--routes", default="1>2:down,2>1:up", help="ingress>egress:down|up, comma separated")
    p.add_argument("--monitor-port", type=int, default=3, help="telemetry clone port")
    add_target_args(p)

    p = sub.add_parser("set-aqm", help="switch the AQM (and its knobs) at run time")
    p.add_argument("aqm", help="fifo | red | codel | pie | iwa")
    p.add_argument("--config", required=True, type=Path)
    p.add_argument("--routes", default="1>2:down,2>1:up")
    p.add_argument("--monitor-port", type=int, default=3)
    add_target_args(p)

    p = sub.add_parser("counters", help="read the class x decision counters")
    add_target_args(p)

    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        if args.cmd in ("install", "set-aqm"):
            return asyncio.run(cmd_install(args))
        if args.cmd == "counters":
            return asyncio.run(cmd_counters(args))
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    except ConnectionError as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    return 1


if __name__ == "__main__":
    sys.exit(main())
