"""Tables across a run directory (summary printed by the main job)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .metrics import MetricsError, summarize_rep


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


def summary_table(rundir: Path) -> str:
    """Per AQM x IW: audio OWD median / 99 %, share of audio packets with loss period level >= 2 at a 40 ms
    jitter buffer, web burst completion time (means over replications)."""
    reps, failed = collect(rundir)
    groups: dict[tuple, list[dict]] = {}
    for r in reps:
        groups.setdefault((r["aqm"], r["iw"]), []).append(r)
    lines = [f"{'aqm':<8}{'IW':>4}{'reps':>6}{'switch':>8}{'OWD med ms':>12}{'OWD p99 ms':>12}"
             f"{'level>=2 @40ms':>16}{'burst s':>10}{'RTOs':>6}"]
    for (aqm, iw), rs in sorted(groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        med = np.mean([r["audio"]["owd_median_s"] for r in rs]) * 1e3
        p99 = np.mean([r["audio"]["owd_p99_s"] for r in rs]) * 1e3
        lv = np.mean([sum(r["jitter_buffers_ms"]["40"]["levels"][2:]) for r in rs]) if all(
            "40" in r["jitter_buffers_ms"] for r in rs) else float("nan")
        bursts = [b["completion_s"] for r in rs if "tcp" in r for b in r["tcp"]["bursts"].values()
                  if b["completion_s"] is not None]
        rtos = sum(r["tcp"]["rtos"] for r in rs if "tcp" in r)
        bt = f"{np.mean(bursts):.2f}" if bursts else "-"
        lines.append(f"{aqm:<8}{iw:>4}{len(rs):>6}{rs[0]['switch']:>8}{med:>12.1f}{p99:>12.1f}{lv:>16.3f}"
                     f"{bt:>10}{rtos:>6}")
    if failed:
        lines.append(f"FAILED replications ({len(failed)}):")
        lines += [f"  {name}: {why}" for name, why in failed]
    return "\n".join(lines)
