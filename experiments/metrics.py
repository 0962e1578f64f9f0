"""The seeds' metrics from one replication's raw data (definitions: ../shared/BRIEF.md).

Input files are those of docs/data-formats.md. Every function names the BRIEF
definition it implements. Bad input raises ``MetricsError`` naming the file;
nothing here returns numbers for a run it could not read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

NS = 1_000_000_000
MS = 1_000_000
JITTER_BUFFERS_MS = tuple(range(20, 201, 20))
IPDV_PERCENTILES = (25, 50, 75, 90, 95, 96, 97, 98, 99)


class MetricsError(ValueError):
    pass


# ----------------------------------------------------------------------------- reading


def read_csv(path: Path, columns: list[str]) -> pd.DataFrame:
    if not path.exists():
        raise MetricsError(f"{path}: missing")
    try:
        df = pd.read_csv(path)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise MetricsError(f"{path}: unreadable: {e}") from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise MetricsError(f"{path}: missing column(s) {missing}")
    return df


def read_meta(rep: Path) -> dict:
    path = rep / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise MetricsError(f"{path}: missing") from None
    except json.JSONDecodeError as e:
        raise MetricsError(f"{path}: not JSON: {e}") from None
    if meta.get("status") != "ok":
        raise MetricsError(f"{path}: the run failed: {meta.get('error', 'unknown error')}")
    return meta


@dataclass
class Audio:
    """Per sent audio packet: seq, send_ns, recv_ns (NaN if never received)."""

    df: pd.DataFrame


def read_audio(rep: Path) -> Audio:
    tx = read_csv(rep / "audio_tx.csv", ["seq", "send_ns"])
    rx = read_csv(rep / "audio_rx.csv", ["seq", "send_ns", "recv_ns"])
    if tx.empty:
        raise MetricsError(f"{rep / 'audio_tx.csv'}: no packets")
    for name, df in (("audio_tx.csv", tx), ("audio_rx.csv", rx)):
        if df.isna().any().any():
            raise MetricsError(f"{rep / name}: incomplete rows")
    rx = rx.drop_duplicates("seq", keep="first")
    df = tx.merge(rx[["seq", "recv_ns"]], on="seq", how="left").sort_values("seq", ignore_index=True)
    return Audio(df)


def read_flows(rep: Path) -> pd.DataFrame:
    df = read_csv(rep / "flows.csv", ["flow", "burst", "start_ns", "end_ns", "bytes", "retrans", "rtos", "completed"])
    if df.empty:
        raise MetricsError(f"{rep / 'flows.csv'}: no flows")
    return df


# ----------------------------------------------------------------------------- audio


def owd_ns(a: Audio) -> np.ndarray:
    """One-way delay (BRIEF: receive time - send time), NaN for packets that never arrived."""
    return (a.df["recv_ns"] - a.df["send_ns"]).to_numpy(dtype=float)


def ipdv_ns(a: Audio) -> np.ndarray:
    """IPDV (RFC 3393): OWD(i) - OWD(i-1) for consecutive packets i-1, i that both arrived."""
    d = owd_ns(a)
    seq = a.df["seq"].to_numpy()
    ok = ~np.isnan(d[1:]) & ~np.isnan(d[:-1]) & (np.diff(seq) == 1)
    return (d[1:] - d[:-1])[ok]


def ipdv_table(values_ns: np.ndarray) -> dict:
    """The seeds' Table 1 columns, in seconds: min, 25 ... 99 %, max."""
    if values_ns.size == 0:
        return {}
    out = {"min": float(values_ns.min()) / NS}
    for p in IPDV_PERCENTILES:
        out[f"p{p}"] = float(np.percentile(values_ns, p)) / NS
    out["max"] = float(values_ns.max()) / NS
    return out


def base_delay_ns(a: Audio, tcp_start_ns: int | None, window_s: float = 2.0) -> float:
    """Base delay: the minimum OWD over the ``window_s`` seconds (by send time) before the first TCP
    start; without TCP, over the whole run."""
    d = owd_ns(a)
    send = a.df["send_ns"].to_numpy()
    if tcp_start_ns is not None:
        sel = (send >= tcp_start_ns - window_s * NS) & (send < tcp_start_ns)
        d = d[sel]
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise MetricsError("no audio packet arrived in the base-delay window")
    return float(d.min())


def lost_mask(a: Audio, base_ns: float, jitter_buffer_ms: float) -> np.ndarray:
    """Pure loss (never arrived) or delay-based loss (OWD > base delay + jitter buffer, strictly)."""
    d = owd_ns(a)
    return np.isnan(d) | (d > base_ns + jitter_buffer_ms * MS)


def loss_levels(lost: np.ndarray) -> np.ndarray:
    """Loss period level of every packet (seeds' 003 Table 2) from runs of consecutive losses:
    0 not lost; run length 1 -> 1; 2-3 -> 2; 4-5 -> 3; 6-9 -> 4; >= 10 -> 5."""
    levels = np.zeros(lost.size, dtype=int)
    i = 0
    n = lost.size
    while i < n:
        if not lost[i]:
            i += 1
            continue
        j = i
        while j < n and lost[j]:
            j += 1
        run = j - i
        levels[i:j] = 1 if run == 1 else 2 if run <= 3 else 3 if run <= 5 else 4 if run <= 9 else 5
        i = j
    return levels


def active_mask(send_ns: np.ndarray, flows: pd.DataFrame, run_end_ns: int) -> np.ndarray:
    """Overlap filter: packets sent while at least one TCP flow is active ([start, end];
    a flow that did not complete is active until the end of the run)."""
    keep = np.zeros(send_ns.size, dtype=bool)
    for s, e in zip(flows["start_ns"], flows["end_ns"]):
        end = run_end_ns if pd.isna(e) or e == "" else int(e)
        keep |= (send_ns >= int(s)) & (send_ns <= end)
    return keep


# ----------------------------------------------------------------------------- TCP


def jain(x: np.ndarray) -> float:
    """Jain's fairness index: (sum x)^2 / (n sum x^2)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not np.any(x):
        return float("nan")
    return float(x.sum() ** 2 / (x.size * (x ** 2).sum()))


def tfs(tcp_throughput: float, total_throughput: float, n_flows: int) -> float:
    """TFS (seeds' 002): TCP throughput / (total throughput / number of flows)."""
    return tcp_throughput / (total_throughput / n_flows)


def tcp_metrics(flows: pd.DataFrame) -> dict:
    """Per-flow and per-burst completion time, goodput, Jain's index within/between bursts, RTOs."""
    f = flows.copy()
    f["done"] = f["completed"].astype(int) == 1
    f["ct_s"] = (pd.to_numeric(f["end_ns"], errors="coerce") - f["start_ns"]) / NS
    f["goodput_bps"] = f["bytes"] * 8 / f["ct_s"]
    bursts = {}
    for b, g in f.groupby("burst"):
        end = pd.to_numeric(g["end_ns"], errors="coerce")
        bursts[int(b)] = {
            "completion_s": float((end.max() - g["start_ns"].min()) / NS) if g["done"].all() else None,
            "completed": int(g["done"].sum()), "flows": int(len(g)),
            "jain": jain(g.loc[g["done"], "goodput_bps"].to_numpy()),
        }
    per_burst_goodput = [g.loc[g["done"], "goodput_bps"].mean() for _, g in f.groupby("burst")]
    return {
        "flows": int(len(f)), "completed": int(f["done"].sum()),
        "flow_completion_s": [None if np.isnan(v) else float(v) for v in f["ct_s"]],
        "bursts": bursts,
        "jain_between_bursts": jain(np.array(per_burst_goodput)) if len(per_burst_goodput) > 1 else None,
        "retrans": int(pd.to_numeric(f["retrans"], errors="coerce").fillna(0).sum()),
        "rtos": int(pd.to_numeric(f["rtos"], errors="coerce").fillna(0).sum()),
    }


# ----------------------------------------------------------------------------- one replication


def summarize_rep(rep: Path, jitter_buffers_ms=JITTER_BUFFERS_MS, base_window_s: float = 2.0) -> dict:
    rep = Path(rep)
    meta = read_meta(rep)
    audio = read_audio(rep)
    tcp_start = meta.get("tcp_start_ns")
    base = base_delay_ns(audio, tcp_start, base_window_s)
    d = owd_ns(audio)
    send = audio.df["send_ns"].to_numpy()
    out: dict = {"case": meta.get("case"), "rep": meta.get("rep"), "aqm": meta.get("aqm"), "iw": meta.get("iw"),
                 "switch": meta.get("switch"), "base_delay_s": base / NS}
    flows = None
    if tcp_start is not None:
        flows = read_flows(rep)
        run_end = int(np.nanmax(np.r_[send, d + send]))
        keep = active_mask(send, flows, run_end)
        out["tcp"] = tcp_metrics(flows)
    else:
        keep = np.ones(send.size, dtype=bool)
    arrived = d[keep & ~np.isnan(d)]
    out["audio"] = {
        "sent": int(keep.sum()), "pure_losses": int((keep & np.isnan(d)).sum()),
        "owd_median_s": float(np.median(arrived)) / NS if arrived.size else None,
        "owd_p99_s": float(np.percentile(arrived, 99)) / NS if arrived.size else None,
        "owd_max_s": float(arrived.max()) / NS if arrived.size else None,
    }
    sub = Audio(audio.df[keep].reset_index(drop=True))
    out["ipdv"] = ipdv_table(ipdv_ns(sub))
    per_jb = {}
    for jb in jitter_buffers_ms:
        lost = lost_mask(sub, base, jb)
        lv = loss_levels(lost)
        n = max(1, lost.size)
        per_jb[str(jb)] = {
            "loss_rate": float(lost.sum() / n),
            "levels": [float((lv == k).sum() / n) for k in range(6)],
            "good_quality": float((lv <= 1).sum() / n),
        }
    out["jitter_buffers_ms"] = per_jb
    return out
