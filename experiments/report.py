"""Tables and the written report of a run directory.

``summary_table`` is the table the main job prints at the end of a run.
``write_report`` (CLI: ``python -m experiments.report RUN_DIR [...] [--out DIR]``)
builds a Markdown report with figures from the run's data files alone
(docs/data-formats.md), Flent style: setup, a main table per AQM x IW x N
with 95 % confidence intervals, paired differences against FIFO, IWA's held-out table
(experiments.iwa_table), the seeds' IPDV table, the failed
replications, and the figures of ``experiments.plots``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd

from refmodel.constants import TELEMETRY_ETHERTYPE

from .bottleneck_check import summary as bottleneck_summary
from .cases import (JB_MAIN_MS, Case, Rep, ReportError, case_pair, case_stats, jb_ci, kept, load_cases,
                    pooled_ipdv_ns, pooled_levels_over_time, rep_number_of, rep_values, web_bursts)
from .cases import rep_scalars  # noqa: F401  (a name of report before experiments.cases: tests/test_report.py)
from .iwa_table import TARGETS_TEXT, iwa_table_md
from .markdown import fmt_ci, md_table
from .metrics import (IPDV_PERCENTILES, JITTER_BUFFERS_MS, NS, MetricsError, bulk_bursts, ipdv_table, mean_ci95,
                      read_csv, read_meta, summarize_rep)
from .seeds import seeds_md
from .telemetry_reader import read_telemetry

# experiments.plots (matplotlib) is imported where figures are drawn, so that the main job's summary_table
# does not depend on matplotlib.


def collect(rundir: Path) -> tuple[list[dict], list[tuple[str, str]]]:
    ok, failed = [], []
    for rep in sorted(Path(rundir).glob("*/rep[0-9]*")):
        if rep.name.endswith(".tmp"):
            continue
        try:
            ok.append(summarize_rep(rep))
        except MetricsError as e:
            failed.append((f"{rep.parent.name}/{rep.name}", str(e)))
    return ok, failed


def _link_of(r: dict) -> str:
    """The part of a case name that is neither AQM nor IW: scenario, profile and buffer (e.g. hspa-48p)."""
    case, tail = str(r.get("case") or ""), f"-{r['aqm']}-iw{r['iw']}"
    return case[: -len(tail)] if case.endswith(tail) else case or "-"


def summary_table(rundir: Path) -> str:
    """Per link (scenario, profile, buffer) x AQM x IW: audio OWD median / 99 %, share of audio packets with
    loss period level >= 2 at a 40 ms jitter buffer, web burst completion time (bulk flows are no bursts), RTOs,
    bulk goodput (means over replications; '-' without a bulk flow or a measured one)."""
    reps, failed = collect(rundir)
    groups: dict[tuple, list[dict]] = {}
    for r in reps:
        groups.setdefault((_link_of(r), str(r["aqm"]), r["iw"]), []).append(r)
    width = max([len(k[0]) for k in groups] + [4]) + 2
    lines = [f"{'link':<{width}}{'aqm':<8}{'IW':>4}{'reps':>6}{'switch':>8}{'OWD med ms':>12}{'OWD p99 ms':>12}"
             f"{'level>=2 @40ms':>16}{'burst s':>22}{'RTOs':>6}{'bulk kbit/s':>13}"]
    for (link, aqm, iw), rs in sorted(groups.items()):
        med = np.mean([r["audio"]["owd_median_s"] for r in rs]) * 1e3
        p99 = np.mean([r["audio"]["owd_p99_s"] for r in rs]) * 1e3
        lv = np.mean([sum(r["jitter_buffers_ms"]["40"]["levels"][2:]) for r in rs]) if all(
            "40" in r["jitter_buffers_ms"] for r in rs) else float("nan")
        web = [b for r in rs for b in web_bursts(r, bulk_bursts(read_meta(Path(r["path"]))))]
        bursts = [b["completion_s"] for b in web if b["completion_s"] is not None]
        incomplete = sum(1 for b in web if b["completion_s"] is None)
        gp = [r["bulk"]["goodput_bps"] for r in rs if r.get("bulk", {}).get("goodput_bps") is not None]
        rtos = sum(r["tcp"]["rtos"] for r in rs if "tcp" in r)
        bt = f"{np.mean(bursts):.2f}" if bursts else "-"
        bt += f" ({incomplete} incomplete)" if incomplete else ""
        bulk = f"{np.mean(gp) / 1e3:.0f}" if gp else "-"
        lines.append(f"{link:<{width}}{aqm:<8}{iw:>4}{len(rs):>6}{rs[0]['switch']:>8}{med:>12.1f}{p99:>12.1f}"
                     f"{lv:>16.3f}{bt:>22}{rtos:>6}{bulk:>13}")
    if failed:
        lines.append(f"FAILED replications ({len(failed)}):")
        lines += [f"  {name}: {why}" for name, why in failed]
    return "\n".join(lines)


# ============================================================================= the written report
#
# ``write_report`` / ``python -m experiments.report``: everything below is built from the raw data files of
# docs/data-formats.md alone (no re-running): metrics from experiments.metrics, the replications by case and
# their numbers from experiments.cases, figures from experiments.plots, one Markdown file with the images beside
# it.

CLOCK_ALIGN_MIN_NS = NS  # telemetry timestamps further than this from the capture clock are switch-relative


def lot_bin_s(min_reps: int) -> float:
    """Time bin of the loss-level figure: one audio interval (20 ms, the seeds' resolution) when there are
    20 or more replications, wider with fewer (at least ~20 samples per bin), at most 100 ms."""
    return round(min(0.1, 0.02 * math.ceil(20 / max(min_reps, 1))), 3)


# ----------------------------------------------------------------------------- telemetry of one replication


def capture_offset_ns(pcap: Path, records: pd.DataFrame) -> int:
    """Shift that puts telemetry ``ts_ns`` on the shared clock. BMv2 stamps packets with its own time since
    start (docs/telemetry.md), the reference model with CLOCK_REALTIME; the capture (tcpdump, shared clock)
    stamps every record a little after the switch did, so the earliest capture-minus-switch time is the
    offset. Returns 0 when the two clocks already agree within CLOCK_ALIGN_MIN_NS."""
    cap = []
    with open(pcap, "rb") as f:
        for ts, buf in dpkt.pcap.Reader(f):
            if buf[12:14] == TELEMETRY_ETHERTYPE.to_bytes(2, "big"):
                cap.append(int(round(float(ts) * NS)))
    if len(cap) != len(records):
        raise MetricsError(f"{pcap}: {len(cap)} telemetry frames but {len(records)} records read")
    if not cap:
        return 0
    off = int((np.asarray(cap, dtype=np.int64) - records["ts_ns"].to_numpy(dtype=np.int64)).min())
    return off if abs(off) > CLOCK_ALIGN_MIN_NS else 0


TUNING_COLUMNS = ["t_ns", "target_ns", "new_flows"]
TUNING_OPTIONAL = ["codel_target_ns", "windows"]  # written since IWA 2


def read_tuning(rep: Path) -> pd.DataFrame | None:
    """tuning.csv (the controller's closed loop) if the replication has one, else None; a malformed one
    raises MetricsError naming it. The columns the switch timeline draws (docs/data-formats.md)."""
    path = Path(rep) / "tuning.csv"
    if not path.exists():
        return None
    try:
        header = set(pd.read_csv(path, nrows=0).columns)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        header = set()  # read_csv below names the problem
    return read_csv(path, TUNING_COLUMNS + [c for c in TUNING_OPTIONAL if c in header])


def timeline(r: Rep, c: Case, fig_dir: Path) -> tuple[list[Path], str]:
    """The switch-timeline figure of one replication and a caption; MetricsError names a bad file."""
    from .plots import switch_timeline  # matplotlib: see the note under the imports

    pcap = r.path / "telemetry.pcap"
    tel, _skipped = read_telemetry(pcap)
    tel = tel.assign(ts_ns=tel["ts_ns"] + capture_offset_ns(pcap, tel))
    flows = r.flows
    if flows is not None:
        t0 = int(flows["start_ns"].min())
        ends = flows["end_ns"]
        xlim = (-1.0, float(int(ends.max()) - t0) / NS + 1.0) if ends.notna().all() else None
    else:
        t0, xlim = int(r.meta.get("tcp_start_ns") or r.meta["audio_start_ns"]), None
    note = ""
    try:
        tuning = read_tuning(r.path)
    except MetricsError as e:
        tuning, note = None, f" Controller panels left out: {e}."
    name = f"timeline_{c.name}_{r.path.name}"
    paths = switch_timeline(tel, t0, fig_dir, name, f"{c.label}, {r.path.name}: switch telemetry", tuning, xlim)
    cap = (f"{c.label}, {r.path.name}: the switch's predicted sojourn and backlog per packet, AQM drops/marks "
           f"by reason" + (", controller targets and flow starts per period (tuning.csv)" if tuning is not None else
                           " (no tuning.csv: no controller panels)") + "." + note)
    return paths, cap


# ----------------------------------------------------------------------------- figures


def draw_figures(cases: list[Case], fig_dir: Path, jbs: Sequence[float], jb_ms: float = JB_MAIN_MS
                 ) -> tuple[list[tuple[Path, str]], list[str]]:
    """All figures of the report into ``fig_dir``: (PNG path, caption) per figure and notes on figures that
    could not be drawn (a missing or broken telemetry.pcap / tuning.csv, named)."""
    from .plots import case_style, completion_cdf, good_quality_vs_jitter, loss_vs_jitter, owd_cdf  # matplotlib
    from .plots import levels_over_time as plot_levels

    ok = [c for c in cases if c.reps]
    styles = {c.label: case_style(c.aqm, c.iw) for c in ok}
    figs: list[tuple[Path, str]] = []
    notes: list[str] = []
    if not ok:
        return figs, ["No figures: no replication could be read."]
    pooled_owd = {c.label: np.concatenate([kept(r)["owd_ns"].to_numpy(dtype=float) for r in c.reps]) for c in ok}
    figs.append((owd_cdf(pooled_owd, fig_dir, styles)[0],
                 "Audio one-way delay CDF per case, packets sent while TCP was active, all replications pooled."))
    figs.append((loss_vs_jitter({c.label: jb_ci(c, "loss_rate", jbs) for c in ok}, fig_dir, styles)[0],
                 "Audio loss rate after the jitter filter (pure + delay-based) vs jitter buffer size; mean over "
                 "replications, 95 % CI error bars."))
    bin_s = lot_bin_s(min(len(c.reps) for c in ok))
    ncols = len({(c.iw, c.n_flows) for c in ok})
    lots = {c.label: pooled_levels_over_time(c, jb_ms, bin_s) for c in ok}
    figs.append((plot_levels(lots, fig_dir, jb_ms, ncols=ncols if ncols <= 4 else None)[0],
                 f"Loss period level of the audio over time since TCP start, {jb_ms:g} ms jitter buffer, "
                 f"{bin_s * 1e3:g} ms bins, all replications pooled; shares per bin (stacked), dashed: number "
                 "of samples normalised by its maximum (flows complete, samples decline)."))
    figs.append((good_quality_vs_jitter({c.label: jb_ci(c, "good_quality", jbs) for c in ok}, fig_dir,
                                        styles)[0],
                 "Share of audio packets of good quality (loss period level 0 or 1) vs jitter buffer size; mean "
                 "over replications, 95 % CI error bars."))
    tcp_cases = [c for c in ok if any("tcp" in r.summary for r in c.reps)]
    if tcp_cases:
        times = {c.label: [b["completion_s"] for r in c.reps for b in r.summary.get("tcp", {}).get(
            "bursts", {}).values() if b["completion_s"] is not None] for c in tcp_cases}
        incomplete = {c.label: sum(1 for r in c.reps for b in r.summary.get("tcp", {}).get("bursts", {}).values()
                                   if b["completion_s"] is None) for c in tcp_cases}
        figs.append((completion_cdf(times, fig_dir, incomplete, styles)[0],
                     "Web burst completion time CDF per case (first connect() to last byte), all replications "
                     "pooled; incomplete bursts counted in the legend."))
    for c in ok:
        r = c.reps[0]
        try:
            paths, cap = timeline(r, c, fig_dir)
        except (MetricsError, OSError) as e:
            notes.append(f"No switch timeline for {c.label} ({r.path}): {e}")
            continue
        figs.append((paths[0], cap))
    return figs, notes


# ----------------------------------------------------------------------------- Markdown


MAIN_HEADER = ["case", "AQM", "IW", "N", "reps", "failed", "OWD median (ms)", "OWD p99 (ms)",
               "level ≥ 2 @{jb} (%)", "loss rate @{jb} (%)", "good quality @{jb} (%)", "burst completion (s)",
               "RTOs per rep", "bulk goodput (kbit/s)", "frozen flows per rep"]


def main_table(cases: list[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """The report's main table, one row per case (AQM x IW x N), mean ± 95 % CI over replications."""
    rows = []
    for c in cases:
        st = case_stats(c, jb_ms) if c.reps else None
        cells = ([fmt_ci(st["owd_median_s"], 1e3), fmt_ci(st["owd_p99_s"], 1e3), fmt_ci(st["level2plus"], 100),
                  fmt_ci(st["loss_rate"], 100), fmt_ci(st["good_quality"], 100),
                  fmt_ci(st["burst_s"], 1, 2, "incomplete"), fmt_ci(st["rtos"], 1, 1),
                  fmt_ci(st["bulk_bps"], 1e-3, 0, "not measured"), fmt_ci(st["frozen"], 1, 1, "not measured")]
                 if st else ["–"] * 9)
        rows.append([c.name, str(c.aqm), str(c.iw), str(c.n_flows), str(len(c.reps)), str(len(c.failed)), *cells])
    return md_table([h.format(jb=f"{jb_ms:g} ms") for h in MAIN_HEADER], rows)


PAIRED_KEYS = (("owd_p99_s", "Δ OWD p99 (ms)", 1e3, 1), ("level2plus", "Δ level ≥ 2 @{jb} (points)", 100, 1),
               ("good_quality", "Δ good quality @{jb} (points)", 100, 1), ("burst_s", "Δ burst completion (s)", 1, 2),
               ("rtos", "Δ RTOs per rep", 1, 1), ("bulk_bps", "Δ bulk goodput (% of FIFO)", 100, 1))
MISSING_WORD = {"bulk_bps": "not measured"}  # what a pair without a value lacks; default "incomplete" (a burst)


def paired_reps(c: Case, base: Sequence[Case]) -> tuple[list[tuple[Rep, Rep]], int]:
    """(c's replication k, the base's replication k) for every replication number k read ok on both sides
    (failed and unreadable replications are not in Case.reps); with several runs holding replication k, the
    pair is taken within one run directory. Also how many ok replications of either side have no partner."""
    partners: dict[int, list[Rep]] = {}
    for b in base:
        for r in b.reps:
            partners.setdefault(rep_number_of(r), []).append(r)
    pairs, used = [], set()
    for r in c.reps:
        cands = partners.get(rep_number_of(r), [])
        if len(cands) > 1:
            cands = [b for b in cands if b.path.parent.parent == r.path.parent.parent]
        if len(cands) == 1 and cands[0].path not in used:
            pairs.append((r, cands[0]))
            used.add(cands[0].path)
    return pairs, len(c.reps) + sum(len(b.reps) for b in base) - 2 * len(pairs)


def rep_diff(x: dict, y: dict, key: str) -> float | None | bool:
    """x - y of one rep_values key (bulk goodput: relative, (x - y) / y); None when either side has no value (an
    incomplete burst, a bulk goodput not measured or FIFO's zero: counted as missing); False when the value does
    not apply to the pair (bursts: either side has none; RTOs: neither has TCP; bulk: either has no bulk flow)."""
    if key == "burst_s" and not (x["bursts"] and y["bursts"]):
        return False
    if key == "bulk_bps":
        if not (x.get("has_bulk") and y.get("has_bulk")):
            return False
        return None if x[key] is None or not y[key] else (x[key] - y[key]) / y[key]
    if x[key] is None and y[key] is None and key == "rtos":
        return False
    return None if x[key] is None or y[key] is None else x[key] - y[key]


def paired_diffs(cases: list[Case], jb_ms: float = JB_MAIN_MS, base: str = "fifo") -> list[dict]:
    """Per case whose AQM is not ``base`` and whose pairing unit has a ``base`` case: replication k minus the
    base AQM's replication k, over the k read ok on both sides, for every PAIRED_KEYS value, as mean_ci95 of
    the differences ("pairs" = n). "seeds_differ": pairs whose meta.json seeds differ or are missing (runs
    before paired seeds: the row is unpaired); "left_out": ok replications without an ok partner."""
    bases: dict[str, list[Case]] = {}
    for c in cases:
        if c.aqm == base:
            bases.setdefault(case_pair(c), []).append(c)
    out = []
    for c in sorted(cases, key=lambda c: (case_pair(c), c.sort_key())):
        unit = case_pair(c)
        if c.aqm == base or unit not in bases:
            continue
        pairs, left_out = paired_reps(c, bases[unit])
        diffs: dict[str, list] = {k: [] for k, *_ in PAIRED_KEYS}
        for r, b in pairs:
            x, y = rep_values(r, jb_ms), rep_values(b, jb_ms)  # bulk flows are no bursts, as in the main table
            for k in diffs:
                d = rep_diff(x, y, k)
                if d is not False:
                    diffs[k].append(d)
        differ = sum(1 for r, b in pairs if r.meta.get("seed") is None or r.meta.get("seed") != b.meta.get("seed"))
        out.append({"case": c, "pair": unit, "pairs": len(pairs), "left_out": left_out, "seeds_differ": differ,
                    "ci": {k: mean_ci95(v) for k, v in diffs.items()}})
    return out


def fmt_diff(ci: dict, scale: float = 1.0, digits: int = 1, missing: str = "missing") -> str:
    """A paired difference: signed mean ± 95 % half width ('± n/a' with fewer than 2 pairs), '–' without
    any; pairs without a value (an incomplete burst) are counted."""
    if ci["mean"] is None:
        return "–" + (f" ({ci['n_missing']} {missing})" if ci["n_missing"] else "")
    m = ci["mean"] * scale
    out = f"{0.0 if abs(m) < 0.5 * 10 ** -digits else m:+.{digits}f} ± "
    out += f"{ci['ci95'] * scale:.{digits}f}" if ci["ci95"] is not None else "n/a"
    return out + (f" ({ci['n_missing']} {missing})" if ci["n_missing"] else "")


def seeds_cell(d: dict) -> str:
    if not d["pairs"]:
        return "–"
    return "same" if not d["seeds_differ"] else f"UNPAIRED ({d['seeds_differ']} of {d['pairs']} differ)"


PAIRED_HEADER = ["pairing unit", "AQM", "n", "left out", *(h for _, h, *_ in PAIRED_KEYS), "seeds"]


def paired_md(cases: list[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """The paired-differences table: one row per pairing unit with a FIFO case and per other AQM in it."""
    rows = [[d["pair"], str(d["case"].aqm), str(d["pairs"]), str(d["left_out"]),
             *(fmt_diff(d["ci"][k], scale, digits, MISSING_WORD.get(k, "incomplete"))
               for k, _, scale, digits in PAIRED_KEYS),
             seeds_cell(d)] for d in paired_diffs(cases, jb_ms)]
    if not rows:
        return ["No case has a FIFO partner in these runs."]
    return md_table([h.format(jb=f"{jb_ms:g} ms") for h in PAIRED_HEADER], rows)


def held_out_md(cases: list[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """IWA's held-out evaluation (experiments.iwa_table) as a section, when the runs hold an iwa case."""
    if not any(c.aqm == "iwa" for c in cases):
        return []
    return ["## Held-out evaluation of IWA", "",
            f"Per pairing unit, means over the replications read ok (\"-\": missing), level ≥ 2 at a {jb_ms:g} ms "
            f"jitter buffer; {TARGETS_TEXT} "
            "`python -m experiments.iwa_table RUN_DIR --out docs/iwa-results.md` writes this table into the document.",
            "", *iwa_table_md(cases, jb_ms), ""]


IPDV_COLUMNS = [("min", "Min"), *((f"p{p}", "Median" if p == 50 else f"{p}%") for p in IPDV_PERCENTILES),
                ("max", "Max")]


def ipdv_md(cases: list[Case]) -> list[str]:
    """The seeds' Table 1 (IPDV CDF in seconds) per case, replications pooled."""
    rows = []
    for c in cases:
        v = pooled_ipdv_ns(c) if c.reps else np.zeros(0)
        t = ipdv_table(v)
        rows.append([str(c.aqm), str(c.iw), str(c.n_flows), str(len(c.reps)), str(v.size),
                     *((f"{t[k]:.4f}" if t else "–") for k, _ in IPDV_COLUMNS)])
    return md_table(["AQM", "IW", "N", "reps", "pairs", *(h for _, h in IPDV_COLUMNS)], rows)


def bottleneck_md(cases: list[Case]) -> list[str]:
    """Per case, the single-bottleneck check of every replication (experiments.bottleneck_check): how far an
    audio packet's delay beyond the base delay was from the sojourn the switch predicted for it, for packets
    that met an empty queue and for those that waited; the worst replication's p99 is shown. The wire's
    (delay lines') own worst lateness says whether the host stalled during the run."""
    rows = []
    for c in cases:
        sums = []
        for r in c.reps:
            try:
                sums.append(bottleneck_summary(r.path))
            except MetricsError:  # no telemetry (kernel backends) or no audio record
                pass
        if not sums:
            rows.append([c.name, str(c.aqm), str(c.iw), str(c.n_flows), "0", *["–"] * 5])
            continue

        def worst(part: str) -> str:
            v = [s[part]["p99_ms"] for s in sums if s[part].get("packets")]
            return f"{max(v):.2f}" if v else "–"

        rows.append([c.name, str(c.aqm), str(c.iw), str(c.n_flows), str(len(sums)),
                     str(sum(s["idle"]["packets"] for s in sums)), worst("idle"),
                     str(sum(s["queued"]["packets"] for s in sums)), worst("queued"),
                     f"{max(s['wire_late_max_ms'] for s in sums):.2f}"])
    return md_table(["case", "AQM", "IW", "N", "reps", "idle pkts", "idle p99 (ms)", "queued pkts", "queued p99 (ms)",
                      "wire late max (ms)"], rows)


def _distinct(values: Iterable) -> str:
    vals = sorted({json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else str(v)
                   for v in values if v is not None and v != ""})
    return ", ".join(vals) if vals else "unknown"


def _span(values: Iterable) -> str:
    """min–max of numbers (one value: itself), 'unknown' without any."""
    v = [float(x) for x in values if isinstance(x, (int, float)) and not isinstance(x, bool)]
    if not v:
        return "unknown"
    return f"{min(v):g}" if min(v) == max(v) else f"{min(v):g}–{max(v):g}"


def _profile(p: dict | None) -> str | None:
    if not isinstance(p, dict):
        return None
    rate = p.get("rate_bps")
    rate_s = f"{rate / 1e6:g} Mbit/s" if isinstance(rate, (int, float)) else "rate ?"
    return (f"{p.get('name', '?')}: {rate_s}, one-way delay {p.get('delay_ms', '?')} ms"
            f" (+{p.get('server_delay_ms', '?')} ms server side)")


def _buffer(b: dict | None) -> str | None:
    if not isinstance(b, dict):
        return None
    return ", ".join(f"{v} {k}" for k, v in b.items())


def _run_json(d: Path) -> tuple[dict, str | None]:
    """run.json of a run directory and a note when it is missing or broken (the report still goes on: the
    replications' meta.json carry what the tables need)."""
    path = d / "run.json"
    try:
        return json.loads(path.read_text()), None
    except FileNotFoundError:
        return {}, f"{path}: missing"
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        return {}, f"{path}: not JSON (truncated?): {e}"


def setup_md(run_dirs: Sequence[Path], cases: list[Case], failed: list[dict]) -> list[str]:
    """The setup section: what was run (run.json) and what the replications say they were (meta.json)."""
    metas = [r.meta for c in cases for r in c.reps]
    for f in failed:
        try:
            metas.append(read_meta(Path(f["path"]), require_ok=False))
        except MetricsError:
            pass
    out = []
    versions: dict[str, set] = {}
    for d in map(Path, run_dirs):
        rj, note = _run_json(d)
        desc = rj.get("file", {}).get("description") if isinstance(rj.get("file"), dict) else None
        out.append(f"- run `{d}`: scenario **{rj.get('scenario', '?')}**" + (f" — {desc}" if desc else "")
                   + (f"; command `{' '.join(map(str, rj['argv']))}`" if rj.get("argv") else "")
                   + (f"; {rj['reps']} replications asked per case" if rj.get("reps") else "")
                   + (f"; switch asked: {rj['switch']}" if rj.get("switch") else "")
                   + (f" ({note})" if note else ""))
        for k, v in (rj.get("versions") or {}).items():
            versions.setdefault(k, set()).add(str(v))
    for m in metas:
        for k, v in (m.get("versions") or {}).items():
            versions.setdefault(k, set()).add(str(v))
    n_ok = sum(len(c.reps) for c in cases)
    out += [
        f"- scenario: {_distinct(m.get('scenario') for m in metas)}",
        f"- profile: {_distinct(_profile(m.get('profile')) for m in metas)}",
        f"- buffer: {_distinct(_buffer(m.get('buffer')) for m in metas)}",
        f"- AQM: {', '.join(dict.fromkeys(str(c.aqm) for c in cases))}",
        f"- initial window (segments): {_distinct(m.get('iw') for m in metas)}; "
        f"parallel flows N: {_distinct(m.get('n_flows') for m in metas)}; "
        f"congestion control: {_distinct(m.get('cc') for m in metas)}; "
        f"IP: {_distinct('IPv' + str(m.get('ip') or 4) for m in metas)}",
        f"- replications: {n_ok} read, {len(failed)} failed, over {len(cases)} cases",
        f"- switch: {_distinct(m.get('switch') for m in metas)}; delay: {_distinct(m.get('delay') for m in metas)}; "
        f"run length: {_span(m.get('duration_s') for m in metas)} s",
        "- versions: " + ("; ".join(f"{k} {', '.join(sorted(v))}" for k, v in sorted(versions.items()))
                          or "unknown"),
    ]
    return out


def write_report(run_dirs: Sequence[Path], out_dir: Path, jitter_buffer_ms: float = JB_MAIN_MS) -> Path:
    """Compute the metrics of every replication under ``run_dirs``, draw the figures into out_dir/figures/
    and write out_dir/report.md (setup, main table, IPDV table, failed replications, figures); returns the
    report's path. Raises ReportError when a directory does not exist or holds no replication."""
    return make_report(run_dirs, out_dir, jitter_buffer_ms)[0]


def seeds_section(cases: list[Case]) -> list[str]:
    """The seeds' numbers beside the lab's (``experiments.seeds``)."""
    return seeds_md(cases)


def _main_results_md(cases: list, jitter_buffer_ms: float) -> list[str]:
    """The report's main table with how to read it."""
    jb = f"{jitter_buffer_ms:g} ms"
    return [
        f"## Main results ({jb} jitter buffer)", "",
        "Mean ± 95 % confidence interval (Student t) over replications; the ± part only with 2 or more "
        "replications. Audio values are over the packets sent while at least one TCP flow was active (overlap "
        f"filter). Level ≥ 2: share of audio packets in a loss period of 40 ms or more at a {jb} jitter buffer; "
        "good quality: level 0 or 1. Burst completion: first connect() to last byte of a burst (a replication "
        "with an incomplete burst counts as \"incomplete\", not as a time). RTOs: retransmission timeouts "
        "seen by the server, per replication. Bulk goodput (workloads with a bulk flow): its in-order bytes "
        "from 2 s after its start to 2 s before the audio's end, from the client's ACKs in client.pcap "
        "(`experiments.metrics.bulk_goodput`); a replication without that capture counts as \"not "
        "measured\". Frozen flows: TCP connections of the web server below half their fair share for more "
        "than 2 s while they had data (`experiments.metrics.frozen_flows`, from server.pcap), per "
        "replication.", "",
        *main_table(cases, jitter_buffer_ms), ""
    ]


def _paired_md_section(cases: list, jitter_buffer_ms: float) -> list[str]:
    """The paired differences against FIFO with how to read them."""
    jb = f"{jitter_buffer_ms:g} ms"
    return [
        "## Paired differences against FIFO", "",
        "Every AQM of a pairing unit (scenario, profile, buffer, IW, initial RTO, IP family) draws the same "
        "traffic in replication k "
        "(same seed: start times, sizes, tool and switch seeds). Per replication number k read ok for both "
        "the AQM and FIFO: the difference AQM − FIFO; mean ± 95 % confidence interval (Student t, n − 1 "
        "degrees of freedom) over the n pairs, \"n/a\" with fewer than 2; negative is lower than FIFO. "
        f"Level ≥ 2 and good quality in percentage points at a {jb} jitter buffer; burst completion only where "
        "the workload has bursts (a bulk flow is none; a pair with an incomplete burst is counted, not "
        "differenced). Left out: replications read ok whose partner failed or is missing. Seeds: the pairs' "
        "`seed` in meta.json must agree; UNPAIRED marks rows where they do not (runs made before "
        "replications were paired): those differences are not paired ones. Bulk goodput where both have a "
        "bulk flow, relative: (AQM − FIFO) / FIFO of each pair in % (issue 11's target: IWA ≥ 95 % of FIFO's, "
        "i.e. ≥ −5 %); a pair where either was not measured is counted, not differenced.", "",
        *paired_md(cases, jitter_buffer_ms), ""
    ]


def _ipdv_and_bottleneck_md(cases: list) -> list[str]:
    """The IPDV CDFs and the single-bottleneck check, with how to read them."""
    return [
        "## IPDV (as the seeds' Table 1)", "",
        "IPDV (RFC 3393) of consecutive audio packets that both arrived, sent while TCP was active; one CDF "
        "per case over all its replications pooled; seconds.", "",
        *ipdv_md(cases), "",
        "## Single-bottleneck check", "",
        "|OWD − base delay − the switch's predicted sojourn| per audio packet: the switch's modelled queue "
        "is the only place a packet waits when this stays within about 1 ms. Idle: packets that met an empty "
        "queue; queued: packets that waited. The worst replication's 99th percentile per case. Wire late: "
        "the delay lines' own worst lateness in the case; above about 1 ms the host itself stalled, and "
        "that replication's delays carry the stall.", "",
        *bottleneck_md(cases), ""
    ]


def _tail_md(failed: list, figs: list, notes: list, out_dir: Path) -> list[str]:
    """Failed replications, figures (and those not drawn) and the notes on method."""
    lines = ["## Failed replications", ""]
    if failed:
        lines += [f"- `{f['case']}/{f['rep']}`: {f['error']}" for f in failed]
    else:
        lines.append("None.")
    lines += ["", "## Figures", ""]
    for png, cap in figs:
        rel = png.relative_to(out_dir).as_posix()
        lines += [f"![{cap}]({rel})", "", f"*{cap}* ([SVG]({Path(rel).with_suffix('.svg').as_posix()}))", ""]
    if notes:
        lines += ["Figures not drawn:", "", *(f"- {n}" for n in notes), ""]
    return lines + ["## Notes", "",
                    "- Percentiles use linear interpolation; the base delay is the minimum OWD over the 2 s before "
                    "the first TCP start; loss period levels are computed over the whole stream, then filtered.",
                    "- Switch timelines show the first readable replication of each case. BMv2 telemetry timestamps "
                    "count from the switch's start; they are put on the shared clock by the earliest capture time "
                    "of the telemetry frames (tcpdump), so they may lag by up to that capture latency.", ""]


def make_report(run_dirs: Sequence[Path], out_dir: Path, jitter_buffer_ms: float = JB_MAIN_MS
                ) -> tuple[Path, int, int]:
    """write_report, also returning how many replications were read and how many failed (for the CLI)."""
    out_dir = Path(out_dir)
    jbs = sorted(set(JITTER_BUFFERS_MS) | {float(jitter_buffer_ms)})
    cases, failed = load_cases(run_dirs, jbs)
    figs, notes = draw_figures(cases, out_dir / "figures", jbs, jitter_buffer_ms)
    lines = [f"# Report: {', '.join(Path(d).name for d in run_dirs)}", "",
             "Built from the run's data files alone (`python -m experiments.report`): metrics by "
             "`experiments.metrics` (definitions in BRIEF.md, \"Metrics\"), figures by `experiments.plots`.", "",
             "## Setup", "", *setup_md(run_dirs, cases, failed), "",
             *_main_results_md(cases, jitter_buffer_ms),
             *_paired_md_section(cases, jitter_buffer_ms),
             *held_out_md(cases, jitter_buffer_ms),
             *seeds_section(cases),
             *_ipdv_and_bottleneck_md(cases),
             *_tail_md(failed, figs, notes, out_dir)]
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "report.md"
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(path)
    return path, sum(len(c.reps) for c in cases), len(failed)


def main(argv: list[str] | None = None) -> int:
    """CLI: write the report and print its path; exit 1 when nothing could be read."""
    ap = argparse.ArgumentParser(
        prog="python -m experiments.report",
        description="Write the report of one or more runs (Markdown + PNG/SVG figures) from their data files "
                    "alone: setup, main table per AQM x IW x N with 95 %% CIs, IPDV table, failed replications.")
    ap.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR",
                    help="results/<run> (holding <case>/rep<k>/), a case directory, or a replication")
    ap.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/report/ for one RUN_DIR; "
                                             "required with several)")
    ap.add_argument("--jitter-buffer", type=float, default=JB_MAIN_MS, metavar="MS",
                    help=f"jitter buffer of the main table and loss-level figure (default {JB_MAIN_MS:g})")
    a = ap.parse_args(argv)
    if a.out is None and len(a.run_dirs) > 1:
        ap.error("--out is required with more than one RUN_DIR")
    if a.jitter_buffer < 0:
        ap.error("--jitter-buffer must be >= 0")
    out = a.out if a.out is not None else a.run_dirs[0] / "report"
    try:
        path, n_ok, n_failed = make_report(a.run_dirs, out, a.jitter_buffer)
    except ReportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(path)
    if n_failed:
        print(f"warning: {n_failed} replication(s) failed; listed in the report", file=sys.stderr)
    if not n_ok:
        print("error: no replication could be read", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
