"""Pipeline parameters: human units in, the data plane's integers out.

``derive()`` turns a link rate, a buffer and an AQM's settings (seconds,
packets, probabilities) into exactly the integers the P4 tables hold (action
parameters and lookup-table entries). The controller writes these integers to
the switch and the reference model computes with them, so both always run on
the same numbers. Every value is checked against its P4 field width here, and
a bad value raises ``ConfigError`` naming the field and its allowed range.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field, replace

from . import arith
from .constants import (
    BYTE_TIME_FRAC, FLOW_SLOTS, IDLE_KEY_SHIFT, N_LINKS, PIE_COEF_FRAC, PROB_FRAC, RING_SIZE, Aqm, Telemetry,
)
from .errors import ConfigError

NS = 1_000_000_000
U64 = (1 << 64) - 1

# The audio's jitter budget when a run or a configuration gives none: a 40 ms jitter buffer (BRIEF, "What better
# means"). The one default of the project: the scenario's [run] jitter_budget_ms, the switch's [aqm.iwa] budget_s,
# the controllers' --jitter-budget-ms, the tuner and the report all fall back to this.
JITTER_BUDGET_MS = 40.0
# A full-size Ethernet frame: 1500 B IP MTU + 14 B header (no FCS). The frame IWA's target and window floor are
# sized in ([aqm.iwa] mtu_bytes, ``frame_bytes``) and the queue model's full-size frame.
MTU_BYTES = 1514


def budget_ns(budget_s: float) -> int:
    """A jitter budget (s) as the integer ns IWA's target is computed from: the switch's install (``iwa_params``)
    and the tuner round it here, the same way."""
    return round(budget_s * NS)


def iwa_budget_s(iwa: dict | None = None) -> float:
    """The jitter budget (s) of a configuration's [aqm.iwa] table: its ``budget_s``, else ``JITTER_BUDGET_MS``."""
    return float((iwa or {}).get("budget_s", JITTER_BUDGET_MS / 1e3))


# Width in bits of each P4 action parameter (p4src/include/config.p4, aqm_red.p4, aqm_codel.p4).
FIELD_BITS = {
    "byte_time_q16": 40, "rate_class": 8, "bucket_ns": 32, "limit_ns": 48, "limit_pkts": 16, "mtu_ns": 32,
    "log_wq": 32, "thmin_ns": 32, "thmax_ns": 32, "log_slope": 32, "mean_pktsize": 16, "log_mps": 32,
    "log_factor": 32,
    "target_ns": 32, "interval_ns": 32, "step_ns": 32, "floor_cap_ns": 32, "budget_cap_ns": 32,
    "tupdate_ns": 32, "alpha_q48": 32, "beta_q48": 32, "max_burst_ns": 32, "product": 48,
    "mss_bytes": 16, "payload_ns_q16": 40, "bytes_per_ns_q32": 32, "hold_ns": 32, "age_ns": 48,
}


def check_signed(name: str, value: int, where: str = "") -> int:
    """A signed value for a field that holds it as two's complement (RED's logarithms)."""
    half = 1 << (FIELD_BITS[name] - 1)
    if not isinstance(value, int) or isinstance(value, bool) or not -half <= value < half:
        raise ConfigError(f"{where}{name} = {value!r} is out of range: allowed {-half}..{half - 1}")
    return value


def check_field(name: str, value: int, lo: int = 0, hi: int | None = None, where: str = "") -> int:
    top = (1 << FIELD_BITS[name]) - 1
    hi = top if hi is None else min(hi, top)
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise ConfigError(f"{where}{name} = {value!r} is out of range: allowed {lo}..{hi}")
    return value


@dataclass(frozen=True)
class QueueParams:
    byte_time_q16: int  # ns per byte on the bottleneck, Q16 (the switch: its rate class's tx tables)
    bucket_ns: int  # drain shaper's bucket (tbf burst) as drain time
    limit_ns: int  # byte limit as drain time; 0 = none
    limit_pkts: int  # packet limit; 0 = none
    mtu_ns: int  # drain time of one full-size frame
    aqm: Aqm = Aqm.FIFO
    ecn: bool = False  # mark ECT packets instead of early drops
    telemetry: Telemetry = Telemetry.ALL  # which packets it reports (``parse_telemetry``)


@dataclass(frozen=True)
class RedParams:
    """RED's numbers as the data plane holds them: the thresholds in ns of drain time, and every factor it
    multiplies by as its log2 in Q12 (arith.LOG_FRAC; the P4 fields hold them as 32-bit two's complement)."""
    log_wq: int = 0  # log2(w_q)
    thmin_ns: int = 0
    thmax_ns: int = 0
    log_slope: int = 0  # log2(max_p * 2^32 / (th_max - th_min)): log2 of p_b in Q32 = log2(avg - th_min) + this
    mean_pktsize: int = 1500
    log_mps: int = arith.log_q(1500)  # log2(mean_pktsize)
    # (first key, last key, log2 of the factor): idle key = idle ns >> IDLE_KEY_SHIFT
    idle_decay: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class CodelParams:
    target_ns: int = 5_000_000
    interval_ns: int = 100_000_000
    # (first count, last count, interval / sqrt(count) in ns)
    control_law: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True)
class PieParams:
    target_ns: int = 15_000_000
    tupdate_ns: int = 15_000_000
    alpha_q48: int = 0
    beta_q48: int = 0
    max_burst_ns: int = 150_000_000


@dataclass(frozen=True)
class IwaParams:
    """IWA's knobs (docs/iwa.md derives each). The defaults are a 2 Mbit/s link
    with 1514 B frames; ``iwa_params`` derives them for any rate."""

    target_ns: int = 27_888_000  # queue room for starting flows: the jitter budget less a margin
    mss_bytes: int = 1460  # the smallest window IWA advertises
    payload_ns_q16: int = 271_839_737  # drain time per TCP payload byte (its frame's headers included), Q16
    bytes_per_ns_q32: int = 1_035_444  # its inverse: payload bytes per ns, Q32
    hold_ns: int = 1_000_000_000  # the reserve is forgotten this long after the last SYN-ACK
    age_ns: int = 10_000_000_000  # a flow slot is free this long after its latest downstream packet
    floor_cap_ns: int = 0  # the most grants a floor may join (the floors' share of the buffer); 0: no limit
    # the most queue a full-size frame of new data may leave behind it where the link's rate changes (what a rate
    # drop leaves in flight, granted at the old rate, no window can recall): iwa_budget_cap_ns; 0: none
    budget_cap_ns: int = 0


@dataclass(frozen=True)
class PipelineParams:
    queue: QueueParams
    red: RedParams = field(default_factory=RedParams)
    codel: CodelParams = field(default_factory=CodelParams)
    pie: PieParams = field(default_factory=PieParams)
    iwa: IwaParams = field(default_factory=IwaParams)


# --------------------------------------------------------------------------- links


def check_link(link: int) -> int:
    """An access link's id, as ``link_of`` and the config tables' keys hold it: 0 .. N_LINKS - 1."""
    if not isinstance(link, int) or isinstance(link, bool) or not 0 <= link < N_LINKS:
        raise ConfigError(f"link = {link!r} is out of range: allowed 0..{N_LINKS - 1} (N_LINKS)")
    return link


def client_addr(client: int | str) -> int:
    """A client's IPv4 address as ``link_of``'s key holds it (a 32-bit integer), from an int or a dotted quad."""
    try:
        return int(ipaddress.IPv4Address(client))
    except (ValueError, TypeError):
        raise ConfigError(f"client = {client!r} is not an IPv4 address") from None


@dataclass(frozen=True, order=True)
class ClientKey:
    """Which client a link key names: an IPv4 client by its address (``link_of``, exact) or an IPv6 client by
    its prefix (``link_of6``, longest prefix: an access network delegates each subscriber a prefix)."""

    version: int  # 4 or 6
    addr: int  # the address (IPv6: the prefix's network address)
    prefix_len: int  # 32 for IPv4; IPv6 0..128

    def __str__(self) -> str:
        if self.version == 4:
            return str(ipaddress.IPv4Address(self.addr))
        return str(ipaddress.IPv6Network((self.addr, self.prefix_len)))

    def holds(self, version: int, addr: int) -> bool:
        """Does an address of family ``version`` fall under this key?"""
        if version != self.version:
            return False
        width = 32 if version == 4 else 128
        return addr >> (width - self.prefix_len) == self.addr >> (width - self.prefix_len)


def client_key(client: "int | str | ClientKey") -> ClientKey:
    """A client as a link key: an IPv4 address (an int or a dotted quad), or an IPv6 address or prefix
    ("2001:db8:0:1::/64"; an address alone is its /128)."""
    if isinstance(client, ClientKey):
        return client
    if isinstance(client, int) or (isinstance(client, str) and ":" not in client):
        return ClientKey(4, client_addr(client), 32)
    try:
        net = ipaddress.IPv6Network(client)
    except (ValueError, TypeError):
        raise ConfigError(f"client = {client!r} is not an IPv4 address, nor an IPv6 address or prefix (its host "
                          f"bits zero)") from None
    return ClientKey(6, int(net.network_address), net.prefixlen)


RANGE_KEY_MAX = (1 << 32) - 1  # the range tables' keys (idle_key, law_count) are bit<32>


def complete_ranges(entries: tuple[tuple[int, int, int], ...], miss: int) -> tuple[tuple[int, int, int], ...]:
    """``entries`` (first key, last key, value), sorted and disjoint, with the keys they leave out filled with
    ``miss``: a link's own range table covers every key, so no key of that link falls through to the entries
    of the links without tables of their own, and every key finds what the model's lookup gives it
    (``red.idle_log``, ``codel.control_law_step``: ``miss`` where their table has no entry)."""
    out: list[tuple[int, int, int]] = []
    nxt = 0
    for lo, hi, value in sorted(entries):
        if lo > nxt:
            out.append((nxt, lo - 1, miss))
        out.append((lo, hi, value))
        nxt = hi + 1
    if nxt <= RANGE_KEY_MAX:
        out.append((nxt, RANGE_KEY_MAX, miss))
    return tuple(out)


# --------------------------------------------------------------------------- derivation


def byte_time_q16(rate_bps: float) -> int:
    if not rate_bps or rate_bps <= 0:
        raise ConfigError(f"rate_bps = {rate_bps!r} is out of range: must be > 0")
    v = round(8 * NS * (1 << BYTE_TIME_FRAC) / rate_bps)
    return check_field("byte_time_q16", v, lo=1, where="link: ")


def drain_ns(nbytes: int, bt_q16: int) -> int:
    """Drain time of ``nbytes`` bytes, with the data plane's rounding."""
    return (nbytes * bt_q16) >> BYTE_TIME_FRAC


def queue_params(
    rate_bps: float, *, limit_pkts: int = 0, limit_bytes: int = 0, bucket_bytes: int = 1514,
    mtu_bytes: int = MTU_BYTES, aqm: str | Aqm = Aqm.FIFO, ecn: bool = False,
    telemetry: bool | str | Telemetry = Telemetry.ALL,
) -> QueueParams:
    bt = byte_time_q16(rate_bps)
    arith.tx_split(bt)  # the transmit-time tables must hold the longest frame's time in 32 bits
    if limit_pkts and limit_bytes:
        raise ConfigError("buffer: give limit_pkts or limit_bytes, not both")
    check_field("limit_pkts", limit_pkts, hi=RING_SIZE - 1, where="buffer: ")
    if limit_bytes < 0:
        raise ConfigError(f"buffer: limit_bytes = {limit_bytes} is out of range: must be >= 0")
    if bucket_bytes < 0:
        raise ConfigError(f"link: bucket_bytes = {bucket_bytes} is out of range: must be >= 0")
    return QueueParams(
        byte_time_q16=bt,
        bucket_ns=check_field("bucket_ns", drain_ns(bucket_bytes, bt), where="link: "),
        limit_ns=check_field("limit_ns", drain_ns(limit_bytes, bt), where="buffer: "),
        limit_pkts=limit_pkts,
        mtu_ns=check_field("mtu_ns", drain_ns(mtu_bytes, bt), where="link: "),
        aqm=parse_aqm(aqm), ecn=bool(ecn), telemetry=parse_telemetry(telemetry),
    )


def parse_aqm(aqm: str | Aqm) -> Aqm:
    if isinstance(aqm, Aqm):
        return aqm
    try:
        return Aqm[str(aqm).upper()]
    except KeyError:
        names = ", ".join(a.name.lower() for a in Aqm)
        raise ConfigError(f"aqm = {aqm!r} is unknown: allowed {names}") from None


def parse_telemetry(telemetry: bool | str | Telemetry) -> Telemetry:
    """Which packets a link reports: a ``Telemetry``, its name ("all", "datagrams", "off"), or a bool (on:
    all, off: none)."""
    if isinstance(telemetry, Telemetry):
        return telemetry
    if isinstance(telemetry, bool):
        return Telemetry.ALL if telemetry else Telemetry.OFF
    try:
        return Telemetry[str(telemetry).upper()]
    except KeyError:
        names = ", ".join(repr(t.name.lower()) for t in Telemetry)
        raise ConfigError(f"link: telemetry = {telemetry!r} is unknown: allowed {names}") from None


def red_params(
    rate_bps: float, *, w_q: float, max_p: float, th_min: float, th_max: float, mean_pktsize: int = 1500,
    max_idle_entries: int = 256,
) -> RedParams:
    """ns-2 RED in byte mode: thresholds in packets of ``mean_pktsize`` bytes."""
    where = "red: "
    if not 0 < w_q <= 1:
        raise ConfigError(f"{where}w_q = {w_q} is out of range: 0 < w_q <= 1")
    if not 0 < max_p <= 1:
        raise ConfigError(f"{where}max_p = {max_p} is out of range: 0 < max_p <= 1")
    if not 0 <= th_min < th_max:
        raise ConfigError(f"{where}th_min = {th_min}, th_max = {th_max}: RED needs 0 <= th_min < th_max")
    check_field("mean_pktsize", mean_pktsize, lo=1, where=where)
    bt = byte_time_q16(rate_bps)
    thmin_ns = check_field("thmin_ns", drain_ns(round(th_min * mean_pktsize), bt), where=where)
    thmax_ns = check_field("thmax_ns", drain_ns(round(th_max * mean_pktsize), bt), where=where)
    if thmax_ns == thmin_ns:
        raise ConfigError(f"{where}th_min = {th_min}, th_max = {th_max}: the same drain time at this rate")
    slope = check_signed("log_slope", arith.log_q(max_p * (1 << PROB_FRAC) / (thmax_ns - thmin_ns)), where=where)
    ptc = rate_bps / (8.0 * mean_pktsize)  # ns-2: link capacity in mean-size packets per second
    return RedParams(
        log_wq=arith.log_q(w_q), thmin_ns=thmin_ns, thmax_ns=thmax_ns, log_slope=slope,
        mean_pktsize=mean_pktsize, log_mps=arith.log_q(mean_pktsize),
        idle_decay=red_idle_table(w_q, ptc, max_idle_entries),
    )


def red_idle_table(w_q: float, ptc: float, max_entries: int = 256) -> tuple[tuple[int, int, int], ...]:
    """Range entries for ns-2's idle decay avg *= (1 - w_q)^m, m = int(ptc * idle_s), each valued at
    log2 of its factor in Q12 (the data plane adds it to log2(avg)).

    m is cut into steps of ``dm`` packets so that the factor changes by at most
    3 % inside one entry (the documented error); past the point where the factor
    is below 1e-3 a last open-ended entry sets it to 0 (arith.LOG_ZERO). Idle
    times shorter than the first step match no entry: the default action (log 0)
    keeps the average as it is.
    """
    if w_q >= 1:
        return ((0, (1 << 32) - 1, arith.LOG_ZERO),)
    dm, m_end = red_idle_steps(w_q, max_entries)
    key_ns = 1 << IDLE_KEY_SHIFT

    def first_key(m: int) -> int:  # smallest key whose idle time gives at least m packets
        return int(math.ceil(m / ptc * NS / key_ns))

    entries = []
    m = dm
    while m < m_end:
        lo, hi = first_key(m), first_key(m + dm) - 1
        if hi >= lo:
            # never log 0: that is "no decay", which the data plane skips
            entries.append((lo, hi, min(-1, round(m * math.log2(1.0 - w_q) * (1 << arith.LOG_FRAC)))))
        m += dm
    entries.append((first_key(m), (1 << 32) - 1, arith.LOG_ZERO))
    return tuple(entries)


def red_idle_steps(w_q: float, max_entries: int = 256) -> tuple[int, int]:
    """(dm, m_end) of ``red_idle_table``: its entries step by dm packets (the factor changes by at most 3 %
    inside one), and from m_end on the factor is below 1e-3."""
    log1w = math.log(1.0 - w_q)
    dm = max(1, int(math.log(0.97) / log1w))
    m_end = max(dm, int(math.ceil(math.log(1e-3) / log1w)))
    while (m_end // dm) + 1 > max_entries:
        dm += 1
    return dm, m_end


def codel_params(*, target_s: float = 0.005, interval_s: float = 0.100, ratio: float = 1.04) -> CodelParams:
    where = "codel: "
    target = check_field("target_ns", round(target_s * NS), lo=1, where=where)
    interval = check_field("interval_ns", round(interval_s * NS), lo=1, where=where)
    return CodelParams(target_ns=target, interval_ns=interval, control_law=codel_law_table(interval, ratio))


def codel_law_table(interval_ns: int, ratio: float = 1.04, max_count: int = 65535):
    """interval/sqrt(count) as range entries: exact while count steps are 1, then
    ranges [a, b] with b <= a*ratio, valued at sqrt(a*b) so the error stays
    within +-(sqrt(ratio) - 1)/2, i.e. +-1 % for ratio 1.04."""
    out = []
    a = 1
    while a <= max_count:
        b = min(max_count, max(a, int(a * ratio)))
        step = round(interval_ns / math.sqrt(math.sqrt(float(a) * b)))  # at the geometric mean
        out.append((a, b, step))
        a = b + 1
    return tuple(out)


def pie_params(
    *, target_s: float = 0.015, tupdate_s: float = 0.015, alpha: float = 0.125, beta: float = 1.25,
    max_burst_s: float = 0.150,
) -> PieParams:
    where = "pie: "
    scale = (1 << PIE_COEF_FRAC) / NS
    return PieParams(
        target_ns=check_field("target_ns", round(target_s * NS), lo=1, where=where),
        tupdate_ns=check_field("tupdate_ns", round(tupdate_s * NS), lo=1, where=where),
        alpha_q48=check_field("alpha_q48", round(alpha * scale), where=where),
        beta_q48=check_field("beta_q48", round(beta * scale), where=where),
        # the burst allowance spent grows by tupdate past max_burst at most: a 32-bit register
        max_burst_ns=check_field("max_burst_ns", round(max_burst_s * NS), hi=(1 << 32) - 1 - round(tupdate_s * NS),
                                 where=where),
    )


# Headers of a full-size TCP segment on the wire: Ethernet 14 + IPv4 20 + TCP 20.
TCP_FRAME_OVERHEAD = 54


CODEL_TARGET_NS = 5_000_000  # RFC 8289: CoDel's target


def frame_bytes(iwa: dict | None = None) -> int:
    """The full-size frame (bytes) of a configuration's [aqm.iwa] table: its ``mtu_bytes``, else ``MTU_BYTES``.
    The one place the frame size comes from: the queue model, IWA's integers (the MSS is this less the TCP/IPv4
    and Ethernet headers) and the tuner's targets all take it from here."""
    return int((iwa or {}).get("mtu_bytes", MTU_BYTES))


def iwa_margin_ns(frame_ns: int) -> int:
    """What IWA's target keeps below the audio's budget: max(2 frames, 5 ms) (``controller/policy.py``)."""
    return max(2 * frame_ns, CODEL_TARGET_NS)


def iwa_target_ns(rate_bps: float, budget_ns: int, mtu_bytes: int = MTU_BYTES) -> int:
    """IWA's target from the audio's jitter budget: the budget less the margin, never below one frame
    (``controller/policy.py`` says why; the policy tunes from this value)."""
    frame = drain_ns(mtu_bytes, byte_time_q16(rate_bps))
    return max(frame, budget_ns - iwa_margin_ns(frame))


def iwa_budget_cap_ns(rate_bps: float, budget_ns: int, mtu_bytes: int = MTU_BYTES) -> int:
    """The budget cap on a link whose rate changes: the audio's budget, but never nearer above the target than
    the margin the target keeps below the budget. Equal to the budget wherever the target is above its floor of
    one frame; where the budget holds less than three frames (below about 0.9 Mbit/s for a 40 ms budget) it is
    three frames (``controller/policy.py`` says why)."""
    frame = drain_ns(mtu_bytes, byte_time_q16(rate_bps))
    return max(budget_ns, frame + iwa_margin_ns(frame))  # = max(budget, target + margin): the target's floor is a frame


def iwa_codel_target_ns(target_ns: int) -> int:
    """CoDel's target under IWA, from IWA's target ``target_ns``: the same (``controller/policy.py`` says why).
    The switch's install (``pipeline_params``) and the tuner (``policy.tune``) both take it from here."""
    return target_ns


def iwa_params(
    rate_bps: float = 2e6, *, budget_s: float = JITTER_BUDGET_MS / 1e3, target_s: float | None = None,
    mtu_bytes: int = MTU_BYTES,
    hold_s: float = 1.0, age_s: float = 10.0,
) -> IwaParams:
    """IWA's integers for a link of ``rate_bps`` with ``mtu_bytes`` frames (docs/iwa.md): the target from
    the audio's jitter budget (``budget_s``), unless ``target_s`` sets it."""
    where = "iwa: "
    if not isinstance(budget_s, (int, float)) or budget_s <= 0:
        raise ConfigError(f"{where}budget_s = {budget_s!r} is out of range: must be > 0")
    mss = check_field("mss_bytes", mtu_bytes - TCP_FRAME_OVERHEAD, lo=1, where=where)
    bt = byte_time_q16(rate_bps)
    # ns per payload byte: a segment of mss bytes occupies the link for a frame of mtu_bytes
    payload_q16 = check_field("payload_ns_q16", -(-bt * mtu_bytes // mss), lo=1, where=where)
    per_ns = check_field("bytes_per_ns_q32", max(1, (1 << (32 + BYTE_TIME_FRAC)) // payload_q16), lo=1,
                         where=where)
    hold = check_field("hold_ns", round(hold_s * NS), lo=1, where=where)
    age = check_field("age_ns", round(age_s * NS), lo=1, where=where)
    if age < hold:
        raise ConfigError(f"{where}age_s = {age_s} is out of range: must be >= hold_s ({hold_s})")
    return IwaParams(
        target_ns=check_field("target_ns", round(target_s * NS) if target_s is not None else
                              iwa_target_ns(rate_bps, budget_ns(budget_s), mtu_bytes), lo=1, where=where),
        mss_bytes=mss, payload_ns_q16=payload_q16, bytes_per_ns_q32=per_ns, hold_ns=hold, age_ns=age,
    )


def floor_cap_ns(q: QueueParams, p: IwaParams) -> int:
    """The most queue a window at its floor may join without a loss (docs/iwa.md, "At the floor"): a floor is
    one MSS, which Linux sends as two half-size segments while the window it was offered never exceeded two
    MSS (``tcp_bound_to_half_wnd``), so a buffer of N packets holds N / 2 floors; half of that, because the
    grants' virtual queue assumes their data comes at the pace it was granted, and a round of first windows
    can come compressed by the servers' response times, beside the other traffic. A byte limit: half of it.
    Never below the target and a frame (where ``at_floor`` finds no room anyway); 0 without a limit."""
    cap = q.limit_pkts * q.mtu_ns // 4 if q.limit_pkts else q.limit_ns // 2
    return check_field("floor_cap_ns", max(cap, p.target_ns + q.mtu_ns) if cap else 0, where="iwa: ")


def bytes_to_ns(p: IwaParams, nbytes: int) -> int:
    """Drain time of ``nbytes`` (< 2^32) of TCP payload (its frames' headers included), as the data plane
    computes it: the rate class's product table (``arith.mul``: at most 1/64 below the exact product)."""
    return (arith.mul(nbytes, p.payload_ns_q16) & U64) >> BYTE_TIME_FRAC


def ns_to_bytes(p: IwaParams, ns: int) -> int:
    """TCP payload bytes the link drains in ``ns`` (``ns`` < 2^32; rounded down), as the data plane computes
    it (``arith.mul``: never more than the exact conversion, less than 1/64 below it)."""
    return arith.mul(ns, p.bytes_per_ns_q32) >> 32


def pipeline_params(rate_bps: float, aqm: str | Aqm = Aqm.FIFO, *, limit_pkts: int = 0, limit_bytes: int = 0,
                    bucket_bytes: int = 1514, ecn: bool = False, telemetry: bool | str | Telemetry = Telemetry.ALL,
                    red: dict | None = None, codel: dict | None = None, pie: dict | None = None,
                    iwa: dict | None = None) -> PipelineParams:
    """Everything the data plane needs for one bottleneck, from human units."""
    mtu = frame_bytes(iwa)  # one frame size for the queue model and IWA
    q = queue_params(rate_bps, limit_pkts=limit_pkts, limit_bytes=limit_bytes, bucket_bytes=bucket_bytes,
                     mtu_bytes=mtu, aqm=aqm, ecn=ecn, telemetry=telemetry)
    red_cfg = red_params(rate_bps, **red) if red else RedParams()
    iwa_cfg = iwa_params(rate_bps, **(iwa or {}))
    iwa_cfg = replace(iwa_cfg, floor_cap_ns=floor_cap_ns(q, iwa_cfg))
    if codel is None and q.aqm == Aqm.IWA:
        # Under IWA, CoDel holds the queue of the flows no window holds (docs/iwa.md) at the queue the audio's
        # budget allows: IWA's own target. A lower one (RFC 8289's 5 ms) would drop from shaped flows whose
        # windows already keep the queue under the target, and cost a bulk flow its throughput.
        codel = {"target_s": iwa_codel_target_ns(iwa_cfg.target_ns) / NS}
    return PipelineParams(
        queue=q, red=red_cfg, codel=codel_params(**(codel or {})), pie=pie_params(**(pie or {})), iwa=iwa_cfg,
    )


__all__ = [
    "ConfigError", "QueueParams", "RedParams", "CodelParams", "PieParams", "IwaParams", "PipelineParams",
    "pipeline_params", "queue_params", "red_params", "codel_params", "pie_params", "iwa_params", "drain_ns",
    "bytes_to_ns", "ns_to_bytes", "iwa_target_ns", "iwa_budget_cap_ns", "iwa_margin_ns", "iwa_codel_target_ns",
    "CODEL_TARGET_NS", "JITTER_BUDGET_MS",
    "MTU_BYTES", "budget_ns", "iwa_budget_s", "frame_bytes",
    "byte_time_q16", "parse_aqm", "FIELD_BITS", "FLOW_SLOTS", "N_LINKS", "check_link", "client_addr",
    "complete_ranges",
]
