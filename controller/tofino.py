"""P4Runtime entities for the TNA program (p4src/tofino/bottleneck_tna.p4) on a Tofino
driven through Stratum: the routes, each access link's entry in ``link_of``, its knobs
(``link_cfg``, ``codel_cfg``, ``pie_cfg``, ``red_cfg``), the transmit-time tables of its rate class,
CoDel's control law per interval (``codel_law``), PIE's term tables per (alpha, beta) (``pie_term_a``,
``pie_term_b``), RED's ``red_rest`` and Exp2 tables where the program has them (Tofino 2; RED in the
``tofino2-red`` build), the telemetry mirror session. (The packet generator's ports are compile-time
constants of the program, p4src/tofino/types.p4: TICK_PORT.)

A pure function of the parameters, like ``entries`` for the v1model program: tested
against the TNA P4Info (tests/test_tofino_controller.py) without a switch. Names are
the P4Info aliases of the TNA program.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import finsy as fy

from refmodel import arith
from refmodel.constants import TELEMETRY_SESSION, Aqm, Telemetry
from refmodel.params import (CodelParams, ConfigError, PieParams, PipelineParams, client_addr, client_key,
                             codel_params, pie_params)
from refmodel.codel import coarse
from refmodel.pipeline import Route
from refmodel.tofino_codel import codel_knobs
from refmodel.tofino_pie import pie_knobs, scale_rows, term_keys, term_row
from refmodel.tofino_red import exp_rows, rest_rows, tna_red_config
from refmodel.tofino_queue import link_limit_ns  # link_cfg's limit_ns: bytes, none, or a packet limit's equivalent

from .entries import u32  # two's complement, as the v1model program's signed knobs
from .rates import tx_entries  # the same transmit-time tables as the v1model program's
from . import tna_p4info  # declares the Tofino extern types: the TNA P4Info parses after this import
from .switch import BottleneckSwitch, DesiredState, SwitchTarget

LOG = logging.getLogger("iwlab.controller")
MIRROR_HEADER_BYTES = 32  # p4src/tofino/types.p4: telemetry_mirror_h, before the copy's own headers
# The copy is cut after the headers egress reads (Ethernet, IPv4 and TCP without options: 54 bytes); what
# is left of a shorter header set (UDP: 12 bytes) follows the record, and readers ignore it.
MIRROR_TRUNCATE = MIRROR_HEADER_BYTES + 54
CODEL_LAWS = 16  # p4src/tofino/types.p4: the control law's profiles (one per CoDel interval in use)
LAW_PRIORITY = 1  # codel_law's range entries never overlap
PIE_PROFILES = 8  # p4src/tofino/types.p4: PIE's term tables' profiles (one per alpha and beta in use)
SCALE_PRIORITY = 1  # pie_scale's prefixes never overlap


@dataclass(frozen=True)
class AccessLink:
    """One subscriber's access link: its id in the pipe, the client's address (None: no link_of
    entry, so every client without one, which link_of's default sends to link 0), its parameters."""

    link: int
    client: str | int | None
    params: PipelineParams


def rate_classes(links: Sequence[AccessLink]) -> dict[int, int]:
    """byte_time_q16 -> rate class: links of the same rate share the transmit-time tables."""
    out: dict[int, int] = {}
    for lk in links:
        out.setdefault(lk.params.queue.byte_time_q16, len(out))
    if len(out) > arith.RATE_CLASSES:
        raise ConfigError(f"{len(out)} distinct link rates: the TNA program holds {arith.RATE_CLASSES} rate classes")
    return out


def forwarding(routes: Mapping[int, Route]) -> list[fy.P4TableEntry]:
    return [fy.P4TableEntry("forward", match=fy.P4TableMatch(ingress_port=port),
                            action=fy.P4TableAction("route", port=r.egress, downstream=int(r.downstream)))
            for port, r in sorted(routes.items())]


def _check_link_id(link: int, n_links: int) -> int:
    if not isinstance(link, int) or isinstance(link, bool) or not 0 <= link < n_links:
        raise ConfigError(f"link = {link!r} is out of range: allowed 0..{n_links - 1} (the TNA program's N_LINKS)")
    return link


def law_profiles(links: Sequence[AccessLink]) -> dict[tuple, int]:
    """CoDel's control law (its interval's ranges) -> profile: links of one interval share the rows.
    Profile 0 is the default parameters' (codel_cfg's default action uses it)."""
    out = {codel_params().control_law: 0}
    for lk in links:
        out.setdefault(lk.params.codel.control_law, len(out))
    if len(out) > CODEL_LAWS:
        raise ConfigError(f"{len(out)} distinct CoDel intervals: the TNA program holds {CODEL_LAWS} control laws")
    return out


def law_entries(law: tuple, profile: int) -> list[fy.P4TableEntry]:
    """One profile's rows of codel_law: interval / sqrt(count) over count ranges (refmodel/params.py:
    codel_law_table), the same as the v1model program's codel_control_law, in CoDel's 16 ns units."""
    return [fy.P4TableEntry("codel_law", match=fy.P4TableMatch(law=profile, law_count=f"{lo}...{hi}"),
                            action=fy.P4TableAction("set_step", step=coarse(step)), priority=LAW_PRIORITY)
            for lo, hi, step in law]


def codel_action(c: CodelParams, bucket_ns: int, limit_ns: int, profile: int) -> fy.P4TableAction:
    k = codel_knobs(c, bucket_ns, limit_ns, profile)
    return fy.P4TableAction("set_codel", below_busy=u32(k.below_busy), fa_offset=u32(k.fa_offset),
                            recent_offset=u32(k.recent_offset), law=k.law)


def pie_profiles(links: Sequence[AccessLink]) -> dict[tuple[int, int], int]:
    """PIE's (alpha, beta) -> profile of the term tables: links of the same coefficients share the rows.
    Profile 0 is the default parameters' (pie_cfg's default action uses it)."""
    d = pie_params()
    out = {(d.alpha_q48, d.beta_q48): 0}
    for lk in links:
        if lk.params.queue.aqm == Aqm.PIE:
            out.setdefault((lk.params.pie.alpha_q48, lk.params.pie.beta_q48), len(out))
    if len(out) > PIE_PROFILES:
        raise ConfigError(f"{len(out)} distinct PIE alpha/beta pairs: the TNA program holds {PIE_PROFILES}")
    return out


def term_entries(alpha_q48: int, beta_q48: int, profile: int) -> list[fy.P4TableEntry]:
    """One profile's rows of pie_term_a and pie_term_b (refmodel/tofino_pie.py: term_row): the scaled
    product of every sign, exponent and mantissa a delay difference can take; a row of 0 is the default."""
    out = []
    for table, action, k in (("pie_term_a", "set_ta", alpha_q48), ("pie_term_b", "set_tb", beta_q48)):
        for e_key, m in term_keys():
            for neg in (0, 1):
                v = term_row(k, neg, e_key, m)
                if v:
                    out.append(fy.P4TableEntry(table, match=fy.P4TableMatch(profile=profile, neg=neg, e=e_key, m=m),
                                               action=fy.P4TableAction(action, t=u32(v))))
    return out


def scale_entries() -> list[fy.P4TableEntry]:
    """pie_scale's rows, the same for every link: p's ranges (the RFC's scale of the step, and the 2 % cap
    from p = 0.1) as ternary prefixes (refmodel/tofino_pie.py: scale_rows)."""
    return [fy.P4TableEntry("pie_scale", match=fy.P4TableMatch(p=f"{value}/&{mask}"), priority=SCALE_PRIORITY,
                            action=fy.P4TableAction("set_scale", sh_key=key, cap_q31=cap))
            for value, mask, key, cap in scale_rows()]


RED_EXP_TABLES = ("exp_half.red_exp", "exp_dec.red_exp", "exp_dstep.red_exp", "exp_step.red_exp")


def red_table_entries() -> list[fy.P4TableEntry]:
    """RED's tables that are the same for every link: red_rest, Log2(1 - count1 p_b) from Log2(count1 p_b) >> 2
    (refmodel/tofino_red.py: rest_rows), and the four Exp2 tables (exp_rows)."""
    out = [fy.P4TableEntry("red_rest", match=fy.P4TableMatch(cp4=k),
                           action=fy.P4TableAction("set_rest", rest=u32(v))) for k, v in rest_rows()]
    rows = exp_rows()
    for table in RED_EXP_TABLES:   # one action per use: its P4Info alias is the use's ("exp_half.set_exp")
        action = f"{table.split('.')[0]}.set_exp"
        out += [fy.P4TableEntry(table, match=fy.P4TableMatch(l4=k), action=fy.P4TableAction(action, v=v))
                for k, v in rows]
    return out


def pie_action(p: PieParams, mtu_ns: int, profile: int) -> fy.P4TableAction:
    k = pie_knobs(p, mtu_ns)
    return fy.P4TableAction("set_pie", target=k.target_ns, half=k.half_ns, tupdate=k.tupdate_ns,
                            max_burst=k.max_burst_ns, mtu2=k.mtu2_ns, profile=profile)


def link_entries(lk: AccessLink, rate_class: int, n_links: int, law: int | None = None,
                 pie: int | None = None, red: bool = False) -> list[fy.P4TableEntry]:
    """The link's rows in link_of (its client, and its rate class: p4src/tofino/link.p4 says why it is
    there), link_cfg, codel_cfg (its CoDel knobs, with control-law profile ``law``; None: the program
    has no CoDel), pie_cfg (a PIE link's knobs, with term profile ``pie``; None: the program has no
    PIE) and red_cfg (a RED link's knobs; ``red``: the program has RED). A link without a client is
    link_of's default: ``link_of_default``."""
    link = _check_link_id(lk.link, n_links)
    q, c = lk.params.queue, lk.params.codel
    if q.limit_ns >= 1 << 31 or q.bucket_ns >= 1 << 31:
        raise ConfigError(f"link {link}: buffer and bucket must drain in under 2^31 ns (serial time)")
    try:
        limit_ns = link_limit_ns(q)
    except ConfigError as e:
        raise ConfigError(f"link {link}: {e}") from None
    if q.limit_pkts:
        LOG.warning("link %d: a buffer of %d packets becomes %d ns (the TNA program has byte limits only: it "
                    "decides as the packet limit while frames are full-size; docs/tofino.md)", link, q.limit_pkts,
                    limit_ns)
    supported = ((Aqm.FIFO,) + ((Aqm.RED,) if red else ()) + ((Aqm.CODEL,) if law is not None else ())
                 + ((Aqm.PIE,) if pie is not None else ()))
    if q.aqm == Aqm.IWA:  # p4src/tofino/iwa.p4 compiles only with pass 1's tail (the grant) cut
        raise ConfigError(f"link {link}: iwa cannot be installed on a Tofino yet: the tofino2-iwa build compiles "
                          "without its grant, so it shapes no window (docs/tofino.md, \"IWA on Tofino 2\")")
    if q.aqm not in supported:
        raise ConfigError(f"link {link}: {q.aqm.name.lower()} is not in this TNA program (it has "
                          f"{', '.join(a.name.lower() for a in supported)}; docs/tofino.md)")
    match = fy.P4TableMatch(link=link)
    out = []
    if lk.client is not None:
        out.append(fy.P4TableEntry("link_of", match=fy.P4TableMatch(client=client_addr(lk.client)),
                                   action=fy.P4TableAction("set_link", link=link, rate_class=rate_class)))
    if law is not None:
        try:
            out.append(fy.P4TableEntry("codel_cfg", match=match, action=codel_action(c, q.bucket_ns, limit_ns, law)))
        except ConfigError as e:
            if q.aqm == Aqm.CODEL:
                raise ConfigError(f"link {link}: {e}") from None
            # a link without CoDel keeps codel_cfg's default knobs (they are never used)
    if pie is not None and q.aqm == Aqm.PIE:
        try:
            out.append(fy.P4TableEntry("pie_cfg", match=match, action=pie_action(lk.params.pie, q.mtu_ns, pie)))
        except ConfigError as e:
            raise ConfigError(f"link {link}: {e}") from None
    if red and q.aqm == Aqm.RED:
        try:
            knobs = {k: u32(v) for k, v in tna_red_config(lk.params.red, q.byte_time_q16).items()}
        except ConfigError as e:
            raise ConfigError(f"link {link}: {e}") from None
        out.append(fy.P4TableEntry("red_cfg", match=match, action=fy.P4TableAction("set_red", **knobs)))
    if q.telemetry not in (Telemetry.OFF, Telemetry.ALL):  # link.p4's set_link_cfg: one bit
        raise ConfigError(f"link {link}: telemetry = {q.telemetry.name.lower()!r}: the TNA program reports every "
                          "packet or none ('all' or 'off')")
    return out + [
        fy.P4TableEntry("link_cfg", match=match, action=fy.P4TableAction(
            "set_link_cfg", aqm=int(q.aqm), ecn=int(q.ecn), telemetry=int(q.telemetry), bucket_ns=q.bucket_ns,
            limit_ns=limit_ns, mtu_ns=q.mtu_ns)),
    ]


def telemetry_session(monitor_port: int) -> fy.P4CloneSessionEntry:
    """The I2E mirror session: the copy carries the mirror header and the packet's headers, truncated."""
    return fy.P4CloneSessionEntry(TELEMETRY_SESSION, packet_length_bytes=MIRROR_TRUNCATE,
                                  replicas=[(monitor_port, 1)])


def all_entries(routes: Mapping[int, Route], links: Sequence[AccessLink], n_links: int, codel: bool = False,
                pie: bool = False, red: bool = False) -> list[fy.P4TableEntry]:
    """Every table entry to insert for these links, the transmit-time tables, control laws, PIE's term
    tables and RED's rest and Exp2 tables before the links that use them (``codel``, ``pie``, ``red``: the program has
    CoDel, PIE, RED: ``has_codel``, ``has_pie``, ``has_red``). (link_of's default action, for the link without
    a client, is ``link_of_default``.)"""
    if len({lk.link for lk in links}) != len(links):
        raise ConfigError("two access links with the same id")
    if sum(lk.client is None for lk in links) > 1:
        raise ConfigError("more than one access link without a client: only one can be link_of's default")
    classes = rate_classes(links)
    laws = law_profiles(links) if codel else {}
    terms = pie_profiles(links) if pie else {}
    out = forwarding(routes)
    for bt, cls in classes.items():
        out += tx_entries(bt, cls)
    for law, profile in laws.items():
        out += law_entries(law, profile)
    if pie:
        out += scale_entries()
    for (alpha, beta), profile in terms.items():
        out += term_entries(alpha, beta, profile)
    if red and any(lk.params.queue.aqm == Aqm.RED for lk in links):
        out += red_table_entries()
    for lk in links:
        pp = lk.params.pie
        out += link_entries(lk, classes[lk.params.queue.byte_time_q16], n_links,
                            laws[lk.params.codel.control_law] if codel else None,
                            terms.get((pp.alpha_q48, pp.beta_q48), 0) if pie else None, red)
    return out


def link_of_default(links: Sequence[AccessLink]) -> fy.P4TableEntry:
    """link_of's default action: every client without an entry belongs to the link without a client
    (link 0 in the lab), with that link's rate class."""
    classes = rate_classes(links)
    default = next((lk for lk in links if lk.client is None), None)
    if default is None:
        return fy.P4TableEntry("link_of", action=fy.P4TableAction("set_link", link=0, rate_class=0),
                               is_default_action=True)
    return fy.P4TableEntry("link_of", is_default_action=True, action=fy.P4TableAction(
        "set_link", link=default.link, rate_class=classes[default.params.queue.byte_time_q16]))


def default_codel() -> fy.P4TableAction:
    """codel_cfg's default action (p4src/tofino/link.p4), as refmodel derives it: RFC 8289's target and
    interval, no bucket, law profile 0 (the check of serial time with no buffer)."""
    return codel_action(codel_params(), 0, 0, 0)


def has_codel(p4info) -> bool:
    """Whether the compiled program has CoDel (Tofino 2's build does; Tofino 1's has the buffer only)."""
    return any(t.preamble.name.endswith("codel_law") for t in p4info.tables)


def has_pie(p4info) -> bool:
    """Whether the compiled program has PIE (Tofino 2's build does)."""
    return any(t.preamble.name.endswith("pie_cfg") for t in p4info.tables)


def has_red(p4info) -> bool:
    """Whether the compiled program has RED (the tofino2-red build does)."""
    return any(t.preamble.name.endswith("red_cfg") for t in p4info.tables)


def n_links(p4info) -> int:
    """N_LINKS of the compiled program: the size of its per-link queue register (a Tofino extern)."""
    return tna_p4info.extern_sizes(p4info)["q_tat"]


def access_links(state: DesiredState) -> list[AccessLink]:
    """The configuration's links ([links.N], ``DesiredState.links`` and ``clients``) as the TNA program takes
    them: one client per link (``link_of`` gives a client's link and rate class); a link with its own
    parameters and no client is ``link_of``'s default. Link 0 without either is the lab's, added by the
    switch."""
    by_link: dict[int, list[str | int]] = {}
    for client, link in state.clients.items():
        if client_key(client).version != 4:
            raise ConfigError(f"links.{link}: the TNA program keys its clients by IPv4 address, not {client}")
        by_link.setdefault(link, []).append(client)
    out = []
    for link in sorted(set(by_link) | set(state.links)):
        cl = by_link.get(link, [None])
        if len(cl) > 1:
            raise ConfigError(f"links.{link}: the TNA program maps one client to a link, not {len(cl)}")
        params = state.links.get(link, state.params)
        if params is not None:
            out.append(AccessLink(link, cl[0], params))
    return out


def with_lab_link(params: PipelineParams | None, links: Sequence[AccessLink]) -> list[AccessLink]:
    """``links`` and, unless one of them is link 0, link 0 with ``params`` (the lab's link: ``link_of``'s default
    sends every client without an entry there)."""
    own = any(lk.link == 0 for lk in links)
    return ([] if own or params is None else [AccessLink(0, None, params)]) + list(links)


class TnaBottleneckSwitch(BottleneckSwitch):
    """``BottleneckSwitch`` for the TNA program on a Tofino (Stratum): the same desired-state life cycle
    (applied at every connection), with the TNA program's entries. The lab's one link is link 0, the
    default of ``link_of``; ``links`` adds more."""

    def __init__(self, target: SwitchTarget, state: DesiredState, links: Sequence[AccessLink] = ()) -> None:
        super().__init__(target, state)
        self.links = tuple(links)
        self.check()

    def check(self) -> None:
        """Every entry this switch will write, built against the compiled program's P4Info (its N_LINKS and
        whether it has CoDel, PIE and RED) before connecting: a link out of range or an AQM the program lacks fails
        here with a ConfigError naming the link, not later inside the connection's task."""
        path = Path(self.target.p4info)
        if self.state.params is None or not path.is_file():
            return
        p4info = tna_p4info.load(path)
        all_entries(self.state.routes, self._links(), n_links(p4info), has_codel(p4info), has_pie(p4info),
                    has_red(p4info))

    def _links(self) -> list[AccessLink]:
        return with_lab_link(self.state.params, self.links)

    async def apply_all(self, sw: fy.Switch) -> None:
        st = self.state
        await sw.delete_all()
        links = self._links()
        p4info = sw.p4info.p4info
        await sw.insert(all_entries(st.routes, links, n_links(p4info), has_codel(p4info), has_pie(p4info),
                                    has_red(p4info)))
        await sw.modify([link_of_default(links)])
        if st.monitor_port is not None:
            await sw.insert([telemetry_session(st.monitor_port)])

    async def reconfigure(self, params: PipelineParams) -> None:
        """Link 0's new parameters: everything is written again (a new rate may need a new rate class)."""
        self.state.params = params
        await self.apply_all(self.sw)
