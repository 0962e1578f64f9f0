"""P4Runtime entities for one bottleneck configuration: a pure function of the parameters.

``refmodel.params`` turns human units into the data plane's integers (and
rejects what the P4 fields cannot hold); this module turns those integers into
finsy entities. Nothing here talks to a switch, so it is tested without one.
Table, action and parameter names are the P4Info aliases of p4src/bottleneck.p4.
"""

from __future__ import annotations

from collections.abc import Mapping

import finsy as fy

from refmodel.constants import TELEMETRY_SESSION
from refmodel.params import PipelineParams
from refmodel.pipeline import Route

RANGE_TABLES = ("red_idle_decay", "codel_control_law")


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


def lookup_tables(p: PipelineParams) -> list[fy.P4TableEntry]:
    """Range entries: RED's idle decay and CoDel's control law."""
    out = [
        fy.P4TableEntry("red_idle_decay", match=fy.P4TableMatch(idle_key=f"{lo}...{hi}"),
                        action=fy.P4TableAction("set_decay", factor_q24=f), priority=1)
        for lo, hi, f in p.red.idle_decay
    ]
    out += [
        fy.P4TableEntry("codel_control_law", match=fy.P4TableMatch(law_count=f"{lo}...{hi}"),
                        action=fy.P4TableAction("set_step", step_ns=step), priority=1)
        for lo, hi, step in p.codel.control_law
    ]
    return out


def config_defaults(p: PipelineParams) -> list[fy.P4TableEntry]:
    """Default actions of the keyless config tables, AQM parameters first and
    the selector (bottleneck_cfg) last, so a switch of AQM finds its knobs set."""
    q, r, c, pi, i = p.queue, p.red, p.codel, p.pie, p.iwa
    law_default = c.control_law[-1][2] if c.control_law else c.interval_ns

    def default(table: str, action: str, **params: int) -> fy.P4TableEntry:
        return fy.P4TableEntry(table, action=fy.P4TableAction(action, **params), is_default_action=True)

    return [
        default("red_cfg", "set_red", wq_q24=r.wq_q24, thmin_ns=r.thmin_ns, thmax_ns=r.thmax_ns,
                slope_q56=r.slope_q56, mean_pktsize=r.mean_pktsize),
        default("codel_cfg", "set_codel", target_ns=c.target_ns, interval_ns=c.interval_ns),
        default("codel_control_law", "set_step", step_ns=law_default),
        default("pie_cfg", "set_pie", target_ns=pi.target_ns, tupdate_ns=pi.tupdate_ns, alpha_q48=pi.alpha_q48,
                beta_q48=pi.beta_q48, max_burst_ns=pi.max_burst_ns),
        default("iwa_cfg", "set_iwa", target_ns=i.target_ns, mss_bytes=i.mss_bytes, payload_ns_q16=i.payload_ns_q16,
                bytes_per_ns_q32=i.bytes_per_ns_q32, hold_ns=i.hold_ns, age_ns=i.age_ns),
        default("bottleneck_cfg", "set_bottleneck", byte_time_q16=q.byte_time_q16, bucket_ns=q.bucket_ns,
                limit_ns=q.limit_ns, limit_pkts=q.limit_pkts, mtu_ns=q.mtu_ns, aqm=int(q.aqm), ecn=int(q.ecn),
                telemetry=int(q.telemetry)),
    ]


def iwa_knobs(p: PipelineParams) -> list[fy.P4TableEntry]:
    """What the closed-loop tuner rewrites when its decision changes and the link rate does not: IWA's
    config and CoDel's (IWA's control of established flows; its control law depends on the interval only)."""
    return [e for e in config_defaults(p) if e.table_id in ("codel_cfg", "iwa_cfg")]
