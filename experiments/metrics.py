"""The seeds' metrics from one replication's raw data (definitions: BRIEF.md, "Metrics (exact definitions)").

Input files are those of docs/data-formats.md (meta.json, audio_tx.csv,
audio_rx.csv, flows.csv). Every function names the BRIEF definition it
implements. Bad input (missing, empty, truncated or unparseable file, a run whose
meta.json says "failed") raises ``MetricsError`` naming the file; nothing here
returns numbers for a run it could not read. ``summarize_sweep`` lists such runs
as failed instead.

Choices where the BRIEF leaves room (see also the function docstrings):

* percentiles (IPDV table, OWD p99) use numpy's default linear interpolation
  (Hyndman-Fan type 7);
* the base delay of a run without TCP is the minimum OWD over the whole run;
* loss period levels are computed over the whole audio stream and then filtered
  by the overlap filter, so a run of losses keeps its full length at the edges
  of the overlap window;
* the 95 % confidence interval uses a Student t quantile from a table (scipy is
  not a pinned dependency), see ``t_quantile_975``;
* bulk throughput (issue 11's "bulk throughput >= 95 % of FIFO's"; not in the
  BRIEF) is the bulk flow's goodput from its start + 2 s to the audio's end - 2 s,
  from the client's cumulative ACKs in client.pcap, see ``bulk_goodput``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from accessnet.web import WEB_PORT

from .base import MS, NS, MetricsError
from .tcpcap import CONNECTION_KEY, TCP_ACK, TCP_SYN, connection_segments, read_tcp_headers, server_synacks
from .tcpcap import tcp_tsval  # noqa: F401  (a name of metrics before tcpcap: tests/test_iplayer.py)
from .timeouts import FIELDS as TIMEOUT_FIELDS
from .timeouts import timeouts

JITTER_BUFFERS_MS: tuple[float, ...] = tuple(range(20, 201, 20))
IPDV_PERCENTILES = (25, 50, 75, 90, 95, 96, 97, 98, 99)
AUDIO_TX_COLUMNS = ["seq", "send_ns"]
AUDIO_RX_COLUMNS = ["seq", "send_ns", "recv_ns"]
FLOW_COLUMNS = ["flow", "burst", "start_ns", "end_ns", "bytes", "retrans", "rtos", "completed"]


# ----------------------------------------------------------------------------- reading


def read_csv(path: Path, columns: Sequence[str], required: Sequence[str] | None = None) -> pd.DataFrame:
    """Read one CSV of docs/data-formats.md; ``required`` columns (default: all) must hold integers on every
    row, the others integers or nothing. Anything else raises MetricsError naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise MetricsError(f"{path}: missing")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as e:
        raise MetricsError(f"{path}: empty or unreadable: {e}".rstrip()) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise MetricsError(f"{path}: missing column(s) {missing}")
    required = list(columns) if required is None else list(required)
    out = pd.DataFrame(index=df.index)
    for c in columns:
        raw = df[c].str.strip()
        valid = raw.str.fullmatch(r"[+-]?\d{1,19}")
        bad = ~valid & ((raw != "") | (c in required))
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise MetricsError(f"{path}: line {i + 2}: column {c!r} is {df[c].iloc[i]!r}, not an integer"
                               " (truncated or corrupt file?)")
        ok = valid.to_numpy(dtype=bool)
        vals = np.zeros(len(df), dtype=np.int64)
        if ok.any():
            vals[ok] = pd.to_numeric(raw[ok]).to_numpy(dtype=np.int64)
        out[c] = vals if c in required else pd.arrays.IntegerArray(vals, ~ok)  # exact ns, no float detour
    return out


def read_meta(rep: Path, require_ok: bool = True) -> dict:
    """meta.json of a replication; a run with status other than "ok" raises MetricsError (if require_ok)."""
    path = Path(rep) / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise MetricsError(f"{path}: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise MetricsError(f"{path}: not JSON (truncated?): {e}") from None
    if not isinstance(meta, dict):
        raise MetricsError(f"{path}: not a JSON object")
    if require_ok and meta.get("status") != "ok":
        raise MetricsError(f"{path}: the run failed: {meta.get('error', 'status ' + repr(meta.get('status')))}")
    return meta


@dataclass
class Audio:
    """Per sent audio packet, ordered by seq: seq, send_ns, recv_ns (NaN if never received)."""

    df: pd.DataFrame
    source: str = "audio_rx.csv"


def read_audio(rep: Path) -> Audio:
    """audio_tx.csv joined with audio_rx.csv (duplicates in rx ignored after the first)."""
    rep = Path(rep)
    tx_path, rx_path = rep / "audio_tx.csv", rep / "audio_rx.csv"
    tx = read_csv(tx_path, AUDIO_TX_COLUMNS)
    rx = read_csv(rx_path, AUDIO_RX_COLUMNS)
    if tx.empty:
        raise MetricsError(f"{tx_path}: no packets")
    if tx["seq"].duplicated().any():
        raise MetricsError(f"{tx_path}: duplicate sequence numbers")
    rx = rx.drop_duplicates("seq", keep="first").astype("Int64")  # Int64: a left join keeps ns exact
    unknown = ~rx["seq"].isin(tx["seq"])
    if unknown.any():
        raise MetricsError(f"{rx_path}: seq {int(rx['seq'][unknown].iloc[0])} was never sent (audio_tx.csv cut?)")
    df = tx.merge(rx.rename(columns={"send_ns": "rx_send_ns"}), on="seq", how="left")
    df = df.sort_values("seq", ignore_index=True)
    got = df["rx_send_ns"].notna()
    if (df.loc[got, "rx_send_ns"] != df.loc[got, "send_ns"]).any():
        raise MetricsError(f"{rx_path}: send_ns differs from audio_tx.csv for the same seq")
    return Audio(df[["seq", "send_ns", "recv_ns"]], str(rx_path))


def read_flows(rep: Path) -> pd.DataFrame:
    """flows.csv; end_ns is <NA> for a flow that did not complete; retrans/rtos <NA> when the server logged
    nothing for the flow. A completed flow without end_ns, or end before start, raises MetricsError."""
    path = Path(rep) / "flows.csv"
    df = read_csv(path, FLOW_COLUMNS, required=["flow", "burst", "start_ns", "bytes", "completed"])
    if df.empty:
        raise MetricsError(f"{path}: no flows")
    done = df["completed"] == 1
    if (done & df["end_ns"].isna()).any():
        raise MetricsError(f"{path}: a completed flow without end_ns")
    df.loc[~done, "end_ns"] = pd.NA
    if (df["end_ns"] < df["start_ns"]).fillna(False).any():
        raise MetricsError(f"{path}: end_ns before start_ns")
    return df


# ----------------------------------------------------------------------------- audio: delay


def owd_ns(a: Audio) -> np.ndarray:
    """One-way delay (BRIEF "One-way delay"): receive time - send time, NaN for packets that never arrived."""
    return (a.df["recv_ns"] - a.df["send_ns"]).to_numpy(dtype=float, na_value=np.nan)


def cdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Empirical CDF (BRIEF "One-way delay": report CDFs): sorted finite values x and F(x) = rank / n."""
    v = np.sort(np.asarray(values, dtype=float)[np.isfinite(values)])
    return v, np.arange(1, v.size + 1) / max(v.size, 1)


def owd_stats(d_ns: np.ndarray) -> dict:
    """Median, 99 % and max OWD in seconds (BRIEF "One-way delay") of the packets that arrived."""
    v = np.asarray(d_ns, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        return {"owd_median_s": None, "owd_p99_s": None, "owd_max_s": None}
    return {"owd_median_s": float(np.median(v)) / NS, "owd_p99_s": float(np.percentile(v, 99)) / NS,
            "owd_max_s": float(v.max()) / NS}


def ipdv_ns(a: Audio) -> np.ndarray:
    """IPDV (BRIEF "IPDV", RFC 3393): OWD(i) - OWD(i-1) for consecutive packets i-1, i (seq differs by 1)
    that both arrived."""
    d = owd_ns(a)
    seq = a.df["seq"].to_numpy()
    ok = ~np.isnan(d[1:]) & ~np.isnan(d[:-1]) & (np.diff(seq) == 1)
    return (d[1:] - d[:-1])[ok]


def ipdv_table(values_ns: np.ndarray) -> dict:
    """The seeds' Table 1 columns (BRIEF "IPDV"), in seconds: min, p25, p50, p75, p90, p95..p99, max
    (linear interpolation); empty dict when there is no pair."""
    v = np.asarray(values_ns, dtype=float)
    if v.size == 0:
        return {}
    out = {"min": float(v.min()) / NS}
    for p in IPDV_PERCENTILES:
        out[f"p{p}"] = float(np.percentile(v, p)) / NS
    out["max"] = float(v.max()) / NS
    return out


def base_delay_ns(a: Audio, tcp_start_ns: int | None, window_s: float = 2.0) -> float:
    """Base delay (BRIEF "Base delay"): the minimum OWD of the packets sent in [tcp_start - window_s,
    tcp_start); without TCP (tcp_start_ns None), over the whole run."""
    d = owd_ns(a)
    if tcp_start_ns is not None:
        send = a.df["send_ns"].to_numpy()
        d = d[(send >= tcp_start_ns - window_s * NS) & (send < tcp_start_ns)]
    d = d[~np.isnan(d)]
    if d.size == 0:
        raise MetricsError(f"{a.source}: no audio packet arrived in the {window_s:g} s base-delay window")
    return float(d.min())


# ----------------------------------------------------------------------------- audio: loss


def pure_loss_mask(a: Audio) -> np.ndarray:
    """Pure loss (BRIEF "Pure loss"): the packet never arrived."""
    return np.isnan(owd_ns(a))


def delay_loss_mask(a: Audio, base_ns: float, jitter_buffer_ms: float) -> np.ndarray:
    """Delay-based loss (BRIEF): arrived with OWD > base delay + jitter buffer (exactly at it: not lost)."""
    d = owd_ns(a)
    with np.errstate(invalid="ignore"):
        return ~np.isnan(d) & (d > base_ns + jitter_buffer_ms * MS)


def lost_mask(a: Audio, base_ns: float, jitter_buffer_ms: float) -> np.ndarray:
    """Lost after the jitter filter (BRIEF "Loss rate after the jitter filter"): pure or delay-based loss."""
    return pure_loss_mask(a) | delay_loss_mask(a, base_ns, jitter_buffer_ms)


def run_level(run: int) -> int:
    """Loss period level of a run of ``run`` consecutive lost packets (BRIEF "Loss period level")."""
    return 0 if run <= 0 else 1 if run == 1 else 2 if run <= 3 else 3 if run <= 5 else 4 if run <= 9 else 5


def loss_levels(lost: np.ndarray) -> np.ndarray:
    """Loss period level 0..5 of every packet (BRIEF "Loss period level", seeds' 003 Table 2), from runs of
    consecutive lost packets in ``lost`` (ordered by seq)."""
    lost = np.asarray(lost, dtype=bool)
    levels = np.zeros(lost.size, dtype=np.int8)
    if lost.size == 0:
        return levels
    edges = np.diff(np.r_[0, lost.astype(np.int8), 0])
    for s, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)):
        levels[s:e] = run_level(int(e - s))
    return levels


def level_shares(levels: np.ndarray) -> list[float]:
    """Share of packets at each loss period level 0..5 (BRIEF "Loss period level")."""
    n = max(int(levels.size), 1)
    return [float(np.count_nonzero(levels == k)) / n for k in range(6)]


def good_quality(levels: np.ndarray) -> float:
    """BRIEF "Good quality": share of packets at levels 0 and 1 together."""
    return float(np.count_nonzero(levels <= 1)) / max(int(levels.size), 1)


# ----------------------------------------------------------------------------- overlap filter


def active_mask(send_ns: np.ndarray, flows: pd.DataFrame, run_end_ns: float = math.inf) -> np.ndarray:
    """Overlap filter (BRIEF "Overlap filter"): packets sent inside the union of the flows' [start_ns, end_ns];
    a flow that did not complete (end_ns empty/NA) is active until ``run_end_ns`` (default: the end of the
    run, i.e. every later packet)."""
    send = np.asarray(send_ns)
    keep = np.zeros(send.size, dtype=bool)
    for s, e in zip(flows["start_ns"], flows["end_ns"]):
        end = run_end_ns if e is None or pd.isna(e) or e == "" else int(e)
        keep |= (send >= int(s)) & (send <= end)
    return keep


def time_since_tcp_start_s(send_ns: np.ndarray, tcp_start_ns: int) -> np.ndarray:
    """Time axis of the overlap filter (BRIEF: "time axes start at the TCP flows' start"), in seconds."""
    return (np.asarray(send_ns, dtype=np.int64) - int(tcp_start_ns)) / NS


def levels_over_time(t_s: np.ndarray, levels: np.ndarray, bin_s: float = 0.02) -> pd.DataFrame:
    """Per time bin since TCP start: number of samples and the share of each loss period level among them
    (BRIEF "Overlap filter": plots normalise by the number of samples at each time)."""
    b = np.floor(np.asarray(t_s) / bin_s).astype(np.int64)
    df = pd.DataFrame({"bin": b, "level": np.asarray(levels)})
    counts = df.groupby("bin").size()
    shares = df.groupby(["bin", "level"]).size().unstack(fill_value=0).reindex(columns=range(6), fill_value=0)
    out = shares.div(counts, axis=0).add_prefix("level")
    out.insert(0, "samples", counts)
    out.insert(0, "t_s", out.index * bin_s)
    return out.reset_index(drop=True)


# ----------------------------------------------------------------------------- TCP


def jain(x: Sequence[float] | np.ndarray) -> float | None:
    """Jain's fairness index (BRIEF "TCP"): (sum x)^2 / (n sum x^2); None for no or all-zero values."""
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not np.any(x):
        return None
    return float(x.sum() ** 2 / (x.size * (x ** 2).sum()))


def tfs(tcp_throughput: float, total_throughput: float, n_flows: int) -> float:
    """TFS (BRIEF "TFS", seeds' 002): TCP throughput / (total throughput / number of flows)."""
    if total_throughput <= 0 or n_flows <= 0:
        raise ValueError("TFS needs a positive total throughput and number of flows")
    return tcp_throughput / (total_throughput / n_flows)


def _int_col(s: pd.Series) -> pd.Series:
    """Nullable exact integers from a column of ints, Int64, or objects with "" / None for missing."""
    if pd.api.types.is_integer_dtype(s.dtype):
        return s.astype("Int64")
    vals = [None if v is None or (isinstance(v, str) and not v.strip()) or pd.isna(v) else int(v) for v in s]
    return pd.Series(pd.array(vals, dtype="Int64"), index=s.index)


def _opt(v: float) -> float | None:
    return None if v is None or pd.isna(v) else float(v)


def tcp_metrics(flows: pd.DataFrame) -> dict:
    """BRIEF "TCP": per-flow completion time (end - start) and goodput (bytes*8 / completion time); per burst
    completion time (last end - first start; None unless every flow of the burst completed) and Jain's index
    of its flows' goodput (None unless all completed); Jain's index between bursts = over the bursts' mean
    per-flow goodput; retransmissions and RTOs (flows the server logged nothing for are counted in
    ``rtos_unknown_flows``)."""
    f = flows.sort_values("flow").reset_index(drop=True)
    start = _int_col(f["start_ns"])
    end = _int_col(f["end_ns"])
    done = (pd.to_numeric(f["completed"]) == 1).to_numpy()
    end = end.where(done, pd.NA)
    nbytes = pd.to_numeric(f["bytes"]).to_numpy(dtype=float)
    ct = ((end - start) / NS).to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        gp = np.where(ct > 0, nbytes * 8 / ct, np.nan)
    bursts: dict[int, dict] = {}
    burst_means = []
    for b in sorted(f["burst"].unique()):
        m = (f["burst"] == b).to_numpy()
        all_done = bool(done[m].all())
        g = gp[m]
        span = float(end[m].max() - start[m].min()) / NS if all_done else None
        bursts[int(b)] = {
            "flows": int(m.sum()), "completed": int(done[m].sum()), "completion_s": span,
            "goodput_bps": float(nbytes[m].sum() * 8 / span) if span else None,
            "jain": jain(g) if all_done and not np.isnan(g).any() else None,
        }
        burst_means.append(float(np.nanmean(g)) if np.isfinite(g).any() else np.nan)
    rtos = _int_col(f["rtos"])
    retrans = _int_col(f["retrans"])
    return {
        "flows": int(len(f)), "completed": int(done.sum()),
        "flow_completion_s": [_opt(v) for v in ct],
        "flow_goodput_bps": [_opt(v) for v in gp],
        "bursts": bursts,
        "jain_between_bursts": jain(burst_means) if len(burst_means) > 1 and not np.isnan(burst_means).any()
        else None,
        "retrans": int(retrans.fillna(0).sum()),
        "rtos": int(rtos.fillna(0).sum()),
        "rtos_unknown_flows": int(rtos.isna().sum()),
    }


# ----------------------------------------------------------------------------- bulk throughput

BULK_WARMUP_S = 2.0
BULK_COOLDOWN_S = 2.0
SYN_MATCH_NS = 1 * NS  # a flow's first SYN leaves within this of its connect() (flows.csv start_ns)
SYN_EARLY_NS = 1 * MS  # ... and no earlier than this before it (pcap timestamps are truncated to the us)


def bulk_bursts(meta: dict) -> set[int]:
    """The burst numbers (flows.csv ``burst``) of bulk flows, from meta.json's plan: a bulk flow runs until the
    replication ends and never completes, so it is no burst whose completion time means anything."""
    plan = meta.get("plan") if isinstance(meta.get("plan"), dict) else {}
    return {int(b["burst"]) for b in plan.get("bursts") or [] if isinstance(b, dict) and b.get("bulk")
            and isinstance(b.get("burst"), int)}


def _client_port(rep: Path, flow: pd.Series) -> int | None:
    """The client's local port of a flow from its web client's log ``client_flows_<burst>.csv`` (the row with the
    flow's start_ns), None when that log or port is missing."""
    path = Path(rep) / f"client_flows_{int(flow['burst'])}.csv"
    try:
        log = read_csv(path, ["start_ns", "lport"])
    except MetricsError:
        return None
    port = log.loc[log["start_ns"] == int(flow["start_ns"]), "lport"].dropna()
    return int(port.iloc[0]) if len(port) and int(port.iloc[0]) > 0 else None


def _connection(pk: pd.DataFrame, start_ns: int, port: int | None, where: str) -> tuple[int, int, int, int, int] | str:
    """(src, dst, sport, dport, first SYN time) of the connection a flow opened at ``start_ns`` (its client
    port ``port`` when known), or why it cannot be told."""
    syn = pk[((pk["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN) & (pk["ts_ns"] >= start_ns - SYN_EARLY_NS)
             & (pk["ts_ns"] <= start_ns + SYN_MATCH_NS)]
    if port is not None:
        syn = syn[syn["sport"] == port]
    first = syn.groupby(["src", "dst", "sport", "dport"], sort=False)["ts_ns"].min()
    at = f"within {SYN_MATCH_NS / NS:g} s of the bulk flow's connect()" + (f" from port {port}" if port else "")
    if first.empty:
        return f"{where}: no SYN {at}"
    if len(first) > 1:
        return (f"{where}: {len(first)} connections opened {at}, and no client port (client_flows_<burst>.csv) "
                "tells them apart")
    (src, dst, sport, dport), ts = next(iter(first.items()))
    return int(src), int(dst), int(sport), int(dport), int(ts)


def delivered_bytes(pk: pd.DataFrame, conn: tuple[int, int, int, int, int]) -> tuple[np.ndarray, np.ndarray]:
    """In-order bytes the client's TCP has taken, over time: (ts_ns, bytes) at each ACK the client sent on the
    connection (its cumulative ACK number less the server's initial sequence number + 1, unwrapped past 2^32
    and never decreasing). The base is the SYN-ACK's sequence number + 1, or without a captured SYN-ACK the
    client's first ACK (the handshake's, acknowledging nothing)."""
    src, dst, sport, dport, syn_ts = conn
    after = pk[pk["ts_ns"] >= syn_ts]
    up = after[(after["src"] == src) & (after["sport"] == sport) & (after["dst"] == dst) & (after["dport"] == dport)
               & ((after["flags"] & TCP_ACK) != 0)]
    synack = after[(after["src"] == dst) & (after["sport"] == dport) & (after["dst"] == src) & (after["dport"] == sport)
                   & ((after["flags"] & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK))]
    ts, ack = up["ts_ns"].to_numpy(np.int64), up["ack"].to_numpy(np.int64)
    if ack.size == 0:
        return ts, ack
    base = int(synack["seq"].iloc[0]) + 1 if len(synack) else int(ack[0])
    return ts, np.maximum.accumulate(np.maximum(unwrap_seq(ack, base), 0))


def unwrap_seq(values: np.ndarray, base: int) -> np.ndarray:
    """32-bit sequence numbers in capture order as offsets from ``base``, unwrapped past 2^32: each step is the
    signed 32-bit difference from the previous value (a connection never moves 2^31 in one step)."""
    v = np.asarray(values, dtype=np.int64)
    if v.size == 0:
        return v
    steps = (np.diff(v) + 2**31) % 2**32 - 2**31
    return ((int(v[0]) - base + 2**31) % 2**32 - 2**31) + np.concatenate([[0], np.cumsum(steps)])


def _at(ts: np.ndarray, cum: np.ndarray, t_ns: int) -> int:
    """The step function of delivered_bytes at ``t_ns``: the last ACK at or before it, 0 before the first."""
    i = int(np.searchsorted(ts, t_ns, side="right")) - 1
    return int(cum[i]) if i >= 0 else 0


def _bulk_window(rows: pd.DataFrame, end_ns: int, warmup_s: float, cooldown_s: float) -> tuple[int, int]:
    """(start, end) ns of the window bulk_goodput measures: after the last bulk flow's start and its warm-up, to
    the replication's end less the cool-down or a completed bulk flow's end, whichever is first."""
    start = int(rows["start_ns"].max()) + round(warmup_s * NS)
    done = rows["completed"] == 1
    end = min([int(end_ns) - round(cooldown_s * NS)] + [int(e) for e in rows.loc[done, "end_ns"]])
    return start, end


def _bulk_bytes(rep: Path, rows: pd.DataFrame, pk: pd.DataFrame, pcap: Path, start: int, end: int) -> int | str:
    """Bytes delivered in order to the client within [start, end], summed over the bulk flows (a completed one
    capped at its flows.csv bytes), or why they cannot be told (a flow without its connection or its ACKs in
    ``pcap``)."""
    total = 0
    for _, row in rows.iterrows():
        conn = _connection(pk, int(row["start_ns"]), _client_port(rep, row), str(pcap))
        if isinstance(conn, str):
            return conn
        ts, cum = delivered_bytes(pk, conn)
        if cum.size == 0:
            return f"{pcap}: no ACK from the client on port {conn[2]}"
        if row["completed"] == 1:
            cum = np.minimum(cum, int(row["bytes"]))
        total += _at(ts, cum, end) - _at(ts, cum, start)
    return total


def bulk_goodput(rep: Path, flows: pd.DataFrame, meta: dict, end_ns: int,
                 warmup_s: float = BULK_WARMUP_S, cooldown_s: float = BULK_COOLDOWN_S) -> dict:
    """Bulk throughput of one replication: the bulk flows' goodput in bit/s over a window, from the client's
    capture (client.pcap) alone, so that it works for a flow that never completes (flows.csv then has no end
    and, for a client stopped mid-transfer, no byte count).

    * Bulk flows: the flows.csv rows whose burst is a bulk burst of meta.json's plan (``bulk_bursts``); each one's
      connection in client.pcap is the one whose first SYN the client sent within 1 s after its start_ns
      (connect()), from the port its web client logged (``client_flows_<burst>.csv``, lport) when known.
    * Bytes: in order delivered to the client's TCP (``delivered_bytes``: its cumulative ACK numbers, so neither
      retransmissions nor out-of-order data count twice), as a step function of the client's kernel capture time;
      a completed flow is capped at its flows.csv bytes (its FIN takes one sequence number).
    * Window: from the last bulk flow's start_ns + ``warmup_s`` (2 s: connection set-up and slow start fill the
      link within about 0.3 s on LTE and 0.7 s on HSPA, within about 2 s on EDGE with IW3, whose RTT is 0.5 s
      before any queue; so the window measures the share of the link the AQM leaves an established flow, not
      how fast one start-up happens) to ``end_ns`` - ``cooldown_s``, or the bulk flow's own end if it
      completed earlier. ``end_ns`` is the end of the replication's measurement (summarize_rep: the audio's
      last send time, the planned length for every AQM of a pairing unit unless the run's time limit stopped
      it first); the 2 s cool-down keeps the window off the stop sequence that follows it: the captures lose
      their last frames when tcpdump is stopped (measured on web6 runs: client.pcap's last frame 0.1-0.4 s
      before the audio's last arrival, 0.34 s before its last send at worst).
    * goodput_bps = (delivered at the window's end - delivered at its start) x 8 / window length, summed over
      the bulk flows (one in every scenario so far). The steps are ACKs: at most one ACK's worth (about
      2 segments) of error at each edge.

    Returns {"flows", "goodput_bps", "bytes", "window_s", "window_start_ns", "window_end_ns", "warmup_s",
    "cooldown_s", "not_measured"}: without the data (no bulk row in flows.csv, client.pcap missing or broken, no
    matching connection, a capture that ends before the window, an empty window) goodput_bps is None and
    ``not_measured`` says why, naming the file; never an error for the replication's other metrics."""
    rep = Path(rep)
    bursts = bulk_bursts(meta)
    out: dict = {"flows": 0, "goodput_bps": None, "bytes": None, "window_s": None, "window_start_ns": None,
                 "window_end_ns": None, "warmup_s": float(warmup_s), "cooldown_s": float(cooldown_s),
                 "not_measured": None}
    rows = flows[flows["burst"].isin(sorted(bursts))] if flows is not None else flows
    if rows is None or rows.empty:
        return {**out, "not_measured": f"{rep / 'flows.csv'}: no row of bulk burst(s) {sorted(bursts)}"}
    out["flows"] = int(len(rows))
    start, end = _bulk_window(rows, end_ns, warmup_s, cooldown_s)
    out.update(window_start_ns=start, window_end_ns=end, window_s=(end - start) / NS)
    if end <= start:
        return {**out, "not_measured": f"empty window: the bulk flow starts {(start - end) / NS:.3f} s too late "
                                       f"(its start + {warmup_s:g} s warm-up is after the audio's end - {cooldown_s:g} "
                                       "s cool-down)"}
    pcap = rep / "client.pcap"
    try:
        pk, last = read_tcp_headers(pcap)
    except MetricsError as e:
        return {**out, "not_measured": str(e)}
    if last is None or last < end:
        return {**out, "not_measured": f"{pcap}: the capture ends before the window's end"
                + (f" ({(end - last) / NS:.3f} s)" if last is not None else " (no frames)")}
    total = _bulk_bytes(rep, rows, pk, pcap, start, end)
    if isinstance(total, str):
        return {**out, "not_measured": total}
    return {**out, "bytes": int(total), "goodput_bps": total * 8 * NS / (end - start)}


def capture_timeouts(rep: Path, flows: pd.DataFrame) -> dict:
    """``experiments.timeouts.timeouts`` of the replication, skipping the captures when the server logged no
    retransmission on any flow (the count then is 0 by construction: a timeout of the server is a
    retransmission, and the client's SYN sent again makes the server resend its SYN-ACK)."""
    retrans = _int_col(flows["retrans"]) if len(flows) else pd.Series(dtype="Int64")
    if len(retrans) and not retrans.isna().any() and int(retrans.sum()) == 0:
        return {**dict.fromkeys(TIMEOUT_FIELDS, 0), "not_measured": None}
    return timeouts(rep)


# ----------------------------------------------------------------------------- rtc+web (seeds' 002)

RTC_TX_COLUMNS = ("seq", "send_ns", "size", "rate_bps")
RTC_RX_COLUMNS = ("seq", "send_ns", "recv_ns", "size")


def rtc_suffixes(rep: Path) -> list[str]:
    """The real-time flows of a replication, as the suffixes of their logs: "" for rtc_tx.csv (the first),
    "_1", "_2", ... for rtc_tx_1.csv, ... (a [webrtc] section with ``flows`` > 1)."""
    rep = Path(rep)
    out = [""] if (rep / "rtc_tx.csv").exists() else []
    k = 1
    while (rep / f"rtc_tx_{k}.csv").exists():
        out.append(f"_{k}")
        k += 1
    return out


def read_rtc(rep: Path, suffix: str = "") -> tuple[pd.DataFrame, pd.DataFrame]:
    """One real-time flow's logs: rtc_tx{suffix}.csv, and rtc_rx{suffix}.csv without duplicate packets."""
    rep = Path(rep)
    tx = read_csv(rep / f"rtc_tx{suffix}.csv", RTC_TX_COLUMNS)
    rx = read_csv(rep / f"rtc_rx{suffix}.csv", RTC_RX_COLUMNS).drop_duplicates("seq")
    if tx.empty:
        raise MetricsError(f"{rep / f'rtc_tx{suffix}.csv'}: no packets")
    return tx, rx


# The delay-based over-use detector's over-use state as each WebRTC stack's per-second stats write it (the usage
# column): aiortc's receiver (webrtc_rx_stats.csv, aiortc's BandwidthUsage names) and Pion's sender
# (webrtc_tx_stats.csv with GCC's columns, pion/interceptor's usage.String()).
OVERUSE_STATE = {"pion": "overuse", "aiortc": "overusing"}
OVERUSE_STATS = {"pion": "webrtc_tx_stats", "aiortc": "webrtc_rx_stats"}  # where each stack's detector logs


def overuse_seconds(rep: Path, suffix: str = "") -> dict | None:
    """Over-use seconds of one [webrtc] flow: in how many of its per-second stats rows the delay-based detector
    was in over-use, from the stack's own log (docs/data-formats.md): Pion's sender, whose
    webrtc_tx_stats{suffix}.csv holds GCC's ``usage`` ("overuse"), else aiortc's receiver,
    webrtc_rx_stats{suffix}.csv ("overusing"; aiortc's sender stats have no usage column). Each row is written
    once a second and its usage is the detector's state at that moment: a sample per second, the same for both
    stacks, not whether the detector fired at any time in the second (aiortc's per-packet webrtc_rx_trace.csv
    says that, and counts more: docs/seeds.md). Rows without a usage value (aiortc's receiver before its first
    packet) are not seconds of the count.

    Returns {"stack", "overuse_s": rows in over-use, "usage_s": rows with a usage value, "overuse_share":
    overuse_s / usage_s}, or None where the flow logs no detector state: no stats file (the [rtc] flow, whose
    controller has no such detector), or no usage value in it."""
    rep = Path(rep)
    for stack, name in OVERUSE_STATS.items():
        path = rep / f"{name}{suffix}.csv"
        if not path.exists():
            continue
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as e:
            raise MetricsError(f"{path}: empty or unreadable: {e}".rstrip()) from None
        if "usage" not in df.columns:
            continue
        usage = df["usage"].str.strip()
        usage = usage[usage != ""]
        if not len(usage):
            continue
        over = int((usage == OVERUSE_STATE[stack]).sum())
        return {"stack": stack, "overuse_s": over, "usage_s": int(len(usage)), "overuse_share": over / len(usage)}
    return None


def rtc_metrics(rep: Path, flows: pd.DataFrame | None, n_flows: int, suffix: str = "",
                other_rtc_bytes: int = 0, logs: tuple[pd.DataFrame, pd.DataFrame] | None = None) -> dict:
    """One adaptive real-time flow (rtc_tx{suffix}.csv / rtc_rx{suffix}.csv) and the seeds' TFS.

    goodput: bytes received x 8 / (last - first send); loss: 1 - received / sent; OWD median and 95 %.
    TFS = TCP throughput / (total throughput / number of flows), as in 002: TCP throughput is the mean
    per-download goodput while downloading (bytes x 8 / elapsed, completed downloads), total throughput
    the bytes of the real-time flows (this one and ``other_rtc_bytes`` received of the others) and all
    downloads over this flow's span, number of flows the web users plus the real-time flows. "overuse": a
    [webrtc] flow's ``overuse_seconds`` (None for a flow that logs no detector state). ``logs``: the flow's
    read_rtc, when the caller has read them already."""
    tx, rx = logs if logs is not None else read_rtc(rep, suffix)
    span_ns = int(tx["send_ns"].max() - tx["send_ns"].min()) or 1
    owd = (rx["recv_ns"] - rx["send_ns"]).to_numpy(dtype=float) / NS
    rtc_bytes = int(rx["size"].sum())
    out: dict = {"sent": int(len(tx)), "received": int(len(rx)), "loss_rate": 1 - len(rx) / len(tx),
                 "goodput_bps": rtc_bytes * 8 * NS / span_ns,
                 "owd_median_s": float(np.median(owd)) if owd.size else None,
                 "owd_p95_s": float(np.percentile(owd, 95)) if owd.size else None,
                 "mean_rate_bps": float(tx["rate_bps"].mean()), "overuse": overuse_seconds(rep, suffix)}
    if flows is not None and len(flows):
        t = tcp_metrics(flows)
        gp = np.array([g for g in t["flow_goodput_bps"] if g is not None], float)
        tcp_bytes = float(pd.to_numeric(flows["bytes"]).sum())
        total = (rtc_bytes + other_rtc_bytes + tcp_bytes) * 8 * NS / span_ns
        out["tcp_throughput_bps"] = float(gp.mean()) if gp.size else None
        out["total_throughput_bps"] = total
        out["tfs"] = tfs(float(gp.mean()), total, n_flows) if gp.size and total > 0 else None
    return out


# ----------------------------------------------------------------------------- frozen flows

FROZEN_WINDOW_NS = 2 * NS  # the delivery rate's sliding window, and how long below half its share freezes a flow
FROZEN_SHARE = 0.5  # a flow below this part of its fair share is starved
FROZEN_STEP_NS = 10 * MS  # the time grid the rule is evaluated on


@dataclass
class ServerConnection:
    """One connection of the web server in server.pcap: when it had data (``periods``, ns) and how many bytes
    the client had acknowledged at each of its ACKs (``ack_ns``, ``acked``)."""

    client_port: int
    periods: list[tuple[int, int]]
    ack_ns: np.ndarray
    acked: np.ndarray


def data_periods(seg: pd.DataFrame, last_ns: int) -> ServerConnection:
    """A connection's periods with data and its delivery, from its segments in server.pcap (connection_segments'
    columns, in time order). Offsets count from the server's initial sequence number + 1 (``unwrap_seq``): the
    server has sent up to the highest seq + payload of its data segments, the client has acknowledged up to its
    highest cumulative ACK. A period starts with a data segment sent when everything before it was
    acknowledged, and ends with the ACK of everything sent, or at ``last_ns`` (the capture's end) if that never
    came; but a response only starts on a request, so two such runs with no request of the client's (a
    segment with payload) between them are one period: the pause was TCP's (a flow recovering from a timeout
    with a window of one segment has everything acknowledged once per round trip, the rest of its response
    still in the server's buffer). So a kept-alive connection has no data between its responses, and the
    server's FIN (no payload) is none."""
    isn = int(seg["isn"].iloc[0]) + 1
    ts = seg["ts_ns"].to_numpy(np.int64)
    down = seg["down"].to_numpy(bool)
    data = down & (seg["payload"].to_numpy() > 0)
    up = ~down & ((seg["flags"].to_numpy() & TCP_ACK) != 0)
    sent, acked = np.full(ts.size, -1, np.int64), np.zeros(ts.size, np.int64)
    sent[data] = unwrap_seq(seg["seq"].to_numpy(np.int64)[data] + seg["payload"].to_numpy(np.int64)[data], isn)
    acked[up] = np.maximum(unwrap_seq(seg["ack"].to_numpy(np.int64)[up], isn), 0)
    sent, acked = np.maximum.accumulate(sent), np.maximum.accumulate(acked)
    has = np.r_[False, sent > acked, False]
    starts, ends = np.flatnonzero(has[1:] & ~has[:-1]), np.flatnonzero(~has[1:] & has[:-1])
    asked = np.r_[0, np.cumsum(~down & (seg["payload"].to_numpy() > 0))]  # requests before each segment
    periods: list[tuple[int, int]] = []
    for s, e in zip(starts, ends):
        end = int(ts[e]) if e < ts.size else int(last_ns)
        if periods and asked[s + 1] == asked[prev]:  # no request from the last period's end (its ACK may be one)
            periods[-1] = (periods[-1][0], end)
        else:
            periods.append((int(ts[s]), end))
        prev = e
    return ServerConnection(int(seg["c_port"].iloc[0]), periods, ts[up], acked[up])


def web_connections(pk: pd.DataFrame, last_ns: int) -> list[ServerConnection]:
    """The web server's connections (its SYN-ACKs from ``accessnet.web.WEB_PORT``) in a capture's TCP headers."""
    synacks = server_synacks(pk, WEB_PORT)
    if synacks.empty:
        return []
    segs = connection_segments(pk, synacks)
    return [data_periods(g, last_ns) for _, g in segs.groupby(CONNECTION_KEY, sort=False)]


def link_rate_bps(meta: dict, t_ns: np.ndarray) -> np.ndarray:
    """The link's rate at each time: the profile's rate (a radio's configured mean: its slots' draws are the
    radio's noise, not a share anyone is owed), changed by the scenario's rate_changes (from the audio's
    start) on a link without a radio."""
    prof = meta.get("profile") or {}
    if not prof.get("rate_bps"):
        raise MetricsError("meta.json: no profile rate_bps (the fair share needs the link's rate)")
    rate = np.full(t_ns.size, float(prof["rate_bps"]))
    if prof.get("rate_min_bps") is None and meta.get("audio_start_ns") is not None:
        for at_s, bps in sorted(meta.get("rate_changes") or []):
            rate[t_ns >= int(meta["audio_start_ns"]) + round(float(at_s) * NS)] = float(bps)
    return rate


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first index, length) of every run of True in ``mask``."""
    edges = np.diff(np.r_[0, mask.astype(np.int8), 0])
    return [(int(s), int(e - s)) for s, e in zip(np.flatnonzero(edges == 1), np.flatnonzero(edges == -1))]


def below_share(c: ServerConnection, grid: np.ndarray, owed: np.ndarray, window_ns: int = FROZEN_WINDOW_NS,
                share: float = FROZEN_SHARE) -> list[tuple[int, int]]:
    """The stretches (first grid index, points) in which connection ``c`` got less than ``share`` of its fair
    share: at grid time t in one of its periods (start, end], the window is the ``window_ns`` before t clipped to
    the period's start; it is below when the bytes the client acknowledged in the window are fewer than
    ``share`` x what the fair share owed it there (``owed``: the fair share's integral, bytes, at the grid)."""
    out = []
    for start, end in c.periods:
        i0, i1 = np.searchsorted(grid, start, "right"), np.searchsorted(grid, end, "right")
        t = grid[i0:i1]
        if t.size == 0:
            continue
        a = np.maximum(t - window_ns, start)
        got = _delivered(c, t) - _delivered(c, a)
        due = owed[i0:i1] - np.interp(a, grid, owed)
        out += [(i0 + s, n) for s, n in _runs(got < share * due)]
    return out


def _delivered(c: ServerConnection, t: np.ndarray) -> np.ndarray:
    """The bytes the client had acknowledged at each time (the last ACK at or before it; 0 before the first)."""
    i = np.searchsorted(c.ack_ns, t, "right") - 1
    return np.where(i >= 0, c.acked[np.maximum(i, 0)], 0)


def frozen_flows(rep: Path, meta: dict, window_ns: int = FROZEN_WINDOW_NS, share: float = FROZEN_SHARE,
                 step_ns: int = FROZEN_STEP_NS) -> dict:
    """"Never a flow frozen": no flow below half its fair share for longer than 2 s while it has data.

    From server.pcap, which shows both what the server sent and the client's cumulative ACKs (client.pcap
    cannot tell a flow whose next segments wait in the queue or were dropped from one that is done):

    * a flow is one of the web server's TCP connections (``web_connections``); it has data from a data segment
      sent when all before it was acknowledged until the client's ACK covers everything sent (``data_periods``:
      per response on a kept-alive connection; none between responses);
    * its delivery: the bytes the client acknowledged (its cumulative ACKs as they reach the server; the
      upstream has no queue, so they lag the client's by the constant one-way delay), in a sliding 2 s window
      clipped to the start of the period;
    * the fair share at time t: the link's rate (``link_rate_bps``: the profile's rate, a radio's configured
      mean) / (flows with data at t + 1 for the audio + 1 per rtc/webrtc flow): each real-time flow counts as a
      flow. Its integral over the same window is what the flow was owed;
    * a flow is below half its share at t when it got less than half of what it was owed in the window
      (``below_share``), evaluated every ``step_ns`` (10 ms); a stretch is a run of such times (its length: points
      x 10 ms), and the flow is frozen when a stretch is longer than 2 s. A flow delivering its share before
      and after a stall is below half from about the stall's first second to its end + 1 s: a stretch as long as
      the stall. A new period's first round trip delivers nothing and counts as below.

    Returns {"flows", "frozen_flows", "longest_below_s" (over all flows; 0.0 without any stretch), "frozen":
    [{"client_port", "from_s", "to_s" (the longest stretch's first and last time, s after the audio's start),
    "below_s"}], "window_s", "share", "not_measured"}; without server.pcap or the link's rate, the counts are None
    and "not_measured" says why."""
    out = {"flows": None, "frozen_flows": None, "longest_below_s": None, "frozen": [], "window_s": window_ns / NS,
           "share": share, "not_measured": None}
    try:
        pk, last = read_tcp_headers(Path(rep) / "server.pcap")
        conns = [c for c in web_connections(pk, last or 0) if c.periods]
        if not conns:
            return {**out, "flows": 0, "frozen_flows": 0, "longest_below_s": 0.0}
        t0 = min(p[0] for c in conns for p in c.periods)
        grid = np.arange(t0, max(p[1] for c in conns for p in c.periods) + step_ns, step_ns, dtype=np.int64)
        fair = link_rate_bps(meta, grid) / 8 / (_with_data(conns, grid) + 1 + len(rtc_suffixes(Path(rep))))
    except MetricsError as e:
        return {**out, "not_measured": str(e)}
    owed = np.r_[0.0, np.cumsum(fair[1:] * step_ns / NS)]  # step (t_j-1, t_j] at t_j's share, as periods hold
    zero = int(meta.get("audio_start_ns") or t0)
    frozen, longest = [], 0
    for c in conns:
        runs = below_share(c, grid, owed, window_ns, share)
        first, n = max(runs, key=lambda r: r[1], default=(0, 0))
        longest = max(longest, n)
        if n * step_ns > window_ns:
            frozen.append({"client_port": c.client_port, "from_s": (int(grid[first]) - zero) / NS,
                           "to_s": (int(grid[first + n - 1]) - zero) / NS, "below_s": n * step_ns / NS})
    return {**out, "flows": len(conns), "frozen_flows": len(frozen), "longest_below_s": longest * step_ns / NS,
            "frozen": frozen}


def _with_data(conns: list[ServerConnection], grid: np.ndarray) -> np.ndarray:
    """How many connections have data at each grid time (a period (start, end] holds the times in it)."""
    diff = np.zeros(grid.size + 1, np.int64)
    for c in conns:
        for start, end in c.periods:
            diff[np.searchsorted(grid, start, "right")] += 1
            diff[np.searchsorted(grid, end, "right")] -= 1
    return np.cumsum(diff[:-1])


# ----------------------------------------------------------------------------- one replication


def _jb_key(jb: float) -> str:
    return f"{jb:g}"


def audio_packets(rep: Path, jitter_buffers_ms: Iterable[float] = JITTER_BUFFERS_MS,
                  base_window_s: float = 2.0) -> tuple[pd.DataFrame, dict, pd.DataFrame | None]:
    """Per sent audio packet: seq, send_ns, recv_ns, owd_ns, pure_loss, kept (overlap filter), t_s (since
    the first flow's start; NaN without TCP) and, per jitter buffer J, ``delay_loss_J`` and ``level_J``
    (levels over the whole stream). Also returns meta.json with ``base_delay_ns`` added, and flows.csv (None
    without TCP)."""
    rep = Path(rep)
    meta = read_meta(rep)
    audio = read_audio(rep)
    tcp_start = meta.get("tcp_start_ns")
    base = base_delay_ns(audio, tcp_start, base_window_s)
    df = audio.df.copy()
    df["owd_ns"] = owd_ns(audio)
    df["pure_loss"] = pure_loss_mask(audio)
    send = df["send_ns"].to_numpy()
    flows = None
    if tcp_start is not None:
        flows = read_flows(rep)
        df["kept"] = active_mask(send, flows)
        df["t_s"] = time_since_tcp_start_s(send, int(flows["start_ns"].min()))
    else:
        df["kept"] = True
        df["t_s"] = np.nan
    for jb in jitter_buffers_ms:
        k = _jb_key(jb)
        df[f"delay_loss_{k}"] = delay_loss_mask(audio, base, jb)
        df[f"level_{k}"] = loss_levels(df["pure_loss"].to_numpy() | df[f"delay_loss_{k}"].to_numpy())
    return df, {**meta, "base_delay_ns": base}, flows


def summarize_rep(path: Path, jitter_buffers: Iterable[float] = JITTER_BUFFERS_MS,
                  base_window_s: float = 2.0) -> dict:
    """All BRIEF metrics of one replication directory, JSON-ready. Audio metrics ("audio", "ipdv",
    "jitter_buffers_ms") are over the packets kept by the overlap filter (all packets without TCP);
    "audio_whole_run" is unfiltered. With a bulk flow in meta.json's plan, "bulk" is its ``bulk_goodput`` up to
    the audio's last send time - 2 s (goodput_bps None and "not_measured" saying why when client.pcap cannot give it;
    the other metrics stand). Raises MetricsError naming the file on bad input."""
    jbs = list(jitter_buffers)
    return summarize_packets(path, *audio_packets(Path(path), jbs, base_window_s), jbs)


def summarize_packets(path: Path, df: pd.DataFrame, meta: dict, flows: pd.DataFrame | None,
                      jbs: list[float]) -> dict:
    """``summarize_rep`` from what ``audio_packets(path, jbs)`` returned, for a caller that needs those too (the
    report, a digest): the audio is read and its levels computed once."""
    kept = df[df["kept"]].reset_index(drop=True)
    out: dict = {k: meta.get(k) for k in ("case", "rep", "aqm", "iw", "n_flows", "switch")}
    out["path"] = str(path)
    out["base_delay_s"] = meta["base_delay_ns"] / NS
    out["audio"] = {"sent": int(len(kept)), "received": int((~kept["pure_loss"]).sum()),
                    "pure_losses": int(kept["pure_loss"].sum()), **owd_stats(kept["owd_ns"].to_numpy())}
    out["audio_whole_run"] = {"sent": int(len(df)), "pure_losses": int(df["pure_loss"].sum()),
                              **owd_stats(df["owd_ns"].to_numpy())}
    out["ipdv"] = ipdv_table(ipdv_ns(Audio(kept)))
    per_jb = {}
    n = max(len(kept), 1)
    for jb in jbs:
        k = _jb_key(jb)
        lv = kept[f"level_{k}"].to_numpy()
        delay = int(kept[f"delay_loss_{k}"].sum())
        pure = int(kept["pure_loss"].sum())
        per_jb[k] = {"loss_rate": (pure + delay) / n, "pure_losses": pure, "delay_losses": delay,
                     "levels": level_shares(lv), "good_quality": good_quality(lv)}
    out["jitter_buffers_ms"] = per_jb
    if flows is not None:
        out["tcp"] = tcp_metrics(flows)
        out["tcp"]["timeouts"] = capture_timeouts(Path(path), flows)
        out["frozen"] = frozen_flows(Path(path), meta)
    if bulk_bursts(meta):
        out["bulk"] = bulk_goodput(Path(path), flows, meta, int(df["send_ns"].max()))
    sfx = rtc_suffixes(Path(path))
    if sfx:
        users = int(meta.get("n_flows") or 0)
        logs = {x: read_rtc(Path(path), x) for x in sfx}
        got = {x: int(rx["size"].sum()) for x, (_, rx) in logs.items()}
        per = [rtc_metrics(Path(path), flows, users + len(sfx), x, sum(got.values()) - got[x], logs[x])
               for x in sfx]
        out["rtc"] = per[0]  # the first real-time flow (the only one but with [webrtc] flows > 1)
        if len(per) > 1:
            out["rtc_flows"] = per
    return out


# ----------------------------------------------------------------------------- over replications

# Student t quantile t(0.975, df): exact values (to 6 decimals) for df 1..30 and at 40, 50, 60, 80, 100, 120,
# infinity; in between, linear interpolation in 1/df (error < 1e-4). scipy is not a pinned dependency.
_T975 = {1: 12.706205, 2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 6: 2.446912, 7: 2.364624,
         8: 2.306004, 9: 2.262157, 10: 2.228139, 11: 2.200985, 12: 2.178813, 13: 2.160369, 14: 2.144787,
         15: 2.131450, 16: 2.119905, 17: 2.109816, 18: 2.100922, 19: 2.093024, 20: 2.085963, 21: 2.079614,
         22: 2.073873, 23: 2.068658, 24: 2.063899, 25: 2.059539, 26: 2.055529, 27: 2.051831, 28: 2.048407,
         29: 2.045230, 30: 2.042272, 40: 2.021075, 50: 2.008559, 60: 2.000298, 80: 1.990063, 100: 1.983972,
         120: 1.979930}
_Z975 = 1.959964


def t_quantile_975(df: int) -> float:
    """Two-sided 95 % Student t quantile for ``df`` degrees of freedom (table, 1/df interpolation)."""
    if df < 1:
        raise ValueError("need at least 1 degree of freedom")
    if df in _T975:
        return _T975[df]
    keys = sorted(_T975) + [math.inf]
    hi = next(k for k in keys if k > df)
    lo = max(k for k in keys if k < df)
    t_hi = _Z975 if hi == math.inf else _T975[hi]
    x, x0, x1 = 1 / df, 1 / lo, 0.0 if hi == math.inf else 1 / hi
    return t_hi + (_T975[lo] - t_hi) * (x - x1) / (x0 - x1)


def mean_ci95(values: Iterable[float | None]) -> dict:
    """Mean and 95 % confidence interval (Student t, sample standard deviation) over replications; None
    values are left out and counted in n_missing; half width None with fewer than 2 values."""
    vals = list(values)
    v = np.array([x for x in vals if x is not None and not (isinstance(x, float) and math.isnan(x))], float)
    out = {"n": int(v.size), "n_missing": len(vals) - int(v.size), "mean": None, "ci95": None, "lo": None,
           "hi": None}
    if v.size == 0:
        return out
    m = float(v.mean())
    out["mean"] = m
    if v.size >= 2:
        h = t_quantile_975(v.size - 1) * float(v.std(ddof=1)) / math.sqrt(v.size)
        out.update(ci95=h, lo=m - h, hi=m + h)
    return out


_NOT_AGGREGATED = {"rep", "iw", "n_flows", "flow_completion_s", "flow_goodput_bps", "window_start_ns", "window_end_ns"}


def _flatten(d: dict, prefix: str = "") -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for k, v in d.items():
        if k in _NOT_AGGREGATED:
            continue
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        elif isinstance(v, list):
            out.update({f"{key}.{i}": x for i, x in enumerate(v) if x is None or isinstance(x, (int, float))})
        elif v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)):
            out[key] = v
    return out


def find_reps(path: Path) -> list[Path]:
    """Replication directories under ``path``: itself if it holds meta.json, else ``rep<k>`` or
    ``<case>/rep<k>`` directories (``.tmp`` leftovers of unfinished replications excluded)."""
    path = Path(path)
    if (path / "meta.json").exists():
        return [path]
    found = [p for pat in ("rep[0-9]*", "*/rep[0-9]*") for p in path.glob(pat)]
    return sorted(p for p in found if p.is_dir() and not p.name.endswith(".tmp"))


def summarize_sweep(paths: Iterable[Path], jitter_buffers: Iterable[float] = JITTER_BUFFERS_MS,
                    base_window_s: float = 2.0) -> dict:
    """Per case (meta.json "case", else the parent directory's name): number of good replications and
    mean / 95 % CI (``mean_ci95``) of every scalar metric of ``summarize_rep``; runs that failed or could not
    be read are listed under "failed" with the reason, never averaged."""
    jbs = list(jitter_buffers)
    groups: dict[str, list[dict]] = {}
    failed: list[dict] = []
    for p in paths:
        p = Path(p)
        try:
            s = summarize_rep(p, jbs, base_window_s)
        except MetricsError as e:
            failed.append({"path": str(p), "case": p.parent.name, "error": str(e)})
            continue
        groups.setdefault(str(s.get("case") or p.parent.name), []).append(s)
    cases = {}
    for case, reps in sorted(groups.items()):
        flat = [_flatten(r) for r in reps]
        keys = sorted({k for f in flat for k in f})
        cases[case] = {
            **{k: reps[0].get(k) for k in ("aqm", "iw", "n_flows", "switch")},
            "reps": len(reps),
            "failed": sum(1 for f in failed if f["case"] == case),
            "metrics": {k: mean_ci95(f.get(k) for f in flat) for k in keys},
        }
    return {"cases": cases, "failed": failed}
