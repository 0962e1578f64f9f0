"""Seed 002's tables (issue 35) from a run's data files alone: run directories, or digest directories
(experiments.digest), so that ``seed002-stacks`` (180 replications, about 8 hours on one machine) can be measured
in parts on different days and machines and its tables regenerated from every part measured so far, as
``experiments.iwa_table`` does for ``iwa-eval``.

The block holds the report's seed-002 tables (``experiments.seeds``: one and two real-time flows beside the
seed's rows, and Pion − aiortc paired by replication) and issue 35's checks of IWA. For every pairing unit with
one real-time flow and a FIFO case (``webrtc5-rtc50-50p-iw10`` and its ``-pion`` twin: one unit per stack), per
AQM over its replications read ok:

* the audio probe's share at loss period level >= 2 (40 ms jitter buffer, as ``iwa_table``), the real-time
  flow's goodput and loss, the web flows' throughput while on, its over-use seconds (``seeds.overuse_cell``);
* paired against FIFO (replication k against FIFO's replication k of the same unit: the same seed, so the same
  pages at the same times; ``report.paired_reps``): the differences of the level >= 2 share and the goodput,
  mean ± 95 % CI.

IWA's checks (issue 35's targets), per unit: *goodput*, IWA's mean goodput of the real-time flow no lower than
FIFO's; *level*, the audio's level >= 2 share within 1 point of the best of the other P4 AQMs or better
(``iwa_table.check_level``, the held-out table's own rule). "-" where a side has no replication read.

CLI: ``python -m experiments.seed002_table RUN_DIR [RUN_DIR ...] [--out FILE]`` prints the block, or writes it
into FILE between ``<!-- seed002-table begin -->`` and ``<!-- seed002-table end -->`` (``markdown.write_block``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from .cases import JB_MAIN_MS, Case, load_cases, rep_values
from .iwa_table import OTHERS, check_level, pairing_units
from .markdown import fmt_ci, md_table, table_main
from .metrics import mean_ci95
from .report import fmt_diff, paired_reps
from .seeds import OVERUSE_LABEL, overuse_cell, rtc_stack, seed002_md, seed002_stacks_md, seed002_two_md

BEGIN, END = "<!-- seed002-table begin -->", "<!-- seed002-table end -->"
BASE = "fifo"
# The real-time flow's values (summarize_rep's "rtc"): key, column, scale, digits
RTC_COLUMNS = (("goodput_bps", "RTC goodput (kbit/s)", 1e-3, 0), ("loss_rate", "RTC loss (%)", 100, 1),
               ("tcp_throughput_bps", "TCP, ON time (kbit/s)", 1e-3, 0))
LEVEL_LABEL = "audio level ≥ 2 (%)"


def one_rtc(r) -> dict | None:
    """The replication's real-time flow when it has exactly one (summarize_rep's ``rtc`` without
    ``rtc_flows``), else None."""
    return None if r.summary.get("rtc_flows") else r.summary.get("rtc")


def rtc_units(cases: Sequence[Case]) -> dict[str, dict[str, Case]]:
    """``iwa_table.pairing_units`` reduced to the units with one real-time flow in every replication read and
    a FIFO case."""
    return {u: by for u, by in pairing_units(cases).items()
            if BASE in by and all(one_rtc(r) for c in by.values() for r in c.reps)
            and any(c.reps for c in by.values())}


def level(r, jb_ms: float) -> float:
    return rep_values(r, jb_ms)["level2plus"]


def rtc_value(r, key: str) -> float | None:
    v = (one_rtc(r) or {}).get(key)
    return None if v is None else float(v)


def paired(c: Case, base: Case, jb_ms: float) -> dict[str, dict]:
    """mean_ci95 of ``c`` − ``base`` by replication: the level >= 2 share and the real-time flow's goodput."""
    pairs, _ = paired_reps(c, [base])
    return {"level": mean_ci95(level(r, jb_ms) - level(b, jb_ms) for r, b in pairs),
            "goodput": mean_ci95(None if (x := rtc_value(r, "goodput_bps")) is None
                                 or (y := rtc_value(b, "goodput_bps")) is None else x - y for r, b in pairs)}


def check_goodput(by_aqm: dict[str, Case]) -> str:
    """IWA's mean goodput of the real-time flow against FIFO's: "pass" when no lower."""
    iwa, fifo = (mean_ci95(rtc_value(r, "goodput_bps") for r in by_aqm[a].reps) if a in by_aqm else None
                 for a in ("iwa", BASE))
    if not iwa or not fifo or iwa["mean"] is None or fifo["mean"] is None:
        return "-"
    return "pass" if iwa["mean"] >= fifo["mean"] else "FAIL"


def unit_checks(by_aqm: dict[str, Case], jb_ms: float) -> dict[str, str]:
    """IWA's two checks of the unit and the best other AQM by level >= 2 (the one the level check reads)."""
    stats = {a: {"level2plus": mean_ci95(level(r, jb_ms) for r in c.reps)} for a, c in by_aqm.items()}
    others = {a: st["level2plus"]["mean"] for a, st in stats.items() if a in OTHERS and st["level2plus"]["n"]}
    best = min(others, key=others.get) if others else "-"
    return {"goodput": check_goodput(by_aqm), "level": check_level(stats), "best": best}


def aqm_table_md(cases: Sequence[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """Per unit with one real-time flow and per AQM: the audio, the real-time flow and the web flows, and the
    paired differences against FIFO."""
    header = ["pairing unit", "stack", "AQM", "reps", LEVEL_LABEL, *(h for _, h, *_ in RTC_COLUMNS), OVERUSE_LABEL,
              f"Δ level ≥ 2 vs {BASE} (points)", f"Δ RTC goodput vs {BASE} (kbit/s)"]
    rows = []
    for unit, by_aqm in rtc_units(cases).items():
        for a, c in by_aqm.items():
            if not c.reps:
                continue
            d = paired(c, by_aqm[BASE], jb_ms) if a != BASE else None
            rows.append([unit, rtc_stack(c.reps[0], one_rtc(c.reps[0])), a, str(len(c.reps)),
                         fmt_ci(mean_ci95(level(r, jb_ms) for r in c.reps), 100, 1),
                         *(fmt_ci(mean_ci95(rtc_value(r, k) for r in c.reps), scale, digits)
                           for k, _, scale, digits in RTC_COLUMNS),
                         overuse_cell([one_rtc(r) for r in c.reps]),
                         fmt_diff(d["level"], 100, 1) if d else "",
                         fmt_diff(d["goodput"], 1e-3, 0) if d else ""])
    return md_table(header, rows) if rows else ["(no unit with one real-time flow and a FIFO case)"]


def checks_md(cases: Sequence[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """Issue 35's two checks of IWA per unit with one real-time flow (module docstring)."""
    rows = []
    for unit, by_aqm in rtc_units(cases).items():
        if "iwa" in by_aqm and by_aqm["iwa"].reps:
            ch = unit_checks(by_aqm, jb_ms)
            rows.append([unit, ch["goodput"], ch["level"], ch["best"]])
    return md_table(["pairing unit", f"IWA RTC goodput ≥ {BASE}'s", "IWA level ≥ 2 within 1 point of the best other",
                     "best other AQM (level ≥ 2)"], rows) if rows else ["(no unit with IWA and a real-time flow)"]


def table_block(run_dirs: Sequence[Path], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """The tables between their markers, with where they come from."""
    cases, failed = load_cases(run_dirs, [jb_ms])
    runs = " ".join(Path(d).name for d in run_dirs)
    return [BEGIN, "",
            f"Regenerated by `python -m experiments.seed002_table` from {runs} "
            f"({sum(len(c.reps) for c in cases)} replications read, {len(failed)} failed). Means ± 95 % CI over "
            "the replications read ok; the paired differences take replication k of an AQM against FIFO's "
            f"replication k of the same unit (the same seed). Audio level ≥ 2 at a {jb_ms:g} ms jitter buffer.", "",
            "One real-time flow against five web users (the seed's rows, then the lab's per AQM and stack):", "",
            *seed002_md(cases), "",
            "Two real-time flows against ten web users:", "",
            *seed002_two_md(cases), "",
            "Pion − aiortc, paired by replication:", "",
            *seed002_stacks_md(cases), "",
            "Per AQM, with the audio probe and paired against FIFO:", "",
            *aqm_table_md(cases, jb_ms), "",
            f"IWA's checks (issue 35): the real-time flow's goodput no lower than under {BASE}; the audio's level ≥ 2 "
            f"share within 1 point of the best of {', '.join(OTHERS)} or better:", "",
            *checks_md(cases, jb_ms), "",
            END]


def main(argv: list[str] | None = None) -> int:
    return table_main(argv, prog="python -m experiments.seed002_table",
                      description="Seed 002's tables and issue 35's checks of IWA from runs' data files "
                                  "(run or digest directories).",
                      table_block=table_block, jitter_buffer_ms=JB_MAIN_MS)


if __name__ == "__main__":
    sys.exit(main())
