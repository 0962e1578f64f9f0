"""The data layer of the report and its tables (``experiments.report``, ``experiments.iwa_table``,
``experiments.seeds``): every replication under some run directories read once (``load_cases``), grouped by
case and sorted AQM, IW, N, and the numbers per replication and per case that the tables show.

Built from the raw data files of docs/data-formats.md alone (no re-running), with the metrics of
experiments.metrics.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from refmodel.aqms import ORDER
from refmodel.params import JITTER_BUDGET_MS

from .digest import digest_meta, find_digests, read_digest
from .metrics import (JITTER_BUFFERS_MS, Audio, MetricsError, _jb_key, audio_packets, bulk_bursts, find_reps, ipdv_ns,
                      levels_over_time, mean_ci95, read_meta, summarize_packets)

# the jitter buffer of the main table and the loss-level figure (BRIEF "What better means"): the audio's budget
JB_MAIN_MS = JITTER_BUDGET_MS
# AQMs in the order the report lists them; kernel qdiscs (k*) after the P4 ones.
AQM_ORDER = ORDER  # refmodel/aqms/


class ReportError(ValueError):
    """Input that gives no report at all (no such directory, no replication in it); names the path."""


@dataclass
class Rep:
    """One replication that could be read: its summarize_rep dict, per-packet frame (None from a digest), meta
    and flows."""

    path: Path
    summary: dict
    packets: pd.DataFrame | None
    meta: dict
    flows: pd.DataFrame | None


@dataclass
class Case:
    """All replications of one case (meta.json "case", else the directory name, as summarize_sweep)."""

    name: str
    aqm: str | None = None
    iw: int | None = None
    n_flows: int | None = None
    reps: list[Rep] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    label: str = ""

    def sort_key(self) -> tuple:
        aqm = str(self.aqm)
        return (AQM_ORDER.index(aqm) if aqm in AQM_ORDER else len(AQM_ORDER), aqm, self.iw or 0,
                self.n_flows or 0, self.name)


def jitter_budget_ms(meta: dict) -> float:
    """The audio's jitter budget a replication's switch ran with (meta.json ``jitter_budget_ms``, the scenario's
    [run] jitter_budget_ms: IWA's target at install and in the loop); runs from before meta.json recorded it ran
    with the default, ``refmodel.params.JITTER_BUDGET_MS``."""
    budget = meta.get("jitter_budget_ms")
    return JITTER_BUDGET_MS if budget is None else float(budget)


def _rep_number(p: Path) -> tuple:
    m = re.fullmatch(r"rep(\d+)(\.tmp|\.json)?", p.name)
    return (p.parent.name, int(m.group(1)) if m else 0, p.name)


def _load_rep(rep: Path, jbs: list[float]) -> Rep:
    """Metrics of one replication, from its directory or its digest (experiments.digest: no per-packet data,
    ``packets`` None); MetricsError (naming the file) if it failed or its data are bad."""
    if rep.is_file():
        summary, meta, flows = read_digest(rep)
        missing = [jb for jb in jbs if _jb_key(jb) not in summary.get("jitter_buffers_ms", {})]
        if missing:
            raise MetricsError(f"{rep}: the digest has no metrics at jitter buffers {missing} ms")
        return Rep(rep, summary, None, meta, flows)
    packets, meta, flows = audio_packets(rep, jbs)
    return Rep(rep, summarize_packets(rep, packets, meta, flows, jbs), packets, meta, flows)


def _failed_entry(rep: Path, error: str) -> dict:
    """A failed replication for the report, with its case from meta.json when that is still readable."""
    try:
        meta = digest_meta(rep) if rep.is_file() else read_meta(rep, require_ok=False)
    except MetricsError:
        meta = {}
    return {"path": str(rep), "case": str(meta.get("case") or rep.parent.name), "rep": rep.name,
            "aqm": meta.get("aqm"), "iw": meta.get("iw"), "n_flows": meta.get("n_flows"), "pair": meta.get("pair"),
            "error": error}


def load_cases(run_dirs: Sequence[Path], jbs: Sequence[float] = JITTER_BUFFERS_MS
               ) -> tuple[list[Case], list[dict]]:
    """Every replication under ``run_dirs`` (metrics.find_reps), grouped by case and sorted AQM, IW, N.
    Replications that fail to read are kept as failed with the reason (never averaged); unfinished ``.tmp``
    replications are listed as failed too, so a report never silently covers fewer runs than exist."""
    jbs = list(jbs)
    reps: list[Path] = []
    for d in map(Path, run_dirs):
        if not d.is_dir():
            raise ReportError(f"{d}: no such directory")
        found = find_reps(d) + find_digests(d)
        unfinished = sorted(p for pat in ("rep[0-9]*.tmp", "*/rep[0-9]*.tmp") for p in d.glob(pat) if p.is_dir())
        if not found and not unfinished:
            raise ReportError(f"{d}: no replication directories (<case>/rep<k>/ with meta.json) or digests "
                              "(<case>/rep<k>.json) found")
        reps += found + unfinished
    cases: dict[str, Case] = {}
    failed: list[dict] = []
    for rep in sorted(set(reps), key=_rep_number):
        if rep.name.endswith(".tmp"):
            entry = _failed_entry(rep, f"{rep}: unfinished replication (never renamed from .tmp)")
        else:
            try:
                r = _load_rep(rep, jbs)
            except MetricsError as e:
                entry = _failed_entry(rep, str(e))
            else:
                s = r.summary
                name = str(s.get("case") or rep.parent.name)
                c = cases.setdefault(name, Case(name))
                c.aqm, c.iw, c.n_flows = s.get("aqm"), s.get("iw"), s.get("n_flows")
                c.reps.append(r)
                continue
        failed.append(entry)
        c = cases.setdefault(entry["case"], Case(entry["case"]))
        c.failed.append(entry)
        if c.aqm is None:
            c.aqm, c.iw, c.n_flows = entry["aqm"], entry["iw"], entry["n_flows"]
    ordered = sorted(cases.values(), key=Case.sort_key)
    labels = [f"{c.aqm} IW{c.iw} N{c.n_flows}" for c in ordered]
    unique = len(set(labels)) == len(labels)
    for c, lab in zip(ordered, labels):
        c.label = lab if unique else c.name
    return ordered, failed


# ----------------------------------------------------------------------------- per-case numbers


def web_bursts(s: dict, bulk: Iterable[int] = ()) -> list[dict]:
    skip = set(bulk)
    return [b for k, b in s.get("tcp", {}).get("bursts", {}).items() if int(k) not in skip]


def _burst_s(s: dict, bulk: Iterable[int] = ()) -> float | None:
    """A replication's web burst completion time: the mean over its bursts (one for webN) but the ``bulk``
    ones, None if any burst did not complete (it then counts as missing, shown in the table, never as a
    fast burst)."""
    bursts = web_bursts(s, bulk)
    if not bursts or any(b["completion_s"] is None for b in bursts):
        return None
    return float(np.mean([b["completion_s"] for b in bursts]))


MAIN_KEYS = ("owd_median_s", "owd_p99_s", "level2plus", "loss_rate", "good_quality", "burst_s", "rtos", "bulk_bps",
             "frozen")


def rep_scalars(s: dict, jb_ms: float = JB_MAIN_MS, bulk: Iterable[int] = ()) -> dict[str, float | None]:
    """The main table's per-replication values (from summarize_rep): OWD median / p99 (s), share of packets
    at loss period level >= 2, loss rate and good-quality share at ``jb_ms``, burst completion (s; bursts
    numbered in ``bulk`` left out, ``bursts`` says how many are left), RTOs, bulk goodput (bit/s,
    metrics.bulk_goodput; None when not measured, ``has_bulk`` says whether the replication has a bulk flow),
    frozen flows (metrics.frozen_flows; None when not measured or without TCP)."""
    j = s["jitter_buffers_ms"][_jb_key(jb_ms)]
    tcp = s.get("tcp")
    bulk = set(bulk)
    return {"owd_median_s": s["audio"]["owd_median_s"], "owd_p99_s": s["audio"]["owd_p99_s"],
            "level2plus": float(sum(j["levels"][2:])), "loss_rate": j["loss_rate"],
            "good_quality": j["good_quality"], "burst_s": _burst_s(s, bulk) if tcp else None,
            "bursts": len(web_bursts(s, bulk)), "rtos": float(tcp["rtos"]) if tcp else None,
            "bulk_bps": (s.get("bulk") or {}).get("goodput_bps"), "has_bulk": "bulk" in s,
            "frozen": _opt_float((s.get("frozen") or {}).get("frozen_flows")), "has_tcp": bool(tcp)}


def _opt_float(v) -> float | None:
    return None if v is None else float(v)


def rep_values(r: Rep, jb_ms: float = JB_MAIN_MS) -> dict[str, float | None]:
    """rep_scalars of a replication, its bulk flows (meta.json's plan) left out of the burst completion."""
    return rep_scalars(r.summary, jb_ms, bulk_bursts(r.meta))


def stats_of(per_rep: Sequence[dict], keys: Iterable[str] = MAIN_KEYS) -> dict[str, dict]:
    """mean_ci95 over replications' rep_values; burst completion only over replications that have bursts (a
    bulk-only workload has none: not "incomplete"), bulk goodput only over those with a bulk flow (one not
    measured counts as missing), frozen flows over those with TCP."""
    def applies(p: dict, k: str) -> bool:
        return (bool(p["bursts"]) if k == "burst_s" else bool(p.get("has_bulk")) if k == "bulk_bps"
                else bool(p.get("has_tcp")) if k == "frozen" else True)

    return {k: mean_ci95(p[k] for p in per_rep if applies(p, k)) for k in keys}


def case_stats(c: Case, jb_ms: float = JB_MAIN_MS) -> dict[str, dict]:
    """mean_ci95 over the case's replications of every rep_scalars value."""
    return stats_of([rep_values(r, jb_ms) for r in c.reps])


def jb_ci(c: Case, key: str, jbs: Sequence[float]) -> dict[float, dict]:
    """mean_ci95 over replications of a per-jitter-buffer metric ("loss_rate", "good_quality")."""
    return {jb: mean_ci95(r.summary["jitter_buffers_ms"][_jb_key(jb)][key] for r in c.reps) for jb in jbs}


def kept(r: Rep) -> pd.DataFrame:
    """The audio packets of a replication that pass the overlap filter (as summarize_rep uses them)."""
    if r.packets is None:
        raise ReportError(f"{r.path}: a digest keeps no per-packet data; this needs the replication's directory")
    return r.packets[r.packets["kept"]].reset_index(drop=True)


def pooled_ipdv_ns(c: Case) -> np.ndarray:
    """IPDV of every consecutive pair kept by the overlap filter, all replications pooled (the seeds' Table 1
    is one CDF over its 50 replications, not a mean of per-replication percentiles)."""
    parts = [ipdv_ns(Audio(kept(r))) for r in c.reps]
    return np.concatenate(parts) if parts else np.zeros(0)


def pooled_levels_over_time(c: Case, jb_ms: float, bin_s: float) -> pd.DataFrame:
    """metrics.levels_over_time over all replications' kept packets (time since each one's TCP start)."""
    ks = [kept(r) for r in c.reps]
    ks = [k for k in ks if len(k) and k["t_s"].notna().all()]
    if not ks:
        return levels_over_time(np.zeros(0), np.zeros(0, dtype=np.int8), bin_s)
    t = np.concatenate([k["t_s"].to_numpy(dtype=float) for k in ks])
    lv = np.concatenate([k[f"level_{_jb_key(jb_ms)}"].to_numpy() for k in ks])
    return levels_over_time(t, lv, bin_s)


def case_pair(c: Case) -> str:
    """The case's pairing unit (everything but the AQM: scenario, profile, buffer, IW, initial RTO, IP family):
    meta.json "pair" of any of its replications, failed ones too, else its name without the AQM (runs written
    before meta.json recorded it; ``<scenario>-<profile>-<buffer>-iw<IW>``)."""
    for p in [r.meta.get("pair") for r in c.reps] + [f.get("pair") for f in c.failed]:
        if p:
            return str(p)
    return c.name.replace(f"-{c.aqm}-iw", "-iw")


def rep_number_of(r: Rep) -> int:
    """The replication number k of rep<k> (meta.json "rep", else the directory's name)."""
    return int(r.meta.get("rep", _rep_number(r.path)[1]))
