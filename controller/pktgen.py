"""The packet generator's ticks for the TNA program (p4src/tofino/bottleneck_tna.p4), through BF-Runtime.

Every access link of a pipe needs a tick now and then: the queue's idle ``tat`` must not fall 2^31 ns behind
the clock (queue.p4's ``q_tick``), CoDel's and IWA's stored times likewise, and a PIE link's tick is PIE's
update. The program takes a tick as a packet of the generator's port (``TICK_PORT``, p4src/tofino/types.p4)
whose header's ``packet_id`` is the link. So one generator application per pipe, on a periodic timer, sends
one batch per period of one packet per link, ``packet_id`` 0 .. n - 1, spread over half the period.

The period is one per pipe and must suit every link on it: each link's queue and AQM bound it
(``refmodel.tofino_queue.tick_period_bounds`` and the AQM's ``AqmSpec.tofino_ticks``: at most 1 s for the queue
and CoDel, 100 ms for IWA, exactly ``tupdate`` for PIE); ``tick_period`` picks the longest period within all of
them, or checks the one asked for. Links whose bounds do not meet (two PIE links with different ``tupdate``)
cannot share a pipe, and the error says which.

The generator is configured through BF-Runtime's fixed tables (``tf1.pktgen.*``, ``tf2.pktgen.*``), which no
P4Runtime server exposes: Stratum serves them on its BF-Runtime port when started with
``-incompatible_enable_bfrt_grpc_server`` (as ``bf_switchd`` does). ``writes`` is the list of entries as plain
data, checked against the SDE's own schema of those tables (``controller/pktgen_schema.json``, extracted by
tools/pktgen_schema.py) before anything is sent; ``install`` sends them with the SDE's Python client
(``bfrt_grpc.client``, shipped with the SDE, not on PyPI).

``python -m controller pktgen --config lab.toml --target tofino2`` prints the writes;
``--bfrt-address HOST:50052`` sends them.

With IWA's grant in egress (p4src/tofino: -DIWA_GRANT_EGRESS=1) the generator's port is also the pipe's
recirculation port (the parser tells a recirculated ACK from a tick by its first byte); whether one port takes
both on hardware is not checked here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from refmodel.aqms import SELECTORS, resolve
from refmodel.params import ConfigError, PipelineParams
from refmodel.tofino_queue import tick_period_bounds as queue_tick_period_bounds

SCHEMA = Path(__file__).with_name("pktgen_schema.json")
# p4src/tofino/types.p4's TICK_PORT: the generator's port of each pipe (pipe-local), per target.
TICK_PORT = {"tofino": 68, "tofino2": 6}
TABLE_PREFIX = {"tofino": "tf1.pktgen", "tofino2": "tf2.pktgen"}
# The generator's header (tofino1_base.p4 / tofino2_base.p4: pktgen_timer_header_t), written over the first
# HEADER_BYTES of the packet it makes from the buffer: (padding, pipe_id, app_id) bits of its first byte,
# then a padding byte, batch_id (16) and packet_id (16). The program reads packet_id as the link.
HEADER_BYTES = 6
FIRST_BYTE_BITS = {"tofino": (3, 2, 3), "tofino2": (2, 2, 4)}
FRAME_BYTES = 64  # a tick's length: the header and the buffer's 58 bytes (zeros; the program reads the header)
BUFFER_OFFSET = 0
SPREAD = 2  # a batch takes at most 1/SPREAD of the period: a trigger never finds the last batch still going
ALL_PIPES = 0xFFFF  # BF-Runtime's target pipe_id for every pipe
MAX_PIPES = 4  # a Tofino's pipes (the header's pipe_id: 2 bits)


@dataclass(frozen=True)
class BfrtWrite:
    """One BF-Runtime entry modification: the table, its key, its data (and the action, for app_cfg)."""

    table: str
    key: dict[str, int]
    data: dict[str, int | bool | list[int]]
    action: str | None = None
    pipe: int | None = None  # the pipe it is written to (BF-Runtime's target pipe_id); None: every pipe

    def to_json(self) -> str:
        return json.dumps({"table": self.table, "pipe": self.pipe, "key": self.key, "action": self.action,
                           "data": self.data})


@dataclass(frozen=True)
class TickPlan:
    """One pipe's ticks: links 0 .. n_links - 1, one each per ``period_ns``, ``ipg_ns`` apart."""

    target: str  # "tofino" | "tofino2"
    n_links: int
    period_ns: int
    app_id: int = 0
    pipes: tuple[int, ...] = (0,)
    port: int = field(default=-1)  # the generator's pipe-local port (-1: TICK_PORT of the target)

    def __post_init__(self) -> None:
        if self.target not in TICK_PORT:
            raise ConfigError(f"pktgen: target {self.target!r}: one of {', '.join(TICK_PORT)}")
        if self.port < 0:
            object.__setattr__(self, "port", TICK_PORT[self.target])
        if not self.pipes or any(not 0 <= p < MAX_PIPES for p in self.pipes) or len(set(self.pipes)) < len(self.pipes):
            raise ConfigError(f"pktgen: pipes {list(self.pipes)}: distinct pipes of 0..{MAX_PIPES - 1}")
        if not 1 <= self.n_links <= 1 << 16:
            raise ConfigError(f"pktgen: {self.n_links} links: a batch holds 1 to 65536 packets (packet_id, 16 bits)")
        if self.ipg_ns < 1:
            raise ConfigError(f"pktgen: {self.n_links} ticks in half of {self.period_ns} ns leave no gap between "
                              "them: a longer period or fewer links per pipe")

    @property
    def ipg_ns(self) -> int:
        return self.period_ns // (SPREAD * self.n_links)


def _aqm_bounds(p: PipelineParams) -> tuple[int, int]:
    spec = next(a for a in SELECTORS if a.selector_id == int(p.queue.aqm))
    return resolve(spec.tofino_ticks)(p) if spec.tofino_ticks else (1, 1 << 32)


def period_bounds(links: Iterable[tuple[int, PipelineParams]]) -> tuple[int, int]:
    """The periods (ns, least and most) every link allows: its queue's and its AQM's bounds, intersected. A
    ConfigError names the first link whose bounds leave nothing in common with the links before it."""
    lo, hi, seen = 1, (1 << 32) - 1, []  # timer_nanosec is 32 bits
    for link, p in links:
        for a, b in (queue_tick_period_bounds(p), _aqm_bounds(p)):
            if max(lo, a) > min(hi, b):
                raise ConfigError(
                    f"link {link} ({p.queue.aqm.name.lower()}) needs a tick period of {a}..{b} ns, the links "
                    f"before it ({', '.join(map(str, seen)) or 'none'}) {lo}..{hi} ns: one packet-generator period "
                    "per pipe, so these links cannot share a pipe (PIE's tupdate must be the same on all its links)")
            lo, hi = max(lo, a), min(hi, b)
        seen.append(link)
    return lo, hi


def tick_period(links: Iterable[tuple[int, PipelineParams]], period_ns: int | None = None) -> int:
    """The pipe's period: ``period_ns`` if every link allows it, else the longest one they all allow (the
    fewest ticks)."""
    lo, hi = period_bounds(links)
    if period_ns is None:
        return hi
    if not lo <= period_ns <= hi:
        raise ConfigError(f"pktgen: a tick period of {period_ns} ns is outside what the links allow, "
                          f"{lo}..{hi} ns")
    return period_ns


def tick_header(target: str, pipe: int, app_id: int, batch_id: int, packet_id: int) -> bytes:
    """The generator's header as it writes it over a tick's first bytes."""
    _, pipe_bits, app_bits = FIRST_BYTE_BITS[target]
    if not (0 <= pipe < 1 << pipe_bits and 0 <= app_id < 1 << app_bits):
        raise ConfigError(f"pktgen: pipe {pipe} or application {app_id} does not fit {target}'s header")
    first = (pipe << app_bits) | app_id
    return bytes([first, 0]) + batch_id.to_bytes(2, "big") + packet_id.to_bytes(2, "big")


def tick_buffer() -> bytes:
    """The buffer a tick is made from: what follows the header."""
    return bytes(FRAME_BYTES - HEADER_BYTES)


def writes(plan: TickPlan) -> list[BfrtWrite]:
    """The entries that make the generator tick every link of each pipe of ``plan``, pipe by pipe (the
    generator's buffer and applications are per pipe): the buffer, the application (timer, batch of n_links
    packets, their gap), the pipe's generator port, then the application enabled. Other pipes are left as
    they are."""
    t = TABLE_PREFIX[plan.target]
    buf = tick_buffer()
    app = {"pkt_len": len(buf), "pkt_buffer_offset": BUFFER_OFFSET, "pipe_local_source_port": plan.port,
           "increment_source_port": False, "batch_count_cfg": 0, "packets_per_batch_cfg": plan.n_links - 1,
           "ibg": 0, "ibg_jitter": 0, "ipg": plan.ipg_ns, "ipg_jitter": 0,
           "batch_counter": 0, "pkt_counter": 0, "trigger_counter": 0, "timer_nanosec": plan.period_ns}
    out = []
    for pipe in plan.pipes:
        out += [BfrtWrite(f"{t}.pkt_buffer", {"pkt_buffer_offset": BUFFER_OFFSET, "pkt_buffer_size": len(buf)},
                          {"buffer": list(buf)}, pipe=pipe),
                BfrtWrite(f"{t}.app_cfg", {"app_id": plan.app_id}, {**app, "app_enable": False},
                          "trigger_timer_periodic", pipe),
                BfrtWrite(f"{t}.port_cfg", {"dev_port": pipe << 7 | plan.port}, {"pktgen_enable": True}, pipe=pipe),
                BfrtWrite(f"{t}.app_cfg", {"app_id": plan.app_id}, {**app, "app_enable": True},
                          "trigger_timer_periodic", pipe)]
    return out


def load_schema(path: Path = SCHEMA) -> dict:
    return json.loads(Path(path).read_text())


def _check_value(where: str, spec: dict, value) -> None:
    typ, width = spec["type"], spec.get("width")
    if spec.get("repeated"):
        if not isinstance(value, list):
            raise ValueError(f"{where}: a list expected")
        for i, v in enumerate(value):
            _check_value(f"{where}[{i}]", {**spec, "repeated": False}, v)
        return
    if typ == "bool":
        ok = isinstance(value, bool)
    elif typ == "enum":
        ok = value in spec.get("choices", ())
    else:
        bits = {"uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}.get(typ, width)
        ok = isinstance(value, int) and not isinstance(value, bool) and bits is not None and 0 <= value < 1 << bits
    if not ok:
        raise ValueError(f"{where} = {value!r}: not a {typ}{f' of {width} bits' if width else ''}")


def check_writes(target: str, ws: Sequence[BfrtWrite], schema: dict | None = None) -> None:
    """Every write against the SDE's schema of the generator's tables: the table is the target's and takes
    modifications, its key is whole, every data field (or the action's) exists, is writable and fits."""
    tables = (schema or load_schema())[target]
    for w in ws:
        if w.table not in tables:
            raise ValueError(f"{w.table}: no such table on {target} ({', '.join(sorted(tables))})")
        t = tables[w.table]
        if "tableEntryMod" not in t["apis"]:
            raise ValueError(f"{w.table}: takes no entry modification")
        if set(w.key) != set(t["keys"]):
            raise ValueError(f"{w.table}: key {sorted(w.key)}, the table's {sorted(t['keys'])}")
        for k, v in w.key.items():
            _check_value(f"{w.table} key {k}", t["keys"][k], v)
        if w.action is not None and w.action not in t["actions"]:
            raise ValueError(f"{w.table}: no action {w.action}")
        fields = {**t["data"], **(t["actions"][w.action] if w.action else {})}
        for k, v in w.data.items():
            if k not in fields:
                raise ValueError(f"{w.table}: no data field {k}" + (f" (action {w.action})" if w.action else ""))
            if fields[k].get("read_only"):
                raise ValueError(f"{w.table}: {k} is read-only")
            _check_value(f"{w.table} {k}", fields[k], v)
        size = t.get("size")
        if size is not None and "app_id" in w.key and not w.key["app_id"] < size:
            raise ValueError(f"{w.table}: app_id {w.key['app_id']}: the generator has {size} applications")


def install(ws: Sequence[BfrtWrite], address: str, program: str, device_id: int = 0) -> None:
    """Send ``ws`` to a BF-Runtime server (Stratum with its BF-Runtime server, or bf_switchd), each to its pipe,
    with the SDE's Python client."""
    try:
        import bfrt_grpc.client as gc  # the SDE's (install/lib/python*/site-packages/tofino/bfrt_grpc)
    except ImportError:
        raise ConfigError("pktgen: BF-Runtime's Python client (bfrt_grpc, shipped with the SDE) is not on "
                          "PYTHONPATH; without --bfrt-address the writes are printed instead") from None
    interface = gc.ClientInterface(address, client_id=0, device_id=device_id)
    try:
        interface.bind_pipeline_config(program)
        info = interface.bfrt_info_get(program)
        for w in ws:
            target = gc.Target(device_id=device_id, pipe_id=ALL_PIPES if w.pipe is None else w.pipe)
            table = info.table_get(w.table)
            key = table.make_key([gc.KeyTuple(k, v) for k, v in w.key.items()])
            data = [gc.DataTuple(k, bool_val=v) if isinstance(v, bool)
                    else gc.DataTuple(k, bytearray(v)) if isinstance(v, list) else gc.DataTuple(k, v)
                    for k, v in w.data.items()]
            table.entry_mod(target, [key], [table.make_data(data, w.action)])
    finally:
        interface.tear_down_stream()
