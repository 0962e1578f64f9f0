"""A BMv2 bottleneck switch driven over P4Runtime (finsy).

``BottleneckSwitch`` keeps the *desired* state (pipeline, routes, telemetry
session, AQM parameters) and applies all of it whenever the P4Runtime channel
comes up: at the first connection and after every reconnection, so a switch
that restarts is re-pushed and re-configured without anyone asking, and the
log says so. finsy handles arbitration (device id, election id, primary or
backup role) and reconnects with backoff.

Access links: ``DesiredState.links`` gives links their own parameters and
``clients`` maps client addresses to links (``entries.link_entries``); both
empty, the switch gets exactly the single-link configuration.

Rates: every configuration names the rate class holding its rate's
transmit-time tables (controller/rates.py). The switch object places each rate
in a class and writes the class's tables before the configuration that uses it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import finsy as fy

from refmodel.params import PipelineParams, client_key
from refmodel.pipeline import Route

from . import entries
from .rates import PRODUCT_TABLES, RateClasses, contents, rate_key

LOG = logging.getLogger("iwlab.controller")

COUNTER = "class_decision"
LINK_COUNTER = "link_class_decision"


async def _insert_or_modify(sw: fy.Switch, entity) -> None:
    """Insert ``entity``; if the switch says it already exists, modify it instead. BMv2 now and then keeps a
    clone session through ``delete_all`` (seen as 'Clone session id already exists' when a second controller
    process applied its state), and the session must end up as configured either way."""
    try:
        await sw.insert([entity])
    except fy.P4ClientError as e:
        if not e.details or any(d.canonical_code != fy.GRPCStatusCode.ALREADY_EXISTS for d in e.details.values()):
            raise
        LOG.info("%s already present: modified instead", type(entity).__name__)
        await sw.modify([entity])


@dataclass
class DesiredState:
    params: PipelineParams | None  # None: connect without writing anything; else every link's default
    routes: Mapping[int, Route]
    monitor_port: int | None = None
    links: dict[int, PipelineParams] = field(default_factory=dict)  # links with parameters of their own
    clients: dict[int | str, int] = field(default_factory=dict)  # client -> link (link_of, link_of6)


@dataclass
class SwitchTarget:
    address: str = "127.0.0.1:9559"
    device_id: int = 1
    election_id: int = 10
    p4info: Path = Path("build/bottleneck.p4info.txtpb")
    p4blob: Path = Path("build/bottleneck.json")
    tls: fy.GRPCCredentialsTLS | None = None
    force_pipeline: bool = False  # push the pipeline even if the switch runs it (resets all state)


class BottleneckSwitch:
    def __init__(self, target: SwitchTarget, state: DesiredState) -> None:
        self.target = target
        self.state = state
        self.applies = 0  # how many times the full state was (re)applied
        self.rates = RateClasses()
        self.class_of: dict[int | None, int] = {}  # the default (None) and each link -> its rate class
        self._classes_known = False  # True once this object wrote (apply_all) or read the tx tables
        self._applied = asyncio.Event()
        opts = fy.SwitchOptions(
            p4info=target.p4info, p4blob=target.p4blob, device_id=target.device_id,
            initial_election_id=target.election_id, channel_credentials=target.tls, p4force=target.force_pipeline,
            ready_handler=self._on_ready,
        )
        self.sw = fy.Switch("bottleneck", target.address, opts)

    async def _on_ready(self, sw: fy.Switch) -> None:
        if self.state.params is None:  # an observer (e.g. reading counters): writes nothing
            self._applied.set()
            return
        if not sw.is_primary:
            LOG.info("connected as backup (election id %d): not writing", self.target.election_id)
            return
        again = self.applies > 0
        await self.apply_all(sw)
        self.applies += 1
        LOG.info("%s pipeline and state to %s (aqm=%s)", "re-applied" if again else "applied",
                 self.target.address, self.state.params.queue.aqm.name.lower())
        self._applied.set()

    async def _rate_class(self, sw: fy.Switch, params: PipelineParams, owner: int | None) -> int:
        """The rate class for ``owner``'s (None: the default's) new parameters, its tables written."""
        if not self._classes_known:
            await self._learn_rate_classes(sw)
        cls, op, tables = self.rates.place(rate_key(params), self.class_of.values())
        if op == "insert":
            await sw.insert(tables)
        elif op == "modify":
            await sw.modify(tables)
        self.class_of[owner] = cls
        return cls

    async def _learn_rate_classes(self, sw: fy.Switch) -> None:
        """An observer changing a link at run time did not write the switch: it reads which rate classes the
        switch holds, to reuse one of the same numbers and overwrite none."""
        found: dict[int, list[fy.P4TableEntry]] = {}
        for table in ("tx_time_hi", "tx_time_lo", *(t for t, _ in PRODUCT_TABLES)):
            async for e in sw.read(fy.P4TableEntry(table)):
                found.setdefault(e.match["rate_class"], []).append(e)
        self.rates.learn({c: contents(es) for c, es in found.items()})
        self._classes_known = True

    async def apply_all(self, sw: fy.Switch) -> None:
        st = self.state
        await sw.delete_all()
        self.rates.forget()
        self.class_of.clear()
        self._classes_known = True
        await sw.insert(entries.forwarding(st.routes))
        if st.monitor_port is not None:
            await _insert_or_modify(sw, entries.telemetry_session(st.monitor_port))
        await sw.insert(entries.lookup_tables(st.params))
        cls = await self._rate_class(sw, st.params, None)
        await sw.modify(entries.config_defaults(st.params, rate_class=cls))
        for link, lp in sorted(st.links.items()):
            cls = await self._rate_class(sw, lp, link)
            await sw.insert(entries.link_lookup_tables(link, lp) + entries.link_config(link, lp, rate_class=cls))
        if st.clients:  # last: no packet reaches a link before it is configured
            await sw.insert(entries.link_of(st.clients))

    async def wait_applied(self, timeout: float | None = 30.0) -> None:
        await asyncio.wait_for(self._applied.wait(), timeout)

    async def reconfigure(self, params: PipelineParams) -> None:
        """Change the AQM or any parameter of every link without its own at run time (no recompilation)."""
        self.state.params = params
        await self.sw.delete_many([fy.P4TableEntry(t) for t in entries.RANGE_TABLES])
        await self.sw.insert(entries.lookup_tables(params))
        for link, lp in sorted(self.state.links.items()):  # the links' own range entries went with the rest
            await self.sw.insert(entries.link_lookup_tables(link, lp))
        cls = await self._rate_class(self.sw, params, None)
        await self.sw.modify(entries.config_defaults(params, rate_class=cls))

    async def configure_link(self, link: int, params: PipelineParams | None) -> None:
        """Give ``link`` parameters of its own at run time, or (None) take them away: it then runs on the
        defaults again. Its state (registers) is kept, as with ``reconfigure``."""
        old = self.state.links.get(link)
        if old is not None:
            await self.sw.delete(entries.link_lookup_tables(link, old))
        if params is None:
            if old is not None:
                await self.sw.delete(entries.link_config(link, old, rate_class=self.class_of.pop(link)))
                del self.state.links[link]
            return
        await self.sw.insert(entries.link_lookup_tables(link, params))
        config = entries.link_config(link, params, rate_class=await self._rate_class(self.sw, params, link))
        await (self.sw.modify(config) if old is not None else self.sw.insert(config))
        self.state.links[link] = params

    async def assign(self, client: int | str, link: int | None) -> None:
        """Put ``client`` on ``link`` at run time (a ``link_of`` entry), or (None) back on link 0."""
        addr = client_key(client)
        had = {client_key(c): lk for c, lk in self.state.clients.items()}
        entry = entries.link_of({addr: link if link is not None else 0})
        if link is None:
            if addr in had:
                await self.sw.delete(entry)
        else:
            await (self.sw.modify(entry) if addr in had else self.sw.insert(entry))
        self.state.clients = {a: lk for a, lk in had.items() if a != addr}
        if link is not None:
            self.state.clients[addr] = link

    async def set_iwa_knobs(self, params: PipelineParams, link: int | None = None) -> None:
        """Write only what the tuner changes between rate changes (``entries.iwa_knobs``): the defaults', or
        (``link``) that link's own entries, which ``configure_link`` wrote."""
        if link is None:
            self.state.params = params
        else:
            if link not in self.state.links:
                raise ValueError(f"link {link} has no parameters of its own to tune (configure_link first)")
            self.state.links[link] = params
        await self.sw.modify(entries.iwa_knobs(params, link))

    async def read_counters(self, counter: str = COUNTER) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of the class x decision counter (all links), or of LINK_COUNTER (index
        link * COUNTER_SLOTS + class * 4 + decision)."""
        out = {}
        async for c in self.sw.read(fy.P4CounterEntry(counter)):
            if c.data is not None:
                out[c.index] = (c.data.packet_count, c.data.byte_count)
        return out

    async def __aenter__(self) -> "BottleneckSwitch":
        await self.sw.__aenter__()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.sw.__aexit__(*exc)


async def connect_with_backoff(make, attempts: int = 8, first_delay: float = 0.25, log=LOG):
    """Enter ``make()`` (an async context manager), retrying with exponential backoff."""
    delay = first_delay
    for i in range(1, attempts + 1):
        ctx = make()
        try:
            return ctx, await ctx.__aenter__()
        except Exception as e:  # noqa: BLE001 - any failure to connect is retried
            if i == attempts:
                raise ConnectionError(f"switch unreachable after {attempts} attempts: {e}") from e
            log.warning("switch not reachable (attempt %d/%d): %s; retrying in %.2fs", i, attempts, e, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
    raise AssertionError("unreachable")
