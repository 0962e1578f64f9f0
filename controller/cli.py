"""Command line: ``python -m controller {install,set-aqm,counters,tune,pktgen} --help``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

import finsy as fy

from refmodel.aqms import SELECTORS
from refmodel.constants import COUNTER_SLOTS, Decision, TrafficClass
from refmodel.params import JITTER_BUDGET_MS, ConfigError, PipelineParams, check_link
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


# --target: which program the switch runs, and the files `make build TARGET=...` wrote for it
# (P4Info, device config). A Tofino is driven as Stratum exposes it: the device config is
# Stratum's BfPipelineConfig (controller/stratum.py) around bf-p4c's output.
TARGET_FILES = {
    "bmv2": (Path("build/bottleneck.p4info.txtpb"), Path("build/bottleneck.json")),
    "tofino": (Path("build/tofino/bottleneck_tna.p4info.txtpb"), Path("build/tofino/device_config.pb.bin")),
    "tofino2": (Path("build/tofino2/bottleneck_tna.p4info.txtpb"), Path("build/tofino2/device_config.pb.bin")),
}


def add_target_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--address", default="127.0.0.1:9559", help="P4Runtime address (default: loopback)")
    p.add_argument("--device-id", type=int, default=1)
    p.add_argument("--election-id", type=int, default=10)
    p.add_argument("--target", choices=sorted(TARGET_FILES), default="bmv2",
                   help="bmv2 (simple_switch_grpc, the v1model program) or tofino / tofino2 (Stratum, "
                   "the TNA program p4src/tofino/); picks the default --p4info and --p4blob")
    p.add_argument("--p4info", type=Path, help="P4Info (default: the --target's, from make build)")
    p.add_argument("--p4blob", type=Path, help="device config (default: the --target's, from make build)")
    p.add_argument("--tls-ca", type=Path, help="enable TLS: CA certificate of the switch")
    p.add_argument("--tls-cert", type=Path, help="client certificate (mutual TLS)")
    p.add_argument("--tls-key", type=Path, help="client key (mutual TLS)")
    p.add_argument("--tls-server-name", help="the name the switch's certificate must carry (default: the "
                   "address's host; gRPC derives a unix: address's from the socket's path)")
    p.add_argument("--attempts", type=int, default=8, help="connection attempts (exponential backoff) before giving up; 'tune' waits 5 s per attempt "
                   "for the first connection, then reconnects for ever")


def check_tls(args) -> None:
    """TLS options must make a complete set: a client certificate or key without the CA would silently
    connect in plaintext, and a certificate without its key (or the reverse) cannot authenticate."""
    ca, cert, key = getattr(args, "tls_ca", None), getattr(args, "tls_cert", None), getattr(args, "tls_key", None)
    if getattr(args, "tls_server_name", None) and not ca:
        raise ConfigError("--tls-server-name needs --tls-ca (it names the certificate TLS checks)")
    if (cert or key) and not ca:
        raise ConfigError("--tls-cert/--tls-key need --tls-ca (the switch's CA): without it the connection "
                          "would not be encrypted")
    if bool(cert) != bool(key):
        raise ConfigError("--tls-cert and --tls-key go together (mutual TLS needs both)")
    for opt, path in (("--tls-ca", ca), ("--tls-cert", cert), ("--tls-key", key)):
        if path is not None and not Path(path).is_file():
            raise ConfigError(f"{opt} {path}: no such file")


def target_from(args) -> SwitchTarget:
    check_tls(args)
    tls = None
    if args.tls_ca:
        tls = fy.GRPCCredentialsTLS(cacert=args.tls_ca, cert=args.tls_cert, private_key=args.tls_key,
                                    target_name_override=args.tls_server_name or "")
    p4info, p4blob = TARGET_FILES[getattr(args, "target", "bmv2")]
    return SwitchTarget(args.address, args.device_id, args.election_id, args.p4info or p4info,
                        args.p4blob or p4blob, tls)


def make_switch(args, state: DesiredState) -> BottleneckSwitch:
    """The switch object for --target: the v1model program's entries on BMv2, the TNA program's on a Tofino."""
    if getattr(args, "target", "bmv2") == "bmv2":
        return BottleneckSwitch(target_from(args), state)
    from .tofino import TnaBottleneckSwitch, access_links  # TNA only: its import registers the Tofino P4Info types
    return TnaBottleneckSwitch(target_from(args), state, access_links(state))


def own_links(links: dict[int, PipelineParams]) -> str:
    """', link N: aqm=...' for every link with parameters of its own."""
    return "".join(f", link {lk}: aqm={lp.queue.aqm.name.lower()}" for lk, lp in sorted(links.items()))


async def cmd_install(args) -> int:
    params = config.load(args.config, args.aqm)
    links, clients = config.load_links(args.config)  # [links.N]: access links of their own
    state = DesiredState(params, parse_routes(args.routes), args.monitor_port, links, clients)
    ctx, sw = await connect_with_backoff(lambda: make_switch(args, state), args.attempts)
    try:
        await sw.wait_applied()
        print(f"installed: aqm={params.queue.aqm.name.lower()}{own_links(links)}, {len(clients)} clients mapped, "
              f"on {args.address}")
    finally:
        await ctx.__aexit__(None, None, None)
    return 0


def cmd_pktgen(args) -> int:
    """The packet generator's ticks of the config's links (controller/pktgen.py): printed, or sent over
    BF-Runtime."""
    from . import pktgen
    from .tofino import access_links, n_links, with_lab_link
    from . import tna_p4info
    params = config.load(args.config)
    links, clients = config.load_links(args.config)
    lks = with_lab_link(params, access_links(DesiredState(params, {}, None, links, clients)))
    n = max(lk.link for lk in lks) + 1
    p4info = args.p4info or TARGET_FILES[args.target][0]
    if args.p4info is not None and not Path(p4info).is_file():
        raise ConfigError(f"--p4info {p4info}: no such file")
    if Path(p4info).is_file() and n > (cap := n_links(tna_p4info.load(p4info))):
        raise ConfigError(f"pktgen: link {n - 1} is beyond the program's {cap} links ({p4info})")
    period = pktgen.tick_period([(lk.link, lk.params) for lk in lks],
                                None if args.period_ms is None else round(args.period_ms * 1e6))
    plan = pktgen.TickPlan(args.target, n, period, args.app_id, tuple(args.pipes))
    ws = pktgen.writes(plan)
    pktgen.check_writes(args.target, ws)
    if args.bfrt_address is None:
        print(f"# {n} links, a tick each every {period} ns, {plan.ipg_ns} ns apart, pipes "
              f"{','.join(map(str, plan.pipes))}; one BF-Runtime entry modification a line")
        for w in ws:
            print(w.to_json())
        return 0
    pktgen.install(ws, args.bfrt_address, args.program, args.device_id)
    print(f"ticks: {n} links every {period} ns on pipes {','.join(map(str, plan.pipes))} ({args.bfrt_address})")
    return 0


async def cmd_counters(args) -> int:
    target = target_from(args)
    opts = fy.SwitchOptions(p4info=target.p4info, device_id=target.device_id,
                            initial_election_id=target.election_id, role_name="")
    link = None if args.link is None else check_link(args.link)
    counter, base = ("class_decision", 0) if link is None else ("link_class_decision", link * COUNTER_SLOTS)
    async with fy.Switch("reader", target.address, opts) as sw:
        rows = []
        async for c in sw.read(fy.P4CounterEntry(counter)):
            if c.data and c.data.packet_count and base <= c.index < base + COUNTER_SLOTS:
                cls, dec = divmod(c.index - base, 4)
                rows.append((TrafficClass(cls).name, Decision(dec).name, c.data.packet_count, c.data.byte_count))
    which = "all links" if link is None else f"link {link}"
    print(f"{'class':<10} {'decision':<8} {'packets':>10} {'bytes':>12}   ({which})")
    for r in sorted(rows):
        print(f"{r[0]:<10} {r[1]:<8} {r[2]:>10} {r[3]:>12}")
    return 0


async def cmd_tune(args) -> int:
    from . import shaper, tuner  # tune only: the closed loop (numpy, the telemetry socket, tc)

    if args.target != "bmv2":
        raise ConfigError(f"tune --target {args.target}: the closed loop tunes IWA, which the TNA program does not "
                          f"run yet (docs/tofino.md); use install --target {args.target}")
    cfg = config.with_jitter_budget(config.load_table(args.config), args.jitter_budget_ms)
    schedule = tuner.parse_rate_schedule(args.rate_schedule)
    links, clients = config.links_from_dict(cfg)  # checked before any log file is opened
    logs: list = []

    def log_for(link: int | None):
        log = tuner.open_log(tuner.link_log_path(args.log, link))
        logs.append(log)
        return log

    try:
        loops = tuner.LinkLoops(cfg, log_for=log_for, period_ns=int(args.period_ms * 1e6), rate_schedule=schedule, t0_ns=args.t0_ns)
        loop = loops.default
        state = DesiredState(loop.params, parse_routes(args.routes), args.monitor_port,
                             {lk: lp.params for lk, lp in loops.links.items()}, clients)
        drain = shaper.from_args(args.shaper_dev, args.drain_control)

        def ready() -> None:
            print(f"installed: aqm={loop.params.queue.aqm.name.lower()}{own_links(links)} on {args.address}; tuning",
                  flush=True)

        return await tuner.run_bmv2(BottleneckSwitch(target_from(args), state), loops, args.monitor_if,
                                    connect_timeout_s=5.0 * args.attempts,
                                    shaper=drain.set_rate if drain else None,
                                    duration_s=args.duration, ready=ready)
    finally:
        for log in logs:
            if log is not None:
                log.close()


def parser() -> argparse.ArgumentParser:
    """The command line: install, set-aqm and counters here, tune's many options in ``_add_tune``."""
    ap = argparse.ArgumentParser(prog="python -m controller", description=__doc__)
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("install", help="push the pipeline and configure the bottleneck")
    p.add_argument("--config", required=True, type=Path,
                   help="TOML file with [link], [buffer], [aqm] and any [links.N]")
    p.add_argument("--aqm", help="override the AQM named in the config")
    p.add_argument("--routes", default="1>2:down,2>1:up", help="ingress>egress:down|up, comma separated")
    p.add_argument("--monitor-port", type=int, default=3, help="telemetry clone port")
    add_target_args(p)

    p = sub.add_parser("set-aqm", help="switch the AQM (and its knobs) at run time")
    p.add_argument("aqm", help=" | ".join(a.name for a in SELECTORS))
    p.add_argument("--config", required=True, type=Path)
    p.add_argument("--routes", default="1>2:down,2>1:up")
    p.add_argument("--monitor-port", type=int, default=3)
    add_target_args(p)

    p = sub.add_parser("counters", help="read the class x decision counters")
    p.add_argument("--link", type=int, help="one access link's counters (default: all links together)")
    add_target_args(p)

    _add_tune(sub)

    p = sub.add_parser("pktgen", help="the Tofino packet generator's ticks of every link (BF-Runtime)",
                       description="Works out the packet generator's application that ticks every access link of "
                       "the config (one period per pipe, within every link's bounds: controller/pktgen.py), checks "
                       "its entries against the SDE's schema and prints them, or sends them to a BF-Runtime server.")
    p.add_argument("--config", required=True, type=Path, help="TOML file with [link], [buffer], [aqm] and any [links.N]")
    p.add_argument("--target", required=True, choices=("tofino", "tofino2"))
    p.add_argument("--p4info", type=Path, help="the program's P4Info, for its number of links (default: the "
                   "--target's, from make build; not checked when absent)")
    p.add_argument("--period-ms", type=float, help="the tick period (default: the longest every link allows)")
    p.add_argument("--pipes", type=lambda s: [int(x) for x in s.split(",")], default=[0],
                   help="the pipes whose links are ticked, comma separated (default: 0)")
    p.add_argument("--app-id", type=int, default=0, help="the generator's application (default 0)")
    p.add_argument("--bfrt-address", help="BF-Runtime gRPC address (Stratum with -incompatible_enable_bfrt_grpc_server, "
                   "or bf_switchd; port 50052): send the entries instead of printing them")
    p.add_argument("--program", default="bottleneck_tna", help="the P4 program's name on the switch")
    p.add_argument("--device-id", type=int, default=0)
    return ap


def _add_tune(sub: argparse._SubParsersAction) -> None:
    """``tune``: install's options, and the closed loop's: its period, the jitter budget, the rate schedule and
    the shaper that follows it, the log and the duration."""
    p = sub.add_parser("tune", help="install, then run the closed loop (IWA knobs from telemetry) until Ctrl-C",
                       description="Installs like 'install', then every period reads the telemetry records the "
                       "switch clones to its monitor port (and, every 10 periods, the counters), asks the policy "
                       "(controller/policy.py) for IWA's and CoDel's targets, writes them when they change and "
                       "logs every period to --log (CSV, docs/data-formats.md). With another AQM it observes and logs only. "
                       "On SIGTERM/Ctrl-C it leaves the switch with the configured parameters.")
    p.add_argument("--config", required=True, type=Path, help="TOML or JSON with [link], [buffer], [aqm]")
    p.add_argument("--routes", default="1>2:down,2>1:up")
    p.add_argument("--monitor-port", type=int, default=3, help="telemetry clone port")
    p.add_argument("--monitor-if", help="interface of the monitor port to read telemetry from (needs root)")
    p.add_argument("--period-ms", type=float, default=100.0)
    p.add_argument("--jitter-budget-ms", type=float, default=None, metavar="MS",
                   help="the interactive flows' jitter budget: IWA's target at install and in the loop (default: "
                   f"the configuration's [aqm.iwa] budget_s, else {JITTER_BUDGET_MS:g} ms)")
    p.add_argument("--rate-schedule", help="AT_S:RATE_BPS[,...]: change the link rate AT_S seconds after --t0-ns")
    p.add_argument("--t0-ns", type=int, help="time origin of --rate-schedule (default: now)")
    from . import shaper  # loaded for tune only, as cmd_tune loads it
    shaper.add_args(p)
    p.add_argument("--log", type=Path, help="tuning time series (CSV); a [links.N] link with parameters of its own "
                   "writes its rows beside it (tuning-linkN.csv)")
    p.add_argument("--duration", type=float, help="stop after this many seconds (default: until signalled)")
    add_target_args(p)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        check_tls(args)  # before anything connects
        if args.cmd in ("install", "set-aqm"):
            return asyncio.run(cmd_install(args))
        if args.cmd == "counters":
            return asyncio.run(cmd_counters(args))
        if args.cmd == "tune":
            return asyncio.run(cmd_tune(args))
        if args.cmd == "pktgen":
            return cmd_pktgen(args)
    except ConfigError as e:
        print(f"config error: {e}", file=sys.stderr)
        return 2
    except (ConnectionError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    return 1


if __name__ == "__main__":
    sys.exit(main())
