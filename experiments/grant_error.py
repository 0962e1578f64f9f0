"""How well IWA's grants foresaw the queue their data met, read from a replication's switch telemetry
(docs/iwa-results.md, "Restarts": where the keep-alive users' late audio sits).

An upstream ACK whose window IWA opened (its record: reason ``IWA_WINDOW`` or ``UPSTREAM``, ``s2``'s high 32
bits the bytes it granted, its low 32 bits the *room* the grant was sized from) predicts the queue its data
will meet one server RTT later: ``target - room`` (the grants' virtual queue, or the real queue if more, plus
the frames reserved for flows still to start). The data is the connection's first new-data segment (class TCP
start or established) to reach the switch from ``rtt - slack`` after the ACK, within ``window`` after that;
what it met is its record's ``backlog_ns`` (the drain time of what was queued ahead of it). The *error* is met
less predicted: positive, the queue was longer than the grant allowed for. Grants without room (``room`` 0) are
left out: they only say the queue will be at or above the target.

Per replication (``summarize``): grants with room and their matched data, the error's median, 90th and 99th
percentiles, the share of the matched data that met more than the audio's budget, and for the grants whose
error exceeds the target's margin below that budget (``budget - target``) against the others, the bytes of TCP
start-phase and established data that reached the link in the ``before`` ns before their data arrived: a burst
no grant foresaw shows as more of them.

    python -m experiments.grant_error RUN_CASE_OR_REP_DIR... [--target-ms MS] [--budget-ms MS]
        [--server-rtt-ms MS]

The target defaults to the replication's tuning.csv (its most common ``target_ns``), the server RTT to twice
its profile's server delay (meta.json), the budget to 40 ms (the audio's jitter buffer, BRIEF.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from refmodel.constants import Reason, TrafficClass

from .base import MetricsError
from .metrics import find_reps
from .telemetry_reader import read_telemetry

MS = 1_000_000
BUDGET_NS = 40 * MS  # the audio's jitter budget (BRIEF.md): level >= 2 is a packet later than this
SLACK_NS = 1 * MS  # a grant's data may reach the switch this much before one server RTT (timestamps in us)
BEFORE_NS = 50 * MS  # the arrivals counted before a grant's data
DATA = (int(TrafficClass.TCP_START), int(TrafficClass.TCP_EST))
UPSTREAM = (int(Reason.IWA_WINDOW), int(Reason.UPSTREAM))
TCP = 6
LOW32 = (1 << 32) - 1


def grant_errors(records: pd.DataFrame, target_ns: int, server_rtt_ns: int, *, slack_ns: int = SLACK_NS,
                 window_ns: int | None = None, before_ns: int = BEFORE_NS) -> pd.DataFrame:
    """One row per grant with room (upstream ACK records with bytes granted and room above 0): ``ts_ns``,
    ``granted`` (bytes), ``predicted_ns`` (target - room) and, when its connection's data came within the window
    (default: one server RTT after ``rtt - slack``), ``data_ts_ns``, ``met_ns`` (that segment's backlog),
    ``error_ns`` (met - predicted), and the TCP ``start_bytes`` and ``est_bytes`` that reached the switch in the
    ``before_ns`` before it (NaN where no data matched)."""
    window_ns = server_rtt_ns if window_ns is None else window_ns
    r = records[records["proto"] == TCP]
    s2 = r["s2"].to_numpy(dtype=np.uint64)
    up = r[r["reason"].isin(UPSTREAM).to_numpy() & ((s2 >> np.uint64(32)) > 0) & ((s2 & np.uint64(LOW32)) > 0)]
    down = r[r["cls"].isin(DATA) & (r["reason"] != int(Reason.UPSTREAM))].sort_values("ts_ns", kind="stable")
    t_down = down["ts_ns"].to_numpy(dtype=np.int64)
    # bytes of each class that reached the switch up to each instant (prefix sums), for the arrivals before
    start_cum = np.cumsum(np.where(down["cls"].to_numpy() == int(TrafficClass.TCP_START), down["length"], 0))
    est_cum = np.cumsum(np.where(down["cls"].to_numpy() == int(TrafficClass.TCP_EST), down["length"], 0))
    by_conn = {k: g for k, g in down.groupby(["src", "dst", "sport", "dport"], sort=False)}
    rows = []
    for g in up.itertuples(index=False):
        room = int(np.uint64(g.s2) & np.uint64(LOW32))
        row = dict(ts_ns=int(g.ts_ns), sport=int(g.sport), granted=int(np.uint64(g.s2) >> np.uint64(32)),
                   predicted_ns=target_ns - room, data_ts_ns=np.nan, met_ns=np.nan, error_ns=np.nan,
                   start_bytes=np.nan, est_bytes=np.nan)
        data = by_conn.get((g.dst, g.src, g.dport, g.sport))  # the same connection, the other way
        if data is not None:
            lo, hi = g.ts_ns + server_rtt_ns - slack_ns, g.ts_ns + server_rtt_ns - slack_ns + window_ns
            ts = data["ts_ns"].to_numpy(dtype=np.int64)
            k = int(np.searchsorted(ts, lo))
            if k < len(ts) and ts[k] <= hi:
                met = int(data["backlog_ns"].iloc[k])
                t = int(ts[k])
                a, b = int(np.searchsorted(t_down, t - before_ns)), int(np.searchsorted(t_down, t))
                row.update(data_ts_ns=t, met_ns=met, error_ns=met - row["predicted_ns"],
                           start_bytes=_window_sum(start_cum, a, b), est_bytes=_window_sum(est_cum, a, b))
        rows.append(row)
    return pd.DataFrame(rows, columns=["ts_ns", "sport", "granted", "predicted_ns", "data_ts_ns", "met_ns",
                                       "error_ns", "start_bytes", "est_bytes"])


def _window_sum(cum: np.ndarray, a: int, b: int) -> int:
    """The sum of the entries a..b-1 of the array whose prefix sums are ``cum``."""
    return int((cum[b - 1] if b else 0) - (cum[a - 1] if a else 0))


def summarize(errors: pd.DataFrame, margin_ns: int, budget_ns: int = BUDGET_NS) -> dict:
    """Counts and quantiles of one replication's ``grant_errors`` (module docstring); times in ms."""
    m = errors.dropna(subset=["error_ns"])
    err = m["error_ns"].to_numpy(dtype=float) / MS
    high = m["error_ns"] > margin_ns

    def mean_kb(col: str, mask: pd.Series) -> float:
        return float(m.loc[mask, col].mean() / 1000) if mask.any() else float("nan")

    return {
        "grants": len(errors),
        "matched": len(m),
        "median_ms": float(np.median(err)) if len(m) else float("nan"),
        "p90_ms": float(np.percentile(err, 90)) if len(m) else float("nan"),
        "p99_ms": float(np.percentile(err, 99)) if len(m) else float("nan"),
        "over_budget_pct": float(100 * (m["met_ns"] > budget_ns).mean()) if len(m) else float("nan"),
        "high": int(high.sum()),
        "start_kb_high": mean_kb("start_bytes", high), "start_kb_rest": mean_kb("start_bytes", ~high),
        "est_kb_high": mean_kb("est_bytes", high), "est_kb_rest": mean_kb("est_bytes", ~high),
    }


def target_of(rep: Path, given: float | None) -> int:
    """IWA's target in ns: ``given`` (ms), else the most common ``target_ns`` of the replication's tuning.csv."""
    if given is not None:
        return round(given * MS)
    path = rep / "tuning.csv"
    try:
        t = pd.read_csv(path, usecols=["target_ns"])["target_ns"].dropna()
    except (OSError, ValueError, KeyError) as e:
        raise MetricsError(f"{path}: no target_ns ({e}); give --target-ms") from None
    if t.empty:
        raise MetricsError(f"{path}: no target_ns rows; give --target-ms")
    return int(t.mode().iloc[0])


def server_rtt_of(rep: Path, given: float | None) -> int:
    """The server RTT at the switch in ns: ``given`` (ms), else twice meta.json's profile.server_delay_ms."""
    if given is not None:
        return round(given * MS)
    try:
        return round(2 * float(json.loads((rep / "meta.json").read_text())["profile"]["server_delay_ms"]) * MS)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MetricsError(f"{rep / 'meta.json'}: no profile.server_delay_ms ({e}); give --server-rtt-ms") from None


COLUMNS = ["grants", "matched", "median_ms", "p90_ms", "p99_ms", "over_budget_pct", "high", "start_kb_high",
           "start_kb_rest", "est_kb_high", "est_kb_rest"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="replication, case or run directories")
    ap.add_argument("--target-ms", type=float, default=None, help="IWA's target (default: from tuning.csv)")
    ap.add_argument("--budget-ms", type=float, default=BUDGET_NS / MS, help="the audio's budget (default 40)")
    ap.add_argument("--server-rtt-ms", type=float, default=None,
                    help="the server RTT at the switch (default: twice meta.json's profile.server_delay_ms)")
    a = ap.parse_args(argv)
    reps = [r for p in a.paths for r in find_reps(p)]
    if not reps:
        print("no replication under " + ", ".join(map(str, a.paths)), file=sys.stderr)
        return 2
    print("| replication | " + " | ".join(COLUMNS) + " |")
    print("|---|" + "---|" * len(COLUMNS))
    read = 0
    for rep in reps:
        try:
            target, rtt = target_of(rep, a.target_ms), server_rtt_of(rep, a.server_rtt_ms)
            records, _ = read_telemetry(rep / "telemetry.pcap")
        except MetricsError as e:  # a broken replication is named and skipped; the others still count
            print(f"{rep}: {e}", file=sys.stderr)
            continue
        budget = round(a.budget_ms * MS)
        s = summarize(grant_errors(records, target, rtt), budget - target, budget)
        read += 1
        cells = [f"{s[c]:.1f}" if isinstance(s[c], float) else str(s[c]) for c in COLUMNS]
        print(f"| {rep} | " + " | ".join(cells) + " |", flush=True)
    return 0 if read else 1


if __name__ == "__main__":
    sys.exit(main())
