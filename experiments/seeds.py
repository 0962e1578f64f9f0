"""The seeds' numbers beside the lab's (issue 13, item 4), from a run's data files alone.

The seeds' numbers are data here, each with where it comes from (``../shared/seeds/``). The lab's numbers are
computed from the replications the report loaded, with the same definitions (``experiments.metrics``):

* PAM'13 Table 1 (``003_…``): the IPDV CDF of the audio competing with N short TCP flows, per IW and N, 50
  replications of a real HSPA network. The lab's row per IW and N pools the IPDV of every FIFO replication of a
  web workload with N flows (``cases.pooled_ipdv_ns``), one row per link profile and buffer.
* PAM'13's orderings: IW10 gives larger IPDV tails than IW3 at the same N, and more flows larger tails than
  fewer at the same IW (99th percentile and max of Table 1).
* PAM'13 Fig. 5 and 6 give curves, not numbers; the text states what they show, and each statement is an
  ordering the lab is checked on, per link profile and buffer (FIFO web units as for Table 1). Fig. 5: "IW10
  increases the loss rate [after the jitter filter] dramatically", and "also IW3 with a large number of
  parallel connections produces significant number of losses": the loss rate at a 40 ms jitter buffer, IW10
  above IW3 at each N, and N=6 above N=1 with IW3; the lab's rates at 40-100 ms are a table beside it. Fig. 6:
  "the arrival of the initial windows causes the worst effect during the whole transfer": the share of audio
  packets at loss period level >= 2 (40 ms) in the first second after the first flow's start above the share
  in the rest of the transfer (packets kept by the overlap filter, replications pooled). One second holds the
  handshake and the initial windows' arrival at PAM'13's RTTs (its Fig. 6 shows the effect "almost
  immediately"); on slower links the windows take longer to drain, and the ordering can differ for that.
* IETF79 (``001_…``): the maxima of the audio's one-way delay under REDok, a single flow and six flows, IW10
  against IW3. The slides do not name the link of those two figures; 2.80 s is more than any HSPA or LTE
  buffer of the study drains in (100 and 400 packets: 0.6 s and 0.1 s), so it can only be EDGE (50 packets,
  3.8 s). The lab's values: the largest OWD over the audio packets kept by the overlap filter, all REDok
  replications of burst workloads with 1+1 and 6+6 flows on EDGE pooled. The study had no audio: its OWD is
  the TCP segments' own; the lab's audio samples the same queue every 20 ms, so its maximum can fall short
  of the segments' by up to what the queue gains in 20 ms.
* IETF79's other statements (``ietf79_statements``), each per lab unit (link, buffer, AQM, initial RTO) as an
  ordering of two means over replications: "With small number of TCP flows, IW10 improves performance" (the
  bursts' mean elapsed time, 1+1 flows: IW3 > IW10) and "with larger number of flows, IW10 tends to decrease
  performance" (6+6: IW10 > IW3); "Fairness for later starting traffic improves with IW10" (Jain's index
  between the bursts: IW10 > IW3) and "Fairness within both bursts worse with IW10" (6+6, the mean of both
  bursts' Jain's index: IW3 > IW10); on EDGE, "With large buffer, number of RTOs increase" with the 1 s initial
  RTO (the captures' timeouts, which count the handshake's as ns-2 does and the server's own count does not:
  IRTO 1 s > 3 s) and "Mostly spurious RTOs" (the captures' timeouts with IRTO 1 s:
  spurious > needed; "-" when there were none). A tie counts as "differs": the seed states a strict order.

* IETF79's measures per burst case (``ietf79_measures_md``): the audio's largest OWD, each burst's elapsed time,
  Jain's index within and between the bursts, and the RTOs: the server's count beside the timeouts in the
  captures with the spurious ones told apart (``experiments.timeouts``). The slides give these as figures
  over many cases, not as numbers to set beside them, so the table is the lab's alone.

* Seed 002's table: one RRTCC flow against 5 web users on 5 Mbit/s with 50 and 100 ms link delay, a
  50-packet drop-tail queue, 30 ns-2 runs: the real-time flow's goodput and loss, the web users' throughput
  while downloading and TFS (mean and sigma). The lab's rows: every case whose replications have the
  real-time flow's logs (``summarize_rep``'s ``rtc``), by the link's delay, the case's scenario (``rtc5``
  the lab's own controller, ``webrtc5`` a real WebRTC stack), AQM and stack (``rtc_stack``: aiortc or Pion
  for [webrtc], "accessnet.rtc" for [rtc]), mean ± 95 % CI; the two-flow table (2 RRTCC + 10 web users)
  likewise, per flow.
* Over-use seconds (both tables): per replication, the number of seconds at whose once-a-second stats sample
  the flow's delay-based over-use detector was in over-use (``metrics.overuse_seconds``: aiortc's receiver
  stats, Pion's sender GCC stats; the same sampling for both), mean ± 95 % CI over replications, and in
  brackets the mean share of the sampled seconds. "-" where the flow logs no detector state: the seed (ns-2
  gives no such number) and the lab's own [rtc] controller (it has no delay-gradient detector: its over-use
  is a queuing delay above 50 ms or loss above 10 %, and it does not log it).
* Seed 002's stacks paired (``seed002_stacks_md``): where a case (delay, scenario, AQM) ran on both stacks,
  Pion − aiortc per replication pair (the same replication number and meta.json seed: ``Case.draw_key``
  gives both stacks of a case the same draws), mean ± 95 % CI of the differences; with two flows each side's
  value is the mean over its flows.

Each ordering is marked "holds" when the lab orders the two numbers as the seed does, "differs" when it
orders them the other way, "-" when the lab has no data for one side. Where it differs the report's other
sections (main table, IPDV, figures) hold the lab's own data to show why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .cases import AQM_ORDER, Case, kept, pooled_ipdv_ns
from .markdown import fmt_ci, md_table
from .metrics import NS, _jb_key, ipdv_table, mean_ci95

# PAM'13 Table 1 (003_…): IPDV in seconds, 50 replications: Min, 25 %, Median, 75 %, 90 %, 95 %, 96 %, 97 %,
# 98 %, 99 %, Max per (IW, N).
PAM13_COLUMNS = ("min", "p25", "p50", "p75", "p90", "p95", "p96", "p97", "p98", "p99", "max")
PAM13_TABLE1: dict[tuple[int, int], tuple[float, ...]] = {
    (3, 1): (-0.020107, -0.011373, -0.000206, 0.009194, 0.020072, 0.029445, 0.031174, 0.034697, 0.043296,
             0.070158, 0.111526),
    (3, 2): (-0.020102, -0.011242, -0.000281, 0.008824, 0.018924, 0.028301, 0.029892, 0.039526, 0.050787,
             0.100523, 0.182076),
    (3, 6): (-0.020107, -0.011696, -0.000588, 0.001666, 0.012330, 0.025413, 0.031916, 0.059762, 0.081594,
             0.125042, 0.282826),
    (10, 1): (-0.020414, -0.012084, -0.000482, 0.001835, 0.016195, 0.020696, 0.029253, 0.030297, 0.050413,
              0.172464, 0.242798),
    (10, 2): (-0.020128, -0.019264, -0.000919, 0.003032, 0.019432, 0.030032, 0.031393, 0.041291, 0.070785,
              0.160448, 0.322197),
    (10, 6): (-0.020098, -0.019541, -0.009664, 0.000454, 0.018741, 0.030004, 0.040417, 0.069099, 0.121090,
              0.220447, 0.589717),
}
# IETF79 (001_…), "Single Flow / 6 Flows One-way Delay (FIFO, REDok and IW3, IW10)": max OWD with REDok, s.
# PAM'13 Fig. 5's jitter buffers (ms); the orderings are judged at the smallest. Fig. 6's early window (s).
PAM13_FIG5_JB_MS = (40, 60, 80, 100)
PAM13_FIG6_EARLY_S = 1.0
PAM13_FIG5_IW = "Fig. 5: \"IW10 increases the loss rate dramatically\""
PAM13_FIG5_N = "Fig. 5: \"also IW3 with a large number of parallel connections produces significant number of losses\""
PAM13_FIG6 = "Fig. 6: \"the arrival of the initial windows causes the worst effect during the whole transfer\""
IETF79_REDOK_MAX_OWD: dict[tuple[int, int], float] = {(1, 10): 2.80, (1, 3): 2.06, (6, 10): 0.429, (6, 3): 0.296}
IETF79_LINK = "edge"  # the only link whose REDok buffer drains in more than 2.80 s (module docstring)
# Seed 002 (002_…), "1 RRTCC and 5 TCP flows", per link delay (ms): (mean, sigma) of goodput (kbit/s), packet
# loss rate (%), average TCP throughput during ON time (kbit/s), TFS (%); 30 runs, 5 Mbit/s, 50 packets.
SEED002_1RTC_5TCP: dict[int, dict[str, tuple[float, float]]] = {
    50: {"goodput": (3593, 279), "loss": (3.68, 0.26), "tcp": (688.5, 53), "tfs": (151, 8)},
    100: {"goodput": (3700, 420), "loss": (4.0, 0.19), "tcp": (323, 111), "tfs": (72, 0.21)},
}
# "2 RRTCC with 10 TCP flows": per delay, flow 1 and flow 2's goodput (kbit/s) and loss (%), then the TCP
# throughput during ON time (kbit/s) and TFS (%) of the web flows, (mean, sigma).
SEED002_2RTC_10TCP: dict[int, dict[str, tuple[float, float]]] = {
    50: {"goodput1": (1640, 37.63), "goodput2": (1750, 65), "loss1": (5.6, 0.09), "loss2": (5.5, 0.3),
         "tcp": (390, 36.7), "tfs": (78, 7)},
    100: {"goodput1": (1782, 54.5), "goodput2": (1904, 46.7), "loss1": (5.4, 0.33), "loss2": (5.3, 0.17),
          "tcp": (281.7, 23.5), "tfs": (56, 7)},
}
SEED002_KEYS = (("goodput", "goodput_bps", 1e-3, "RTC goodput (kbit/s)"), ("loss", "loss_rate", 100, "RTC loss (%)"),
                ("tcp", "tcp_throughput_bps", 1e-3, "TCP throughput, ON time (kbit/s)"), ("tfs", "tfs", 100, "TFS (%)"))


@dataclass(frozen=True)
class Ordering:
    """A seed's claim about ``a`` and ``b`` for one statistic, and the lab's two values of it. With the seed's
    two numbers the claim is their order; a seed that states it in words only (``seed_says``, no numbers)
    claims ``a`` > ``b``."""

    seed: str
    claim: str
    seed_a: float | None
    seed_b: float | None
    lab_a: float | None
    lab_b: float | None
    seed_says: str = ""

    @property
    def verdict(self) -> str:
        if self.lab_a is None or self.lab_b is None:
            return "-"
        seed_greater = True if self.seed_a is None or self.seed_b is None else self.seed_a > self.seed_b
        return "holds" if (self.lab_a > self.lab_b) == seed_greater else "differs"


def _profile_buffer(c: Case) -> tuple[str, str]:
    """(profile name, buffer) of a case's replications, as meta.json records them ("?" when absent)."""
    for r in c.reps:
        prof = r.meta.get("profile")
        buf = r.meta.get("buffer")
        name = prof.get("name") if isinstance(prof, dict) else prof
        size = (f"{buf['packets']}p" if isinstance(buf, dict) and buf.get("packets") else
                str(buf) if buf is not None else "?")
        return str(name or "?"), size
    return "?", "?"


def _scenario(c: Case) -> str:
    return str(next((r.meta.get("scenario") for r in c.reps if r.meta.get("scenario")), ""))


def web_fifo_units(cases: Sequence[Case]) -> dict[tuple[str, str, int, int], list[Case]]:
    """FIFO cases of web workloads (scenario web<N>, no bulk flow) with replications, by (profile, buffer, IW,
    N)."""
    out: dict[tuple[str, str, int, int], list[Case]] = {}
    for c in cases:
        sc = _scenario(c)
        if str(c.aqm) != "fifo" or not c.reps or not sc.startswith("web") or not sc[3:].isdigit():
            continue
        if c.iw is None or c.n_flows is None:
            continue
        prof, buf = _profile_buffer(c)
        out.setdefault((prof, buf, int(c.iw), int(c.n_flows)), []).append(c)
    return out


def _pooled_ipdv(cs: Sequence[Case]) -> dict:
    parts = [pooled_ipdv_ns(c) for c in cs]
    return ipdv_table(np.concatenate(parts) if parts else np.zeros(0))


def pam13_table_md(cases: Sequence[Case]) -> list[str]:
    """PAM'13 Table 1 with the lab's rows under each seed row (seconds)."""
    units = web_fifo_units(cases)
    rows = []
    for (iw, n), seed in PAM13_TABLE1.items():
        rows.append(["PAM'13 (real HSPA)", str(iw), str(n), "50", *(f"{v:.4f}" for v in seed)])
        for (prof, buf, uiw, un), cs in sorted(units.items()):
            if (uiw, un) != (iw, n):
                continue
            t = _pooled_ipdv(cs)
            reps = sum(len(c.reps) for c in cs)
            rows.append([f"lab fifo {prof} {buf}", str(iw), str(n), str(reps),
                         *((f"{t[k]:.4f}" if t else "–") for k in PAM13_COLUMNS)])
    header = ["source", "IW", "N", "reps", "Min", "25%", "Median", "75%", "90%", "95%", "96%", "97%", "98%", "99%",
              "Max"]
    return md_table(header, rows)


def pam13_orderings(cases: Sequence[Case]) -> list[Ordering]:
    """PAM'13's orderings of Table 1 (99th percentile and max), each against every lab unit (profile, buffer)
    that has both sides."""
    tables = {k: _pooled_ipdv(cs) for k, cs in web_fifo_units(cases).items()}  # each unit's IPDV once
    links = sorted({(p, b) for p, b, _, _ in tables}) or [("-", "-")]
    out = []
    for stat, label in (("p99", "99th percentile"), ("max", "max")):
        col = PAM13_COLUMNS.index(stat)
        claims = [(f"IPDV {label}: IW10 > IW3 at N={n}", (10, n), (3, n)) for n in (1, 2, 6)]
        claims += [(f"IPDV {label}: N=6 > N=1 at IW{iw}", (iw, 6), (iw, 1)) for iw in (3, 10)]
        for claim, a, b in claims:
            for prof, buf in links:
                lab_a, lab_b = (tables.get((prof, buf, *k), {}).get(stat) for k in (a, b))
                out.append(Ordering(f"PAM'13 Table 1 / lab {prof} {buf}", claim, PAM13_TABLE1[a][col],
                                    PAM13_TABLE1[b][col], lab_a, lab_b))
    return out


def max_owd_s(cs: Sequence[Case]) -> float | None:
    """Largest OWD (s) of the audio packets kept by the overlap filter, over all replications of ``cs``."""
    vals = [float(np.nanmax(k["owd_ns"].to_numpy(dtype=float))) for c in cs for r in c.reps
            if len(k := kept(r)) and np.isfinite(k["owd_ns"].to_numpy(dtype=float)).any()]
    return max(vals) / NS if vals else None


def ietf79_orderings(cases: Sequence[Case]) -> list[Ordering]:
    """IETF79's REDok maxima on EDGE: IW10 above IW3 with one flow and with six (per burst), each per buffer and
    initial RTO (meta.json's irto_s, where the run set one)."""
    by: dict[tuple[str, int, int], list[Case]] = {}
    for c in cases:
        prof, buf = _profile_buffer(c)
        sc = _scenario(c)
        if str(c.aqm) != "redok" or prof != IETF79_LINK or not sc.startswith("burst") or c.iw is None:
            continue
        irto = next((r.meta.get("irto_s") for r in c.reps), None)
        unit = buf if irto is None else f"{buf} initial RTO {irto:g} s"
        per_burst = {"burst1+1": 1, "burst6+6": 6}.get(sc)
        if per_burst is not None:
            by.setdefault((unit, per_burst, int(c.iw)), []).append(c)
    units = sorted({u for u, _, _ in by}) or ["-"]
    out = []
    for n in (1, 6):
        for buf in units:
            a, b = by.get((buf, n, 10)), by.get((buf, n, 3))
            out.append(Ordering(f"IETF79 REDok {IETF79_LINK} / lab {buf}",
                                f"max audio OWD: IW10 > IW3, {n}+{n} flows", IETF79_REDOK_MAX_OWD[(n, 10)],
                                IETF79_REDOK_MAX_OWD[(n, 3)], max_owd_s(a) if a else None,
                                max_owd_s(b) if b else None))
    return out


# IETF79's statements (slides "Test setup" summary and "IRTO: EDGE"), each an ordering of two lab means.
IETF79_SMALL_N, IETF79_LARGE_N = 1, 6  # the quick matrix's "small" and "large number of flows" per burst
IETF79_SAYS = {
    "faster": "\"With small number of TCP flows, IW10 improves performance\"",
    "slower": "\"With larger number of flows, IW10 tends to decrease performance\"",
    "later": "\"Fairness for later starting traffic improves with IW10\"",
    "within": "\"Fairness within both bursts worse with IW10\"",
    "rtos": "EDGE: \"With large buffer, number of RTOs increase [with IRTO 1 s]\"",
    "spurious": "EDGE: \"Mostly spurious RTOs\"",
}


def _burst_unit(c: Case) -> tuple[str, str, str, float | None, int] | None:
    """(profile, buffer, AQM, initial RTO, flows per burst) of a burst case (scenario burst<N>+<N>), else None."""
    sc = _scenario(c)
    if not sc.startswith("burst") or "+" not in sc or not sc[5:].split("+")[0].isdigit() or c.iw is None:
        return None
    prof, buf = _profile_buffer(c)
    irto = next((r.meta.get("irto_s") for r in c.reps if r.meta.get("irto_s") is not None), None)
    return prof, buf, str(c.aqm), irto, int(sc[5:].split("+")[0])


def _mean(vals) -> float | None:
    return mean_ci95(vals)["mean"]


def _rep_burst_mean(r, key: str) -> float | None:
    """The mean over a replication's bursts of one per-burst value (``completion_s``: each burst's first start to
    last end; ``jain``: Jain's index within it), None unless every burst has it."""
    bursts = (r.summary.get("tcp") or {}).get("bursts") or {}
    xs = [b.get(key) for b in bursts.values()]
    return float(np.mean(xs)) if xs and all(x is not None for x in xs) else None


def ietf79_statements(cases: Sequence[Case]) -> list[Ordering]:
    """IETF79's other statements, each per lab unit (link, buffer, AQM, initial RTO), "a > b" with the lab's
    means over replications: elapsed time (the mean of both bursts') IW3 > IW10 with one flow per burst and
    IW10 > IW3 with six; Jain's index between the bursts IW10 > IW3; within the bursts (six flows, the mean of
    both) IW3 > IW10; and on EDGE, timeouts per replication (captures) with IRTO 1 s > 3 s, and the
    spurious timeouts of IRTO 1 s (captures) > the needed ones."""
    by: dict[tuple, list[Case]] = {}
    for c in cases:
        u = _burst_unit(c)
        if u is not None and c.reps:
            by.setdefault((*u, int(c.iw)), []).append(c)

    def val(key: tuple, f) -> float | None:
        cs = by.get(key)
        return _mean(f(r) for c in cs for r in c.reps) if cs else None

    def tcp(name: str):
        return lambda r: (r.summary.get("tcp") or {}).get(name)

    def bursts(key: str):
        return lambda r: _rep_burst_mean(r, key)

    def t_out(name: str):
        return lambda r: _timeouts(r, name)

    out = []
    units = sorted({k[:4] for k in by}, key=str)
    for prof, buf, aqm, irto in units:
        unit = f"lab {prof} {buf} {aqm}" + (f" initial RTO {irto:g} s" if irto is not None else "")
        u = (prof, buf, aqm, irto)
        for n, what, a_iw, b_iw in ((IETF79_SMALL_N, "faster", 3, 10), (IETF79_LARGE_N, "slower", 10, 3)):
            out.append(Ordering(f"IETF79 / {unit}", f"elapsed: IW{a_iw} > IW{b_iw}, {n}+{n} flows", None, None,
                                val((*u, n, a_iw), bursts("completion_s")), val((*u, n, b_iw), bursts("completion_s")),
                                IETF79_SAYS[what]))
        for n in (IETF79_SMALL_N, IETF79_LARGE_N):
            out.append(Ordering(f"IETF79 / {unit}", f"Jain between bursts: IW10 > IW3, {n}+{n} flows", None, None,
                                val((*u, n, 10), tcp("jain_between_bursts")),
                                val((*u, n, 3), tcp("jain_between_bursts")), IETF79_SAYS["later"]))
        n = IETF79_LARGE_N
        out.append(Ordering(f"IETF79 / {unit}", f"Jain within bursts: IW3 > IW10, {n}+{n} flows", None, None,
                            val((*u, n, 3), bursts("jain")), val((*u, n, 10), bursts("jain")), IETF79_SAYS["within"]))
    for prof, buf, aqm in sorted({k[:3] for k in by if k[0] == "edge"}):
        unit = f"lab {prof} {buf} {aqm}"
        for n in (IETF79_SMALL_N, IETF79_LARGE_N):
            for iw in (3, 10):
                one, three = (prof, buf, aqm, 1, n, iw), (prof, buf, aqm, 3, n, iw)
                timeouts_one = val(one, t_out("timeouts"))
                out.append(Ordering(f"IETF79 / {unit}", f"timeouts / rep: IRTO 1 s > 3 s, IW{iw} {n}+{n} flows",
                                    None, None, timeouts_one, val(three, t_out("timeouts")), IETF79_SAYS["rtos"]))
                any_timeout = bool(timeouts_one)  # none at all: nothing to judge ("-")
                out.append(Ordering(f"IETF79 / {unit}", f"IRTO 1 s timeouts / rep: spurious > needed, IW{iw} "
                                    f"{n}+{n} flows", None, None, val(one, t_out("spurious")) if any_timeout else None,
                                    val(one, t_out("needed")) if any_timeout else None, IETF79_SAYS["spurious"]))
    return out


IETF79_MEASURES_HEADER = ["case", "reps", "max audio OWD (s)", "burst 1 (s)", "burst 2 (s)", "Jain burst 1",
                          "Jain burst 2", "Jain between", "RTOs / rep (server)", "timeouts / rep (captures)",
                          "spurious / rep", "unknown / rep"]


def _burst_value(r, k: int, key: str) -> float | None:
    """The k-th burst's (0-based, in flows.csv order) ``key`` of tcp_metrics, None when it has none."""
    bursts = (r.summary.get("tcp") or {}).get("bursts") or {}
    order = sorted(bursts, key=int)
    return bursts[order[k]].get(key) if k < len(order) else None


def _timeouts(r, key: str) -> float | None:
    t = (r.summary.get("tcp") or {}).get("timeouts") or {}
    return t.get(key)


def ietf79_measures_md(cases: Sequence[Case]) -> list[str]:
    """IETF79's measures per burst case (scenario burst*): the audio's largest OWD (kept packets, over the
    replications), each burst's elapsed time (first start to last end) and Jain's index of its flows' goodput,
    Jain's index between the bursts, and the RTOs: the server's count and the timeouts in the captures with the
    spurious ones told apart (experiments.timeouts); mean ± 95 % CI over replications."""
    rows = []
    for c in sorted((c for c in cases if c.reps and _scenario(c).startswith("burst")),
                    key=lambda c: (*_profile_buffer(c), _scenario(c), c.sort_key())):
        rs = c.reps
        rows.append([c.name, str(len(rs)), _num(max_owd_s([c])),
                     fmt_ci(mean_ci95(_burst_value(r, 0, "completion_s") for r in rs), 1, 2, "incomplete"),
                     fmt_ci(mean_ci95(_burst_value(r, 1, "completion_s") for r in rs), 1, 2, "incomplete"),
                     fmt_ci(mean_ci95(_burst_value(r, 0, "jain") for r in rs), 1, 3, "incomplete"),
                     fmt_ci(mean_ci95(_burst_value(r, 1, "jain") for r in rs), 1, 3, "incomplete"),
                     fmt_ci(mean_ci95((r.summary.get("tcp") or {}).get("jain_between_bursts") for r in rs), 1, 3,
                            "incomplete"),
                     fmt_ci(mean_ci95((r.summary.get("tcp") or {}).get("rtos") for r in rs), 1, 1),
                     *(fmt_ci(mean_ci95(_timeouts(r, k) for r in rs), 1, 1, "not measured")
                       for k in ("timeouts", "spurious", "unknown"))])
    return md_table(IETF79_MEASURES_HEADER, rows) if rows else ["(no burst workload in these runs)"]


def _num(v: float | None) -> str:
    return "–" if v is None else f"{v:.3f}"


def _seed_cell(o: Ordering) -> str:
    if o.seed_a is None or o.seed_b is None:
        return o.seed_says
    return f"{o.seed_a:.3f} > {o.seed_b:.3f}" if o.seed_a > o.seed_b else f"{o.seed_a:.3f} ≤ {o.seed_b:.3f}"


def orderings_md(orderings: Sequence[Ordering]) -> list[str]:
    rows = [[o.seed, o.claim, _seed_cell(o), f"{_num(o.lab_a)} / {_num(o.lab_b)}", o.verdict] for o in orderings]
    return md_table(["seed / lab unit", "ordering (unit)", "seed", "lab (a / b)", "in the lab"], rows)


def _loss_rate(cs: Sequence[Case], jb_ms: float) -> dict:
    """mean_ci95 over every replication of ``cs`` of the loss rate after the jitter filter (pure + delay)."""
    return mean_ci95(r.summary["jitter_buffers_ms"][_jb_key(jb_ms)]["loss_rate"] for c in cs for r in c.reps)


def pam13_fig5_md(cases: Sequence[Case]) -> list[str]:
    """The lab's side of PAM'13 Fig. 5: loss rate after the jitter filter (%, mean ± 95 % CI over
    replications) at 40-100 ms jitter buffers, per FIFO web unit (profile, buffer, IW, N)."""
    rows = [[f"lab fifo {prof} {buf}", str(iw), str(n), str(sum(len(c.reps) for c in cs)),
             *(fmt_ci(_loss_rate(cs, jb), 100, 1) for jb in PAM13_FIG5_JB_MS)]
            for (prof, buf, iw, n), cs in sorted(web_fifo_units(cases).items())]
    return md_table(["source", "IW", "N", "reps", *(f"{jb} ms" for jb in PAM13_FIG5_JB_MS)], rows)


def early_late_level2(cs: Sequence[Case], jb_ms: float = 40, early_s: float = PAM13_FIG6_EARLY_S
                      ) -> tuple[float | None, float | None]:
    """Share of the kept audio packets at loss period level >= 2 sent within ``early_s`` of the first flow's
    start, and after it; replications pooled; None for a side without packets."""
    ks = [k for c in cs for r in c.reps if len(k := kept(r)) and "t_s" in k and k["t_s"].notna().all()]
    if not ks:
        return None, None
    t = np.concatenate([k["t_s"].to_numpy(dtype=float) for k in ks])
    bad = np.concatenate([k[f"level_{_jb_key(jb_ms)}"].to_numpy() >= 2 for k in ks])
    early = t < early_s
    share = [float(bad[m].mean()) if m.any() else None for m in (early, ~early)]
    return share[0], share[1]


def pam13_fig_orderings(cases: Sequence[Case]) -> list[Ordering]:
    """PAM'13's statements about Fig. 5 and 6 (module docstring), each against every FIFO web unit."""
    units = web_fifo_units(cases)
    links = sorted({(p, b) for p, b, _, _ in units}) or [("-", "-")]
    jb = PAM13_FIG5_JB_MS[0]
    out = []
    for prof, buf in links:
        def loss(iw: int, n: int) -> float | None:
            cs = units.get((prof, buf, iw, n))
            return _loss_rate(cs, jb)["mean"] if cs else None
        where = f"PAM'13 Fig. 5 / lab {prof} {buf}"
        for n in (1, 2, 6):
            out.append(Ordering(where, f"loss after the jitter filter at {jb} ms (share): IW10 > IW3 at N={n}",
                                None, None, loss(10, n), loss(3, n), PAM13_FIG5_IW))
        out.append(Ordering(where, f"loss after the jitter filter at {jb} ms (share): N=6 > N=1 at IW3",
                            None, None, loss(3, 6), loss(3, 1), PAM13_FIG5_N))
        for iw in (3, 10):
            for n in (1, 2, 6):
                cs = units.get((prof, buf, iw, n))
                early, late = early_late_level2(cs, 40, PAM13_FIG6_EARLY_S) if cs else (None, None)
                out.append(Ordering(f"PAM'13 Fig. 6 / lab {prof} {buf}",
                                    f"level >= 2 share at 40 ms, IW{iw} N={n}: first {PAM13_FIG6_EARLY_S:g} s after "
                                    "the start > the rest of the transfer", None, None, early, late, PAM13_FIG6))
    return out


SEED002_SOURCE = ("seed 002 (ns-2 RRTCC, mean σ)", "RRTCC (ns-2)")  # the seed's rows: source and stack cells
RTC_OWN = "accessnet.rtc"  # the stack cell of the lab's own [rtc] controller
STACK_ORDER = ("aiortc", "pion", RTC_OWN)  # a case's stacks side by side, in this order


def rtc_stack(r, per: dict | None = None) -> str:
    """The real-time flow's stack of a replication: meta.json's plan.workloads.webrtc.stack (aiortc where the
    key is absent: runs from before it existed), RTC_OWN for an [rtc] flow; for a replication whose meta.json
    holds no workloads plan, the stack its stats name (``metrics.overuse_seconds``), else by its scenario
    (webrtc*: aiortc)."""
    workloads = (r.meta.get("plan") or {}).get("workloads") or {}
    if "webrtc" in workloads:
        return str((workloads["webrtc"] or {}).get("stack") or "aiortc")
    if "rtc" in workloads:
        return RTC_OWN
    if per and per.get("overuse"):
        return str(per["overuse"]["stack"])
    return "aiortc" if str(r.meta.get("scenario", "")).startswith("webrtc") else RTC_OWN


def _rtc_reps(cases: Sequence[Case], n_rtc: int):
    """(unit, replication, per-flow metrics) for every replication with ``n_rtc`` real-time flows and a link
    delay in meta.json; unit = (link delay ms, scenario, AQM, stack)."""
    for c in cases:
        for r in c.reps:
            per = r.summary.get("rtc_flows") or ([r.summary["rtc"]] if r.summary.get("rtc") else [])
            prof = r.meta.get("profile")
            if len(per) != n_rtc or not isinstance(prof, dict) or prof.get("delay_ms") is None:
                continue
            yield (round(float(prof["delay_ms"])), _scenario(c), str(c.aqm), rtc_stack(r, per[0])), r, per


def _unit_order(u: tuple) -> tuple:
    """Rows of a delay: by scenario, AQM (the report's order), then stack (aiortc, Pion, the lab's own)."""
    d, sc, aqm, stack = u
    return (d, sc, AQM_ORDER.index(aqm) if aqm in AQM_ORDER else len(AQM_ORDER), aqm,
            STACK_ORDER.index(stack) if stack in STACK_ORDER else len(STACK_ORDER), stack)


def rtc_units(cases: Sequence[Case], n_rtc: int = 1) -> dict[tuple[int, str, str, str], list]:
    """Replications with ``n_rtc`` real-time flows, by (link delay ms, scenario, AQM, stack), in the tables'
    order: per replication the first flow's metrics (with ``n_rtc`` > 1: the list of every flow's,
    ``summarize_rep``'s ``rtc_flows``)."""
    out: dict[tuple[int, str, str, str], list] = {}
    for unit, _, per in _rtc_reps(cases, n_rtc):
        out.setdefault(unit, []).append(per[0] if n_rtc == 1 else per)
    return dict(sorted(out.items(), key=lambda kv: _unit_order(kv[0])))


def overuse_cell(flows: Sequence[dict]) -> str:
    """Over-use seconds of one flow over replications (module docstring): mean ± 95 % CI of the seconds and,
    in brackets, the mean share of the sampled seconds; "-" when no replication's flow logs its detector's
    state (the seed, the [rtc] controller), replications without it counted as missing."""
    ou = [f.get("overuse") for f in flows]
    if not any(ou):
        return "-"
    share = mean_ci95(o["overuse_share"] if o else None for o in ou)["mean"]
    return f"{fmt_ci(mean_ci95(o['overuse_s'] if o else None for o in ou), 1, 1)} ({100 * share:.0f} %)"


OVERUSE_LABEL = "over-use seconds (share)"


def seed002_md(cases: Sequence[Case]) -> list[str]:
    """Seed 002's "1 RRTCC and 5 TCP flows" table, the lab's rows under each link delay: per scenario and AQM
    each stack's row, with its over-use seconds (module docstring)."""
    units = rtc_units(cases)
    header = ["source", "stack", "delay (ms)", "reps", *(label for *_, label in SEED002_KEYS), OVERUSE_LABEL]
    rows = []
    for delay, seed in SEED002_1RTC_5TCP.items():
        rows.append([*SEED002_SOURCE, str(delay), "30",
                     *(f"{seed[k][0]:g} (σ {seed[k][1]:g})" for k, *_ in SEED002_KEYS), "-"])
        for (d, sc, aqm, stack), reps in units.items():
            if d != delay:
                continue
            rows.append([f"lab {sc} {aqm}", stack, str(d), str(len(reps)),
                         *(fmt_ci(mean_ci95(r.get(key) for r in reps), scale, 1) for _, key, scale, _ in SEED002_KEYS),
                         overuse_cell(reps)])
    return md_table(header, rows)


def seed002_two_md(cases: Sequence[Case]) -> list[str]:
    """Seed 002's "2 RRTCC with 10 TCP flows" table: each real-time flow's goodput and loss, the web flows'
    throughput and TFS (from the first flow's record: TFS counts every flow) and each flow's over-use seconds,
    the lab's rows per delay, scenario, AQM and stack."""
    units = rtc_units(cases, 2)
    cols = (("goodput1", 0, "goodput_bps", 1e-3), ("goodput2", 1, "goodput_bps", 1e-3),
            ("loss1", 0, "loss_rate", 100), ("loss2", 1, "loss_rate", 100),
            ("tcp", 0, "tcp_throughput_bps", 1e-3), ("tfs", 0, "tfs", 100))
    header = ["source", "stack", "delay (ms)", "reps", "flow 1 goodput (kbit/s)", "flow 2 goodput (kbit/s)",
              "flow 1 loss (%)", "flow 2 loss (%)", "TCP throughput, ON time (kbit/s)", "TFS (%)",
              f"flow 1 {OVERUSE_LABEL}", f"flow 2 {OVERUSE_LABEL}"]
    rows = []
    for delay, seed in SEED002_2RTC_10TCP.items():
        rows.append([*SEED002_SOURCE, str(delay), "30", *(f"{seed[k][0]:g} (σ {seed[k][1]:g})" for k, *_ in cols),
                     "-", "-"])
        for (d, sc, aqm, stack), reps in units.items():
            if d == delay:
                rows.append([f"lab {sc} {aqm}", stack, str(d), str(len(reps)),
                             *(fmt_ci(mean_ci95(r[i].get(key) for r in reps), scale, 1) for _, i, key, scale in cols),
                             *(overuse_cell([r[i] for r in reps]) for i in (0, 1))])
    return md_table(header, rows)


# Seed 002's stacks paired: (label, per-flow key or a function of the flows, scale, digits)
def _flow_mean(key: str):
    def f(per: list[dict]) -> float | None:
        xs = [p.get(key) for p in per]
        return None if any(x is None for x in xs) else float(np.mean(xs))
    return f


def _flow_overuse(per: list[dict]) -> float | None:
    xs = [p.get("overuse") for p in per]
    return None if not all(xs) else float(np.mean([x["overuse_s"] for x in xs]))


STACKS_PAIRED = (("Δ RTC goodput (kbit/s)", _flow_mean("goodput_bps"), 1e-3, 1),
                 ("Δ RTC loss (% points)", _flow_mean("loss_rate"), 100, 2),
                 ("Δ TCP throughput, ON time (kbit/s)", lambda per: per[0].get("tcp_throughput_bps"), 1e-3, 1),
                 ("Δ TFS (% points)", lambda per: per[0].get("tfs"), 100, 1),
                 ("Δ over-use seconds", _flow_overuse, 1, 1))


def _signed(ci: dict, scale: float, digits: int) -> str:
    if ci["mean"] is None:
        return "–" + (f" ({ci['n_missing']} missing)" if ci["n_missing"] else "")
    out = f"{ci['mean'] * scale:+.{digits}f}"
    if ci["ci95"] is not None:
        out += f" ± {ci['ci95'] * scale:.{digits}f}"
    return out + (f" ({ci['n_missing']} missing)" if ci["n_missing"] else "")


def stack_pairs(cases: Sequence[Case], n_rtc: int, a: str = "pion", b: str = "aiortc"
                ) -> dict[tuple[int, str, str], list[tuple[list, list]]]:
    """Per (link delay ms, scenario, AQM) run on both stacks: the pairs (``a``'s flows, ``b``'s flows) of
    replications with the same replication number and meta.json seed (each replication in one pair at most)."""
    sides: dict[tuple, dict[str, list]] = {}
    for (d, sc, aqm, stack), r, per in _rtc_reps(cases, n_rtc):
        if stack in (a, b):
            sides.setdefault((d, sc, aqm), {a: [], b: []})[stack].append((r, per))
    out = {}
    for unit, side in sides.items():
        pairs, free = [], list(side[b])
        for r, per in side[a]:
            key = (r.meta.get("rep"), r.meta.get("seed"))
            k = next((i for i, (rb, _) in enumerate(free) if key[1] is not None
                      and (rb.meta.get("rep"), rb.meta.get("seed")) == key), None)
            if k is not None:
                pairs.append((per, free.pop(k)[1]))
        if pairs:
            out[unit] = pairs
    return dict(sorted(out.items(), key=lambda kv: _unit_order((*kv[0], ""))))


def seed002_stacks_md(cases: Sequence[Case]) -> list[str]:
    """Pion − aiortc per case run on both stacks, paired by replication (module docstring); one- and two-flow
    cases (with two flows, each side's goodput, loss and over-use seconds are the mean over its flows)."""
    rows = []
    for n_rtc in (1, 2):
        for (d, sc, aqm), pairs in stack_pairs(cases, n_rtc).items():
            rows.append([f"lab {sc} {aqm}", str(d), str(len(pairs)),
                         *(_signed(mean_ci95(None if f(x) is None or f(y) is None else f(x) - f(y) for x, y in pairs),
                                   scale, digits) for _, f, scale, digits in STACKS_PAIRED)])
    if not rows:
        return ["(no case ran on both stacks with paired replications)"]
    return md_table(["case", "delay (ms)", "pairs", *(h for h, *_ in STACKS_PAIRED)], rows)


def seeds_md(cases: Sequence[Case]) -> list[str]:
    """The report's "Seeds versus lab" section."""
    return ["## Seeds versus lab", "",
            "The seeds' numbers (`experiments/seeds.py` says where each comes from) beside the lab's, computed "
            "with the same definitions. PAM'13 measured a real HSPA network (50 replications); the lab's rows "
            "pool the FIFO replications of web workloads with the same IW and number of flows, per link "
            "profile and buffer. An ordering \"holds\" when the lab orders the two values as the seed does, "
            "\"differs\" when not, \"–\" when the runs hold no data for one side.", "",
            "### PAM'13 Table 1: IPDV (s)", "", *pam13_table_md(cases), "",
            "### PAM'13 Fig. 5: loss rate after the jitter filter (%)", "",
            "PAM'13 gives Fig. 5 as curves (IW10 near 100 % at small jitter buffers); the lab's FIFO web units, "
            "mean ± 95 % CI over replications. Its statements are checked in the orderings below.", "",
            *pam13_fig5_md(cases), "",
            "### IETF79's measures: bursts of web flows", "",
            "Per burst case: the audio's largest one-way delay, each burst's elapsed time and the fairness "
            "(Jain's index) within and between the bursts, and the RTOs. The server counts its RTOs itself; the "
            "captures count the timeouts of both ends (the client's SYN and the server's SYN-ACK too) and tell "
            "the spurious ones apart: the first copy reached the receiver all the same "
            "(`experiments/timeouts.py`).", "", *ietf79_measures_md(cases), "",
            "### Orderings", "",
            *orderings_md([*pam13_orderings(cases), *pam13_fig_orderings(cases), *ietf79_orderings(cases),
                           *ietf79_statements(cases)]), "",
            "### Seed 002: one real-time flow against five web users", "",
            "Seed 002's ns-2 runs (RRTCC) beside the lab's replications with a real-time flow (mean ± 95 % CI), "
            "one row per scenario, AQM and stack (aiortc: receiver-side delay-based estimate and REMB; pion: "
            "Pion's send-side GCC; accessnet.rtc: the lab's own controller); TFS = TCP throughput / (total "
            "throughput / number of flows). Over-use seconds: per replication, the seconds at whose "
            "once-a-second stats sample the flow's delay-based detector was in over-use (aiortc: its "
            "receiver's stats; Pion: its sender's GCC stats), mean ± 95 % CI, in brackets the share of the "
            "sampled seconds; \"-\" where the flow logs no such detector (the seed; the lab's own controller).",
            "", *seed002_md(cases), "",
            "### Seed 002: two real-time flows against ten web users", "", *seed002_two_md(cases), "",
            "### Seed 002: Pion − aiortc, paired by replication", "",
            "Where a case ran on both stacks: replication k of Pion minus replication k of aiortc (the same "
            "seed: both met the same web users), mean ± 95 % CI of the differences; with two real-time flows, "
            "each side's mean over its flows.", "", *seed002_stacks_md(cases), ""]
