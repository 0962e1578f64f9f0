"""P4Runtime entities for one bottleneck configuration: a pure function of the parameters.

``refmodel.params`` turns human units into the data plane's integers (and
rejects what the P4 fields cannot hold); this module turns those integers into
finsy entities. Nothing here talks to a switch, so it is tested without one.
Table, action and parameter names are the P4Info aliases of p4src/bottleneck.p4.

Access links (issue 12, item 3): the config tables are keyed by the link.
``config_defaults`` and ``lookup_tables`` write what every link without entries
of its own runs on (the tables' default actions, and range entries with the
link wildcarded): the single-link lab writes only these. ``link_entries``
gives one link its own rate, buffer, AQM and knobs (an entry keyed by the link
in every config table, its own range entries at a higher priority) and maps
its clients to it (``link_of``).

Rate classes (controller/rates.py): ``bottleneck_cfg`` names the transmit-time
tables of the link's rate by a class number; the caller places the rate in a
class (``RateClasses.place``) and passes that number here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import finsy as fy

from refmodel.aqms import SELECTORS, resolve
from refmodel.constants import TELEMETRY_SESSION
from refmodel import arith
from refmodel.arith import RATE_CLASSES
from refmodel.params import ClientKey, PipelineParams, check_field, check_link, client_key, complete_ranges
from refmodel.pipeline import Route

# the controller's lookup tables, every entry with a priority (rewritten whole on reconfigure), each AQM's
# (refmodel/aqms/): two range tables and PIE's product tables (p4src/include/mantissa.p4: m * k for every m)
RANGE_TABLES = tuple(t for a in SELECTORS for t in a.lookup_tables)
CONFIG_TABLES = (*(a.config_table for a in SELECTORS if a.config_table), "bottleneck_cfg")  # the selector last
DEFAULT_PRIORITY = 1  # range entries of every link without its own (link wildcarded)
LINK_PRIORITY = 2  # a link's own range entries: they win over the wildcarded ones
NO_DECAY = 0  # red_idle_decay's const default action: log2 of the factor 1


def forwarding(routes: Mapping[int, Route]) -> list[fy.P4TableEntry]:
    return [
        fy.P4TableEntry(
            "forward",
            match=fy.P4TableMatch({"standard_metadata.ingress_port": port}),
            action=fy.P4TableAction("route", port=r.egress, downstream=int(r.downstream)),
        )
        for port, r in sorted(routes.items())
    ]


def telemetry_session(monitor_port: int) -> fy.P4CloneSessionEntry:
    return fy.P4CloneSessionEntry(TELEMETRY_SESSION, replicas=[(monitor_port, 1)])


def u32(v: int) -> int:
    """A signed value (RED's logs, the TNA CoDel's offsets) as the 32-bit two's complement its P4 field holds."""
    return v & 0xFFFFFFFF


def _ranges(table: str, key: str, action: str, arg: str, rows: Iterable[tuple[int, int, int]], priority: int,
            link: int | None = None) -> list[fy.P4TableEntry]:
    """Range entries (first key, last key, value); with ``link``, matched to that link only."""
    def match(lo: int, hi: int) -> fy.P4TableMatch:
        m = {key: f"{lo}...{hi}"}
        return fy.P4TableMatch(m if link is None else {"link": link, **m})

    return [fy.P4TableEntry(table, match=match(lo, hi), action=fy.P4TableAction(action, **{arg: v}),
                            priority=priority) for lo, hi, v in rows]


def product_rows(table: str, action: str, k: int, key: dict[str, int], priority: int = 0
                 ) -> list[fy.P4TableEntry]:
    """One constant's product table (p4src/include/mantissa.p4): m * k for every mantissa m, the table's other
    key fields ``key`` (a link, a rate class, or none: the link wildcarded) (refmodel/arith.py: mul_rows)."""
    return [fy.P4TableEntry(table, match=fy.P4TableMatch({**key, "m": m}), action=fy.P4TableAction(action, product=v),
                            priority=priority)
            for m, v in enumerate(arith.mul_rows(k))]


def _pie_products(p: PipelineParams, priority: int, link: int | None = None) -> list[fy.P4TableEntry]:
    key = {} if link is None else {"link": link}
    return (product_rows("pie_alpha_mul", "set_alpha_m", p.pie.alpha_q48, key, priority)
            + product_rows("pie_beta_mul", "set_beta_m", p.pie.beta_q48, key, priority))


def law_default(p: PipelineParams) -> int:
    """CoDel's step for counts beyond its control law's entries (codel.control_law_step's)."""
    c = p.codel
    return c.control_law[-1][2] if c.control_law else c.interval_ns


def _idle_rows(p: PipelineParams) -> list[tuple[int, int, int]]:
    return [(lo, hi, u32(log_factor)) for lo, hi, log_factor in p.red.idle_decay]


def lookup_tables(p: PipelineParams) -> list[fy.P4TableEntry]:
    """Lookup entries of every link without its own (the link wildcarded): RED's idle decay, CoDel's
    control law, PIE's products."""
    return (_ranges("red_idle_decay", "idle_key", "set_decay", "log_factor", _idle_rows(p), DEFAULT_PRIORITY)
            + _ranges("codel_control_law", "law_count", "set_step", "step_ns", p.codel.control_law,
                      DEFAULT_PRIORITY)
            + _pie_products(p, DEFAULT_PRIORITY))


def link_lookup_tables(link: int, p: PipelineParams) -> list[fy.P4TableEntry]:
    """One link's own lookup entries, over every key (``complete_ranges``: the keys its range tables leave out
    get what the tables' misses give, and the product tables have a row for every mantissa, so none falls
    through to the wildcarded entries of other links)."""
    check_link(link)
    idle = complete_ranges(_idle_rows(p), NO_DECAY)
    law = complete_ranges(p.codel.control_law, law_default(p))
    return (_ranges("red_idle_decay", "idle_key", "set_decay", "log_factor", idle, LINK_PRIORITY, link)
            + _ranges("codel_control_law", "law_count", "set_step", "step_ns", law, LINK_PRIORITY, link)
            + _pie_products(p, LINK_PRIORITY, link))


# Each AQM's action in its config table (its spec in refmodel/aqms/ names it: ``entries``).
def red_action(p: PipelineParams) -> fy.P4TableAction:
    r = p.red
    return fy.P4TableAction("set_red", log_wq=u32(r.log_wq), thmin_ns=r.thmin_ns, thmax_ns=r.thmax_ns,
                            log_slope=u32(r.log_slope), mean_pktsize=r.mean_pktsize, log_mps=u32(r.log_mps))


def codel_action(p: PipelineParams) -> fy.P4TableAction:
    return fy.P4TableAction("set_codel", target_ns=p.codel.target_ns, interval_ns=p.codel.interval_ns)


def pie_action(p: PipelineParams) -> fy.P4TableAction:
    pi = p.pie
    return fy.P4TableAction("set_pie", target_ns=pi.target_ns, tupdate_ns=pi.tupdate_ns, max_burst_ns=pi.max_burst_ns)


def iwa_action(p: PipelineParams) -> fy.P4TableAction:
    i = p.iwa
    return fy.P4TableAction("set_iwa", target_ns=i.target_ns, mss_bytes=i.mss_bytes, hold_ns=i.hold_ns,
                            age_ns=i.age_ns, floor_cap_ns=i.floor_cap_ns, budget_cap_ns=i.budget_cap_ns)


def _config_actions(p: PipelineParams, rate_class: int) -> dict[str, fy.P4TableAction]:
    """The config tables' actions for ``p`` (its rate's tables in ``rate_class``), by table, in CONFIG_TABLES's
    order: every AQM's knobs (``config_table`` and ``entries`` of its spec), then the link's selector."""
    check_field("rate_class", rate_class, hi=RATE_CLASSES - 1)
    q = p.queue
    out = {a.config_table: resolve(a.entries)(p) for a in SELECTORS if a.config_table}
    out["bottleneck_cfg"] = fy.P4TableAction("set_bottleneck", rate_class=rate_class, bucket_ns=q.bucket_ns,
                                             limit_ns=q.limit_ns, limit_pkts=q.limit_pkts, mtu_ns=q.mtu_ns,
                                             aqm=int(q.aqm), ecn=int(q.ecn), telemetry=int(q.telemetry))
    return out


def config_defaults(p: PipelineParams, *, rate_class: int) -> list[fy.P4TableEntry]:
    """Default actions of the config tables (every link without entries of its own), AQM parameters first
    and the selector (bottleneck_cfg) last, so a switch of AQM finds its knobs set."""
    out = []
    for table, action in _config_actions(p, rate_class).items():
        out.append(fy.P4TableEntry(table, action=action, is_default_action=True))
        if table == "codel_cfg":
            out.append(fy.P4TableEntry("codel_control_law", action=fy.P4TableAction("set_step", step_ns=law_default(p)),
                                       is_default_action=True))
    return out


def link_config(link: int, p: PipelineParams, *, rate_class: int) -> list[fy.P4TableEntry]:
    """One link's entries in the config tables (keyed by the link), the selector last as in config_defaults."""
    check_link(link)
    return [fy.P4TableEntry(table, match=fy.P4TableMatch(link=link), action=action)
            for table, action in _config_actions(p, rate_class).items()]


def link_of(clients: Mapping[int | str | ClientKey, int]) -> list[fy.P4TableEntry]:
    """Each client to its link: an IPv4 client's address (an int or a dotted quad) in ``link_of``, an IPv6 client's
    prefix in ``link_of6`` (longest prefix)."""
    out = []
    for key, link in sorted((client_key(c), lk) for c, lk in clients.items()):
        action = fy.P4TableAction("set_link", link=check_link(link))
        if key.version == 4:
            out.append(fy.P4TableEntry("link_of", match=fy.P4TableMatch(client_addr=key.addr), action=action))
        else:
            out.append(fy.P4TableEntry("link_of6", match=fy.P4TableMatch(client_addr6=str(key)), action=action))
    return out


def link_entries(link: int, p: PipelineParams, clients: Iterable[int | str] = (), *, rate_class: int
                 ) -> list[fy.P4TableEntry]:
    """Everything that makes ``link`` a link of its own: its range entries, its config entries (the selector
    last) and, last of all, its clients' ``link_of`` entries, so no packet reaches the link before it is
    configured. Insert them, after its rate class's tables; ``link_of`` of a client of another link is a
    modify."""
    return (link_lookup_tables(link, p) + link_config(link, p, rate_class=rate_class)
            + link_of({c: link for c in clients}))


def iwa_knobs(p: PipelineParams, link: int | None = None) -> list[fy.P4TableEntry]:
    """What the closed-loop tuner rewrites when its decision changes and the link rate does not: IWA's
    config and CoDel's (IWA's control of established flows; its control law depends on the interval only),
    in the default actions or (``link``) in that link's entries."""
    every = config_defaults(p, rate_class=0) if link is None else link_config(link, p, rate_class=0)
    return [e for e in every if e.table_id in ("codel_cfg", "iwa_cfg")]
