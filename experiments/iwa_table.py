"""IWA's held-out evaluation table (issue 11, item 6; targets restated by issue 33; docs/iwa-results.md) from a run's
data files alone (run directories, or digest directories: experiments.digest).

One row per pairing unit (scenario, profile, buffer, IW: everything of a case but the AQM), per AQM the
means over its replications read ok of the audio's share at loss period level >= 2 (at a 40 ms jitter
buffer; on links where one full-size frame takes longer, e.g. EDGE, at the smallest studied buffer above it), the web burst completion time and the RTOs, IWA's mean bulk goodput as a share of FIFO's (units with a
bulk flow), and IWA checked against issue 33's targets, which restate issue 11's against the physical bound:

* level >= 2 within 1 point of the best of the other AQMs (fifo, red, redok, codel, pie) or better;
* burst completion within 1.10 x the larger of FIFO's and the bound at the audio's budget (``iwa_bound``: no
  window- or drop-based AQM that holds the queue at that target completes faster; units it does not describe,
  e.g. with a bulk flow or users: FIFO's), and no larger share of replications with an incomplete burst;
* no more RTOs than the best of the other AQMs (the fewest);
* bulk throughput >= 95 % of FIFO's (90 % on a link where one full-size frame takes longer than the audio's
  budget, EDGE: the unit's jitter buffer raised): IWA's mean bulk goodput (``experiments.metrics.bulk_goodput``:
  the bulk flow's in-order bytes from its start + 2 s to the audio's end - 2 s, from client.pcap) over its
  replications where it was measured, against that share of FIFO's; "not measured" (the verdict then stays
  "incomplete") when either has no measured replication, e.g. runs without client.pcap.

Partial data (a sweep still running, failed replications) give "-" where a case or its values are missing.
Replications during which the hypervisor took more than ``STEAL_MAX_MS`` of CPU time from the VM (meta.json's
``host_steal_ms``) are named under the table as disturbed: a stalled host is in their numbers, so they are to
be run again (``accessnet.sweep --only``, then ``experiments.digest --replace``). Replications whose digest holds
the single-bottleneck check (``experiments.bottleneck_check``) and in which the audio's median delay beyond the
sojourn the switch predicted exceeds ``HOST_ADDED_MAX_MS`` are named as host-bound: BMv2 or the delay lines, not
the modelled queue, delayed the audio, so their numbers measure the machine, not the AQM (issue 33 item 5).
Each check is "pass", "FAIL", "-" (data missing), "not measured" (bulk: no measured replication on IWA's or
FIFO's side) or "n/a" (the workload has no bursts / no TCP / no bulk flow); the verdict is FAIL if any check
fails, pass if every applicable one passes, else incomplete.

CLI: ``python -m experiments.iwa_table RUN_DIR [RUN_DIR ...] [--out FILE]`` prints the table, or writes it
into FILE between the lines ``<!-- iwa-table begin -->`` and ``<!-- iwa-table end -->`` (a new FILE gets
just the block; an existing one without both markers is refused, never overwritten).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from refmodel.aqms import P4_NAMES
from refmodel.params import MTU_BYTES

from .cases import JB_MAIN_MS, Case, case_pair, jitter_budget_ms, load_cases, rep_values, stats_of
from .iwa_bound import bound_at_budget_s
from .markdown import md_table, table_main
from .metrics import bulk_bursts, mean_ci95

OTHERS = tuple(a for a in P4_NAMES if a != "iwa")  # the "five other AQMs": the P4 ones
LEVEL_MARGIN = 0.01  # level >= 2 share: within 1 percentage point of the best other AQM
BURST_FACTOR = 1.10  # burst completion within 1.10 x the larger of FIFO's and the bound
KEYS = ("level2plus", "burst_s", "rtos")  # shown per AQM
STAT_KEYS = (*KEYS, "bulk_bps")
BULK_SHARE = 0.95  # bulk goodput at least 95 % of FIFO's
BULK_SHARE_SLOW = 0.90  # on a link where one frame outlasts the audio's budget (EDGE): issue 33's stated trade
CELL_FORMAT = {"level2plus": (100, 1), "burst_s": (1, 2), "rtos": (1, 1)}  # shown as %, s, RTOs per replication
CHECKS = ("level", "burst", "RTOs", "bulk")
BEGIN, END = "<!-- iwa-table begin -->", "<!-- iwa-table end -->"
STEAL_MAX_MS = 1000  # host steal in one replication above which its numbers are the host's (25 audio budgets)
HOST_ADDED_MAX_MS = 1.0  # the audio's median delay beyond the switch's predicted sojourn a measurement of the AQM allows
FRAME_BITS = MTU_BYTES * 8  # one full-size Ethernet frame: what a single FIFO holds in front of the audio at least
STUDIED_JB_MS = (40.0, 60.0, 80.0, 100.0)  # the BRIEF's jitter buffers
EPS = 1e-12  # float slack of the comparisons (a tie passes)
TARGETS_TEXT = ("level ≥ 2: the audio's share at loss period level ≥ 2 (%); burst: web burst completion (s; "
                "replications with an incomplete burst counted, bulk flows are no bursts); RTOs per replication. "
                f"IWA's targets (issue 33): level ≥ 2 within 1 point of the best of {', '.join(OTHERS)} or "
                "better; burst within 1.10 × the larger of FIFO's and the burst bound (FIFO's where the bound is "
                "n/a; and no more incomplete bursts); RTOs ≤ the best other AQM's; bulk throughput ≥ 95 % of "
                "FIFO's, 90 % where the jitter buffer is raised (EDGE) (bulk: IWA's mean goodput of the bulk flow, 2 s after its start to 2 s "
                "before the audio's end, from the client's ACKs in client.pcap, in % of FIFO's; replications where "
                "it could not be measured are left out and counted). "
                "Web users (users5): burst is the mean completion of the pages every AQM completed in the same "
                "replication (a user's k-th page has the same size under every AQM). "
                "Burst bound: the least completion an AQM that keeps the audio within its budget allows "
                "(experiments/iwa_bound.py, bound_at_budget_s: window growth limited to the budget's queue per round "
                "trip, for a single FIFO, drops or windows, ACKs forwarded at once and unpaced senders; the run's "
                "jitter budget; the mean over the unit's bursts, each alone; n/a with a bulk flow or users). "
                "A check is pass, FAIL, - (data missing), not measured (bulk: IWA or FIFO has no replication with "
                "it) or n/a (no bursts, TCP or bulk flow); the verdict is FAIL "
                "if any check fails, pass if every applicable one passes, else incomplete.")


def pairing_units(cases: Sequence[Case]) -> dict[str, dict[str, Case]]:
    """Cases by pairing unit (sorted) and AQM (report order). Two cases of one unit and AQM under other names
    (the same case from runs of different formats) are merged."""
    units: dict[str, dict[str, Case]] = {}
    for c in sorted(cases, key=Case.sort_key):
        u = units.setdefault(case_pair(c), {})
        o = u.get(str(c.aqm))
        u[str(c.aqm)] = c if o is None else Case(o.name, o.aqm, o.iw, o.n_flows, o.reps + c.reps,
                                                  o.failed + c.failed, o.label)
    return dict(sorted(units.items()))


def aqm_stats(c: Case, jb_ms: float = JB_MAIN_MS) -> dict[str, dict]:
    """mean_ci95 of level >= 2 share, burst completion, RTOs and bulk goodput over the case's replications read
    ok."""
    return stats_of([rep_values(r, jb_ms) for r in c.reps], STAT_KEYS)


def _present(st: dict | None) -> bool:
    """The AQM has replications read ok (every one has a level >= 2 share)."""
    return bool(st) and st["level2plus"]["n"] > 0


def check_level(stats: dict[str, dict]) -> str:
    iwa = stats.get("iwa")
    others = [st["level2plus"]["mean"] for a, st in stats.items() if a in OTHERS and _present(st)]
    if not _present(iwa) or not others:
        return "-"
    return "pass" if iwa["level2plus"]["mean"] <= min(others) + LEVEL_MARGIN + EPS else "FAIL"


def check_burst(stats: dict[str, dict], bound_s: float | None = None) -> str:
    """IWA's mean burst time against 1.10 x the larger of FIFO's and ``bound_s`` (the bound at the audio's
    budget; None where it does not apply); a larger share of replications with an incomplete burst fails
    whatever the means (an incomplete burst has no time and would otherwise look fast)."""
    iwa, fifo = stats.get("iwa"), stats.get("fifo")
    if not (_present(iwa) and _present(fifo)):
        return "-"
    bi, bf = iwa["burst_s"], fifo["burst_s"]
    ti, tf = bi["n"] + bi["n_missing"], bf["n"] + bf["n_missing"]
    if not ti and not tf:
        return "n/a"
    if not ti or not tf:
        return "-"
    if bi["n_missing"] / ti > bf["n_missing"] / tf + EPS:
        return "FAIL"
    if bi["mean"] is None or bf["mean"] is None:
        return "-"
    return "pass" if bi["mean"] <= BURST_FACTOR * max(bf["mean"], bound_s or 0.0) + EPS else "FAIL"


def check_rtos(stats: dict[str, dict]) -> str:
    """IWA's mean RTOs a replication against the fewest of the other AQMs read."""
    iwa = stats.get("iwa")
    peers = [st["rtos"]["mean"] for a, st in stats.items() if a in OTHERS and _present(st)]
    if not _present(iwa) or not peers:
        return "-"
    ri = iwa["rtos"]["mean"]
    if ri is None and all(r is None for r in peers):
        return "n/a"
    if ri is None or any(r is None for r in peers):
        return "-"
    return "pass" if ri <= min(peers) + EPS else "FAIL"


def _bulk_means(stats: dict[str, dict], aqm: str = "iwa") -> tuple[float, float] | None:
    """``aqm``'s and FIFO's mean bulk goodput, None unless both have a measured replication."""
    bi, bf = ((stats.get(a) or {}).get("bulk_bps") or {} for a in (aqm, "fifo"))
    if bi.get("mean") is None or bf.get("mean") is None:
        return None
    return bi["mean"], bf["mean"]


def check_bulk(stats: dict[str, dict], has_bulk: bool, share: float = BULK_SHARE) -> str:
    """IWA's mean bulk goodput against ``share`` x FIFO's: "n/a" without a bulk flow, "-" without both AQMs
    read, "not measured" when either has no replication with a measured bulk goodput."""
    if not has_bulk:
        return "n/a"
    if not (_present(stats.get("iwa")) and _present(stats.get("fifo"))):
        return "-"
    means = _bulk_means(stats)
    if means is None:
        return "not measured"
    return "pass" if means[0] >= share * means[1] - EPS else "FAIL"


def iwa_checks(stats: dict[str, dict], has_bulk: bool, bound_s: float | None = None,
               bulk_share: float = BULK_SHARE) -> dict[str, str]:
    """The targets of issue 33 for IWA in one pairing unit, from each AQM's aqm_stats (absent AQMs: missing
    keys or no replication read), the unit's burst bound (None: not applicable) and bulk share, and the
    verdict."""
    out = {"level": check_level(stats), "burst": check_burst(stats, bound_s), "RTOs": check_rtos(stats),
           "bulk": check_bulk(stats, has_bulk, bulk_share)}
    if not _present(stats.get("iwa")):
        return {**out, "verdict": "-"}
    vals = list(out.values())
    out["verdict"] = ("FAIL" if "FAIL" in vals else "pass" if all(v in ("pass", "n/a") for v in vals)
                      else "incomplete")
    return out


def _cell(st: dict | None, key: str) -> str:
    """The mean of one aqm_stats value: '-' for a missing case or value, 'n/a' for a value the workload does
    not have (no bursts, no TCP); replications with an incomplete burst are counted."""
    if not _present(st):
        return "-"
    ci = st[key]
    scale, digits = CELL_FORMAT[key]
    note = f" ({ci['n_missing']} incomplete)" if key == "burst_s" and ci["n_missing"] else ""
    if ci["mean"] is None:
        return "-" + note if note else "n/a"
    return f"{ci['mean'] * scale:.{digits}f}" + note


def _bulk_cell(stats: dict[str, dict], has_bulk: bool, aqm: str = "iwa") -> str:
    """``aqm``'s mean bulk goodput in % of FIFO's, with the replications not measured on either side counted."""
    if not has_bulk:
        return "n/a"
    if not _present(stats.get(aqm)):
        return "-"
    sides = dict.fromkeys((aqm, "fifo"))  # FIFO's own cell counts its replications once
    missing = sum(((stats.get(a) or {}).get("bulk_bps") or {}).get("n_missing", 0) for a in sides)
    note = f" ({missing} not measured)" if missing else ""
    means = _bulk_means(stats, aqm)
    if means is None or not means[1]:
        return "-" + note
    return f"{100 * means[0] / means[1]:.1f}" + note


def _reps_cell(by_aqm: dict[str, Case]) -> str:
    return ", ".join(f"{a} {len(c.reps)}" + (f" (+{len(c.failed)} failed)" if c.failed else "")
                     for a, c in by_aqm.items())


def unit_jitter_buffer(by_aqm: dict[str, Case], jb_ms: float = JB_MAIN_MS) -> float:
    """The jitter buffer a pairing unit is judged at: ``jb_ms``, unless one full-size frame at the unit's link
    rate (meta.json's profile) takes at least that long; then the smallest studied buffer (40, 60, 80, 100 ms)
    above that frame time. At EDGE (160 kbit/s) one frame takes 75.7 ms: no single-queue AQM can keep a
    40 ms buffer there (issue 11: "the physical floor"), so EDGE units are judged at 80 ms."""
    rates = {float(r.meta["profile"]["rate_bps"]) for c in by_aqm.values() for r in c.reps
             if isinstance(r.meta.get("profile"), dict) and r.meta["profile"].get("rate_bps")}
    if not rates:
        return jb_ms
    frame_ms = FRAME_BITS / min(rates) * 1000
    if frame_ms < jb_ms:
        return jb_ms
    return min((b for b in STUDIED_JB_MS if b > frame_ms), default=jb_ms)


def users_completion(by_aqm: dict[str, Case]) -> dict[str, list[float]] | None:
    """For a unit of web users (meta.json's plan has ``users``): per AQM and replication number read under
    every AQM, the mean completion time (s) of the pages every AQM completed in that replication. A user's
    k-th page has the same size under every AQM (the tool draws it from the replication's seed and the
    user), so the same pages are compared; pages the run's end cut off count for none. None for other units."""
    if not any("users" in ((r.meta.get("plan") or {}).get("workloads") or {}) for c in by_aqm.values()
               for r in c.reps):
        return None
    reps = {a: {r.meta.get("rep"): r.flows for r in c.reps if r.flows is not None} for a, c in by_aqm.items()}
    common = set.intersection(*(set(v) for v in reps.values())) if reps else set()
    out: dict[str, list[float]] = {a: [] for a in reps}
    for k in sorted(common, key=str):
        done = {}
        for a, per_rep in reps.items():
            f = per_rep[k].sort_values("start_ns")
            f = f.assign(page=f.groupby("burst").cumcount())
            f = f[pd.to_numeric(f["completed"]) == 1]
            done[a] = {(int(b), int(n)): (int(e) - int(s)) / 1e9
                       for b, n, s, e in zip(f["burst"], f["page"], f["start_ns"], f["end_ns"])}
        pages = set.intersection(*(set(d) for d in done.values()))
        if pages:
            for a, d in done.items():
                out[a].append(sum(d[p] for p in pages) / len(pages))
    return out


class NoBound(ValueError):
    """A unit's meta.json does not give what its bound needs (``unit_bound_s``)."""


def unit_bound_s(by_aqm: dict[str, Case], budget_ms: float | None = None) -> float | None:
    """The budget's bound on the unit's burst completion (s; ``iwa_bound.bound_at_budget_s``: what no AQM of its
    class that keeps the audio within ``budget_ms`` can beat, issue 33's reference), from its first
    replication's meta.json: link rate and RTT (profile), the bursts (plan), ``budget_ms`` by default the jitter
    budget the run's switch had (meta.json's, ``cases.jitter_budget_ms``); None for workloads the bound does
    not describe (a bulk flow, users, a QUIC page, no bursts). NoBound without a readable meta."""
    meta = next((r.meta for c in by_aqm.values() for r in c.reps if isinstance(r.meta.get("profile"), dict)), None)
    if meta is None:
        raise NoBound("no replication with a profile in its meta.json")
    plan = meta.get("plan") or {}
    bursts = plan.get("bursts") or []
    if not bursts or any(b.get("bulk") or b.get("quic") for b in bursts) or "users" in (plan.get("workloads") or {}):
        return None
    try:
        prof = meta["profile"]
        rate = float(prof["rate_bps"])
        rtt = 2 * (float(prof["delay_ms"]) + float(prof.get("server_delay_ms") or 0)) / 1000
        budget = jitter_budget_ms(meta) if budget_ms is None else budget_ms
        bounds = [bound_at_budget_s(rate, rtt, int(b["flows"]), int(b["bytes"]), budget) for b in bursts]
    except (KeyError, TypeError, ValueError) as e:
        raise NoBound(f"meta.json: {e!r}") from None
    return sum(bounds) / len(bounds)


def unit_bound(by_aqm: dict[str, Case], budget_ms: float | None = None) -> tuple[float | None, str]:
    """``unit_bound_s`` for the checks (None where it does not apply or is unreadable) and as the table shows
    it: seconds, "n/a" where the bound does not apply, "-" unreadable."""
    try:
        b = unit_bound_s(by_aqm, budget_ms)
    except NoBound:
        return None, "-"
    return b, "n/a" if b is None else f"{b:.2f}"


def aqm_order(cases: Sequence[Case]) -> list[str]:
    """The AQMs of ``cases`` in the tables' column order."""
    return list(dict.fromkeys(str(c.aqm) for c in sorted(cases, key=Case.sort_key)))


def has_bulk(by_aqm: dict[str, Case]) -> bool:
    """The pairing unit has a bulk flow (a replication's plan marks one)."""
    return any(bulk_bursts(r.meta) for c in by_aqm.values() for r in c.reps)


def unit_stats(by_aqm: dict[str, Case], jb_ms: float = JB_MAIN_MS) -> tuple[float, dict[str, dict]]:
    """The jitter buffer the unit is judged at (``unit_jitter_buffer``) and each AQM's ``aqm_stats`` there."""
    jb = unit_jitter_buffer(by_aqm, jb_ms)
    return jb, {a: aqm_stats(c, jb) for a, c in by_aqm.items()}


def iwa_table_md(cases: list[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """The held-out table (Markdown lines): one row per pairing unit, per AQM level >= 2 (%), burst
    completion (s) and RTOs per replication, IWA's bulk goodput in % of FIFO's, then IWA's checks and verdict."""
    units = pairing_units(cases)
    aqms = aqm_order(cases)
    header = ["pairing unit", "reps", "jitter buffer (ms)"]
    for a in aqms:
        header += [f"{a} level ≥ 2 (%)", f"{a} burst (s)", f"{a} RTOs"]
    header += ["burst bound (s)", "IWA bulk (% of FIFO)"] + [f"IWA {k}" for k in CHECKS] + ["verdict"]
    rows = []
    for unit, by_aqm in units.items():
        jb, stats = unit_stats(by_aqm, jb_ms)
        users = users_completion(by_aqm)
        for a, times in (users or {}).items():  # web users: their pages, not bursts the run's end cut off
            stats[a]["burst_s"] = mean_ci95(times)
        row = [unit, _reps_cell(by_aqm), f"{jb:g}"]
        for a in aqms:
            row += [_cell(stats.get(a), k) for k in KEYS]
        bulk = has_bulk(by_aqm)
        bound, bound_cell = unit_bound(by_aqm)  # None: the burst is judged against FIFO's alone
        checks = iwa_checks(stats, bulk, bound, BULK_SHARE_SLOW if jb > jb_ms else BULK_SHARE)
        rows.append(row + [bound_cell, _bulk_cell(stats, bulk)]
                    + [checks[k] for k in (*CHECKS, "verdict")])
    if not rows:
        return ["No case in these runs."]
    return md_table(header, rows)


def bulk_table_md(cases: list[Case], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """Every AQM's mean bulk goodput in % of FIFO's beside its level >= 2 share (Markdown lines), for the pairing
    units with a bulk flow: what the bulk check's share costs the audio under each AQM (on EDGE no AQM keeps
    both; docs/iwa-results.md). Empty without such a unit."""
    aqms = aqm_order(cases)
    rows = []
    for unit, by_aqm in pairing_units(cases).items():
        if not has_bulk(by_aqm):
            continue
        jb, stats = unit_stats(by_aqm, jb_ms)
        rows.append([unit, f"{jb:g}"] + [f"{_cell(stats.get(a), 'level2plus')} / {_bulk_cell(stats, True, a)}"
                                         for a in aqms])
    return md_table(["pairing unit", "jitter buffer (ms)", *(f"{a}: level ≥ 2 (%) / bulk (% of FIFO)" for a in aqms)],
                    rows) if rows else []


def table_block(run_dirs: Sequence[Path], jb_ms: float = JB_MAIN_MS) -> list[str]:
    """The table between its markers, with how it was made and what its cells mean."""
    cases, failed = load_cases(run_dirs, sorted({jb_ms, *STUDIED_JB_MS}))
    runs = " ".join(Path(d).name for d in run_dirs)
    return [BEGIN, "",
            f"Regenerated by `python -m experiments.iwa_table` from {runs} ({sum(len(c.reps) for c in cases)} "
            f"replications read, {len(failed)} failed), {jb_ms:g} ms jitter buffer (where one frame at the unit's "
            "link rate takes longer, the smallest of 60, 80, 100 ms above it: the unit's column). Means over the replications "
            f"read ok per pairing unit (\"-\": missing); {TARGETS_TEXT} Confidence intervals of the paired "
            "differences: the report's \"Paired differences against FIFO\".", "",
            *iwa_table_md(cases, jb_ms), "",
            *((["Bulk goodput under every AQM (the units with a bulk flow; mean goodput of the bulk flow, as the "
                "bulk check reads it, in % of FIFO's, beside the AQM's level ≥ 2 share):", "", *bulk, ""])
              if (bulk := bulk_table_md(cases, jb_ms)) else []),
            f"Disturbed (the hypervisor took more than {STEAL_MAX_MS / 1000:g} s of CPU time from the VM during the "
            "replication, meta.json's `host_steal_ms`; to be run again): "
            + (", ".join(disturbed(cases)) or "none") + ".", "",
            f"Host-bound (the audio's median delay beyond the sojourn the switch predicted for it above "
            f"{HOST_ADDED_MAX_MS:g} ms: `experiments.bottleneck_check`, in the digests that hold it; BMv2 or the delay "
            "lines delayed the audio, not the modelled queue, so these measure the machine): "
            + (", ".join(host_bound(cases)) or "none") + ".",
            "", END]


def disturbed(cases: Sequence[Case]) -> list[str]:
    """``<case>/rep<k> (<s> s)`` for every replication read whose host steal exceeds ``STEAL_MAX_MS``."""
    return [f"{c.name}/rep{r.meta.get('rep')} ({r.meta['host_steal_ms'] / 1000:.1f} s)"
            for c in cases for r in c.reps if (r.meta.get("host_steal_ms") or 0) > STEAL_MAX_MS]


def host_bound(cases: Sequence[Case]) -> list[str]:
    """``<case>/rep<k> (<m> ms)`` for every replication read whose single-bottleneck check (the digest's
    ``single_bottleneck``) puts the audio's median delay beyond the switch's predicted sojourn above
    ``HOST_ADDED_MAX_MS``."""
    return [f"{c.name}/rep{r.meta.get('rep')} ({m:.1f} ms)" for c in cases for r in c.reps
            if (m := (r.summary.get("single_bottleneck") or {}).get("all", {}).get("median_ms", 0.0))
            > HOST_ADDED_MAX_MS]


def main(argv: list[str] | None = None) -> int:
    return table_main(argv, prog="python -m experiments.iwa_table",
                      description="IWA's held-out evaluation table (docs/iwa-results.md) from runs' data files: per "
                                  "pairing unit and AQM level >= 2, burst completion and RTOs, IWA's targets checked.",
                      table_block=table_block, jitter_buffer_ms=JB_MAIN_MS, run_dir_help="results/<run> (holding <case>/rep<k>/)")


if __name__ == "__main__":
    sys.exit(main())
