"""What fires aiortc's over-use detector (issue 35): ``python -m experiments.aiortc_overuse REP_DIR...``.

Reads a replication's aiortc receiver trace (``webrtc_rx_trace.csv``, ``accessnet.webrtc.RX_TRACE``: the
estimator's input and state per packet), its per-packet log (``rtc_rx.csv``) and, when there, the phone's
capture (``client.pcap``: the kernel's arrival time of every RTP packet, joined on the RTP sequence number).
Per replication it prints:

* the input noise: inter-group arrival delta minus send delta (``t_delta - ts_delta``, ms), and the event
  loop's lag (handler time minus the kernel's capture time);
* every over-use onset (usage turns "overusing"), with T = min(deltas, 60) x offset and the threshold there,
  how far the one-way delay rose at the bottleneck (kernel capture: the largest OWD of the 100 ms before the
  onset minus the smallest of the second before) and in the handler; the onset is put down to the queue if
  the kernel OWD rose by >= ``QUEUE_MS``, else to the host if the handler's delay rose by that much (the
  network's did not), else "small" (the network's delay moved by less than ``QUEUE_MS``: a small real
  change met a low threshold);
* the open-loop replay: aiortc's estimator (with the lab's 100 ms burst cap) fed the same packets again with
  the arrival time as logged (must give the logged onsets: a check), as the handler's exact time, as the
  kernel's exact time and as the kernel's time in integer ms. Open loop: the sender's rate is the one that
  was run, so a variant's count says which input noise the detector reacts to, not what rate it would reach;
* the rate control: the estimate before and after each decrease, how long it took to come back, and its
  growth while increasing (kbit/s per s).

``--csv OUT`` writes the onsets of all replications to one file; ``--plot OUT.png`` draws one panel per
replication: the kernel-side one-way delay, the estimate and the onsets (coloured by cause)."""

from __future__ import annotations

import argparse
import json
import struct
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from experiments.iplayer import PROTO_UDP, ip_layer

NTP_EPOCH_OFFSET_MS = 2_208_988_800_000
QUEUE_MS = 5.0  # a kernel-side OWD rise of this much in the second before an onset is a queue building
_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),
                b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}


def rtp_arrivals(pcap: Path) -> pd.DataFrame:
    """(rtp_seq, kernel_ns) of the video RTP packets in a capture: UDP datagrams whose payload is RTP version 2
    with a dynamic payload type (96-127: not RTCP, not the audio probe), of the 5-tuple that carries most."""
    data = pcap.read_bytes()
    endian, frac_ns = _PCAP_MAGICS[data[:4]]
    rec = struct.Struct(endian + "IIII")
    rows, pos, n = [], 24, len(data)
    while pos + 16 <= n:
        sec, frac, incl, _ = rec.unpack_from(data, pos)
        f, pos = pos + 16, pos + 16 + incl
        if pos > n:
            break
        ip = ip_layer(data, f, pos)
        if ip is None or ip.proto != PROTO_UDP or ip.later_fragment or ip.l4 + 12 > pos:
            continue
        u = ip.l4 + 8
        if (data[u] & 0xC0) != 0x80 or not 96 <= (data[u + 1] & 0x7F) <= 127 or ip.l4_len < 60:
            continue
        sport, dport = struct.unpack_from("!HH", data, ip.l4)
        rows.append((sport, dport, struct.unpack_from("!H", data, u + 2)[0], sec * 1_000_000_000 + frac * frac_ns))
    df = pd.DataFrame(rows, columns=["sport", "dport", "rtp_seq", "kernel_ns"])
    if df.empty:
        return df
    top = df.groupby(["sport", "dport"]).size().idxmax()
    df = df[(df["sport"] == top[0]) & (df["dport"] == top[1])]
    return df.drop_duplicates("rtp_seq", keep="first")[["rtp_seq", "kernel_ns"]]


def load(rep: Path) -> pd.DataFrame:
    """The trace joined with rtc_rx.csv's send time (by the handler's recv_ns) and the capture's kernel time
    (by RTP sequence number within the 16-bit wrap: the trace is in arrival order)."""
    tr = pd.read_csv(rep / "webrtc_rx_trace.csv")
    rx = pd.read_csv(rep / "rtc_rx.csv")[["send_ns", "recv_ns"]]
    tr = tr.merge(rx.drop_duplicates("recv_ns"), on="recv_ns", how="left")
    pcap = rep / "client.pcap"
    tr["kernel_ns"] = np.nan
    if pcap.exists():
        k = rtp_arrivals(pcap)
        if not k.empty:
            # sequence numbers repeat every 65536 packets: join each trace row to the capture row of its
            # sequence number nearest in time
            by = k.groupby("rtp_seq")["kernel_ns"].apply(np.array).to_dict()
            ks = []
            for seq, r in zip(tr["rtp_seq"], tr["recv_ns"]):
                c = by.get(seq)
                if c is None:
                    ks.append(np.nan)
                    continue
                c = c[c <= r + 1_000_000]
                ks.append(c[-1] if len(c) else np.nan)
            tr["kernel_ns"] = ks
    return tr


def replay(tr: pd.DataFrame, arrival_ms: np.ndarray, max_burst_ms: float = 100.0) -> np.ndarray:
    """aiortc's estimator fed the trace's packets with ``arrival_ms``: the usage after each packet."""
    from aiortc import rate

    from accessnet.webrtc import cap_bursts
    undo = cap_bursts(max_burst_ms)
    try:
        rbe = rate.RemoteBitrateEstimator()
        orig_add, orig_rate = rate.RateCounter.add, rate.RateCounter.rate
        rbe.incoming_bitrate.add = lambda v, now, _a=orig_add, _r=rbe.incoming_bitrate: _a(_r, v, int(now))
        rbe.incoming_bitrate.rate = lambda now, _f=orig_rate, _r=rbe.incoming_bitrate: _f(_r, int(now))
        out = []
        for a, s, z in zip(arrival_ms, tr["abs_send_time"].to_numpy(), tr["size"].to_numpy()):
            rbe.add(arrival_time_ms=float(a), abs_send_time=int(s), payload_size=int(z), ssrc=1)
            out.append(rbe.detector.hypothesis.name.lower())
        return np.array(out)
    finally:
        undo()


def onsets(usage) -> np.ndarray:
    u = np.asarray(usage) == "overusing"
    return np.flatnonzero(u & ~np.r_[False, u[:-1]])


def _q(x, qs=(50, 99)) -> str:
    x = pd.Series(x).dropna()
    if x.empty:
        return "-"
    return " ".join(f"p{q}={np.percentile(x, q):.2f}" for q in qs) + f" sd={x.std():.2f} max={x.abs().max():.1f}"


def _with_delays(tr: pd.DataFrame) -> pd.DataFrame:
    """The trace with its time axis and the three delays, ms: the handler's one-way delay, the kernel's, and the
    event loop's lag between them."""
    tr["t_s"] = (tr["recv_ns"] - tr["recv_ns"].iloc[0]) / 1e9
    tr["owd_h"] = (tr["recv_ns"] - tr["send_ns"]) / 1e6
    tr["owd_k"] = (tr["kernel_ns"] - tr["send_ns"]) / 1e6
    tr["lag"] = (tr["recv_ns"] - tr["kernel_ns"]) / 1e6
    return tr


def _onset(tr: pd.DataFrame, i: int, rep: Path) -> dict:
    """One over-use onset: the one-way delay's rise over its last 100 ms against the second before (kernel and
    handler), the estimate before and just after, how long until it is back, and the cause that shows."""
    t = tr["recv_ns"].iloc[i]
    w = tr[(tr["recv_ns"] >= t - 1_000_000_000) & (tr.index <= i)]
    last = w[w["recv_ns"] >= t - 100_000_000]  # the last 100 ms against the second's minimum
    rise_k = last["owd_k"].max() - w["owd_k"].min()
    rise_h = last["owd_h"].max() - w["owd_h"].min()
    before = tr["estimate_bps"].iloc[:i].dropna()
    before = before.iloc[-1] if len(before) else np.nan
    after_w = tr[(tr.index >= i) & (tr["recv_ns"] <= t + 500_000_000)]["estimate_bps"]
    after = after_w.min() if after_w.notna().any() else np.nan
    later = tr[(tr.index > i) & (tr["estimate_bps"] >= before)]
    back_s = (later["recv_ns"].iloc[0] - t) / 1e9 if len(later) else np.nan
    cause = ("queue" if rise_k >= QUEUE_MS else "host" if rise_h >= QUEUE_MS else "small") \
        if not np.isnan(rise_k) else ("queue?" if rise_h >= QUEUE_MS else "small?")
    return {"rep": rep.name, "case": rep.parent.name, "t_s": round(tr["t_s"].iloc[i], 3),
            "T_ms": tr["T_ms"].iloc[i], "threshold_ms": tr["threshold_ms"].iloc[i],
            "offset_ms": tr["offset_ms"].iloc[i], "owd_k_ms": tr["owd_k"].iloc[i], "rise_k_ms": rise_k,
            "rise_h_ms": rise_h, "lag_ms": tr["lag"].iloc[i], "est_before": before, "est_after": after,
            "back_s": back_s, "cause": cause}


def _states(tr: pd.DataFrame, on: np.ndarray, res: dict) -> None:
    """Onsets per minute and between onsets, the seconds with over-use, and the share of time (packet-to-packet
    intervals) in each detector state and rate-control state."""
    res["onsets"] = len(on)
    res["between_onsets_s"] = _q(np.diff(tr["t_s"].to_numpy()[on]), (10, 50, 90)) if len(on) > 1 else "-"
    res["onsets_per_min"] = round(len(on) / max(res["seconds"], 1) * 60, 1)
    sec = tr.groupby(tr["t_s"].astype(int))["usage"].apply(lambda u: (u == "overusing").any())
    res["overuse_seconds_pct"] = round(100 * sec.mean(), 1)
    dt = np.diff(tr["recv_ns"].to_numpy(), append=tr["recv_ns"].iloc[-1])
    for col in ("usage", "rate_state"):
        share = pd.Series(dt).groupby(tr[col].to_numpy()).sum() / dt.sum()
        res[f"{col}_time_pct"] = {k_: round(100 * v, 1) for k_, v in share.items()}


def _onsets_summary(ev: pd.DataFrame, res: dict) -> None:
    """The onsets' causes, the threshold and the kernel's delay rise at them, and the estimate around them."""
    if not len(ev):
        return
    res["causes"] = ev["cause"].value_counts().to_dict()
    res["threshold_at_onset_ms"] = _q(ev["threshold_ms"], (10, 50, 90))
    res["kernel_owd_rise_at_onset_ms"] = _q(ev["rise_k_ms"], (10, 50, 90))
    res["est_before_after_kbps"] = \
        f"median {ev['est_before'].median() / 1e3:.0f} -> {ev['est_after'].median() / 1e3:.0f}"
    res["back_within_s"] = _q(ev["back_s"], (50, 90))
    res["never_back_pct"] = round(100 * ev["back_s"].isna().mean(), 1)


def _growth(tr: pd.DataFrame, res: dict) -> None:
    """Growth while increasing: the estimate's slope between consecutive REMBs with no onset between."""
    e = tr[tr["remb_bps"].notna()][["recv_ns", "remb_bps", "near_max"]]
    if len(e) > 2:
        dt = np.diff(e["recv_ns"].to_numpy()) / 1e9
        dr = np.diff(e["remb_bps"].to_numpy())
        up = (dr > 0) & (dt > 0.2)
        res["growth_kbps_per_s"] = _q(dr[up] / dt[up] / 1e3, (50, 90)) if up.any() else "-"
        res["near_max_pct"] = round(100 * tr["near_max"].mean(), 1)
    res["estimate_kbps"] = _q(tr["estimate_bps"] / 1e3, (50, 90))


def _replays(tr: pd.DataFrame, meta: dict, res: dict) -> None:
    """The open-loop replay: aiortc's estimator fed the same packets with each arrival clock; its onsets."""
    variants = {"logged (aiortc's int ms)": tr["arrival_ms"].to_numpy(float),
                "handler ns, exact": tr["recv_ns"].to_numpy(float) / 1e6 + NTP_EPOCH_OFFSET_MS}
    if tr["kernel_ns"].notna().mean() > 0.9:  # a packet the capture missed: its handler time less the median lag
        kn = tr["kernel_ns"].fillna(tr["recv_ns"] - tr["lag"].median() * 1e6)
        k = kn.to_numpy(float) / 1e6 + NTP_EPOCH_OFFSET_MS
        variants["kernel, exact"] = k
        variants["kernel, int ms"] = np.floor(k)
    rp = {}
    for name, arr in variants.items():
        u = replay(tr, arr, float(meta.get("max_burst_ms", 100.0)))
        rp[name] = len(onsets(u))
        if name.startswith("logged"):
            res["replay_matches_log"] = bool((u == tr["usage"].to_numpy()).all())
    res["replay_onsets"] = rp


def analyse(rep: Path, quiet: bool = False) -> tuple[dict, pd.DataFrame]:
    """One replication: the input's noise and the event loop's lag, every over-use onset and its cause, the
    states' time shares, the estimate's growth, and the open-loop replays. Returns the summary and the onsets."""
    tr = _with_delays(load(rep))
    meta = json.loads((rep / "meta.json").read_text()) if (rep / "meta.json").exists() else {}
    d = tr[tr["t_delta_ms"].notna()].copy()
    d["noise"] = d["t_delta_ms"] - d["ts_delta_ms"]
    case = meta.get("case")
    res: dict = {"rep": str(rep), "aqm": case.get("aqm") if isinstance(case, dict) else None,
                 "seconds": round(tr["t_s"].iloc[-1], 1), "packets": len(tr), "deltas": len(d),
                 "pcap_joined": float(tr["kernel_ns"].notna().mean())}
    res["delta_noise_ms"] = _q(d["noise"], (1, 50, 99))
    res["lag_ms"] = _q(tr["lag"], (50, 99, 99.9))
    on = onsets(tr["usage"])
    ev = pd.DataFrame([_onset(tr, i, rep) for i in on])
    _states(tr, on, res)
    _onsets_summary(ev, res)
    _growth(tr, res)
    _replays(tr, meta, res)
    if not quiet:
        print(f"== {rep}")
        for k_, v in res.items():
            print(f"  {k_}: {v}")
    return res, ev


def plot(traces: list[tuple[str, pd.DataFrame, pd.DataFrame]], out: Path) -> None:
    """One panel per replication: OWD at the kernel (ms, left), the estimate (kbit/s, right, log), onsets."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(10, 2.2 * len(traces)))
    FigureCanvasAgg(fig)
    colours = {"queue": "tab:red", "small": "tab:orange", "host": "tab:purple"}
    for k, (name, tr, ev) in enumerate(traces):
        ax = fig.add_subplot(len(traces), 1, k + 1)
        ax.plot(tr["t_s"], tr["owd_k"].fillna(tr["owd_h"]), lw=0.5, color="tab:blue")
        ax.set_ylabel("OWD ms", color="tab:blue")
        ax.set_title(name, fontsize=8, loc="left")
        for _, e in ev.iterrows():
            ax.axvline(e["t_s"], color=colours.get(e["cause"].rstrip("?"), "grey"), lw=0.6, alpha=0.6)
        ax2 = ax.twinx()
        ax2.plot(tr["t_s"], tr["estimate_bps"] / 1e3, color="black", lw=1)
        ax2.set_yscale("log")
        ax2.set_ylabel("estimate kbit/s")
    fig.axes[-2].set_xlabel("s from the first media packet (red: onset on a queue rise >= 5 ms, orange: < 5 ms)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.aiortc_overuse", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reps", nargs="+", type=Path, help="replication directories (with webrtc_rx_trace.csv)")
    ap.add_argument("--csv", type=Path, help="write every onset here")
    ap.add_argument("--plot", type=Path, help="draw the replications' delay, estimate and onsets here (png)")
    a = ap.parse_args(argv)
    evs, traces = [], []
    for rep in a.reps:
        if not (rep / "webrtc_rx_trace.csv").exists():
            print(f"{rep}: no webrtc_rx_trace.csv", file=sys.stderr)
            continue
        _, ev = analyse(rep)
        evs.append(ev)
        if a.plot:
            tr = load(rep)
            tr["t_s"] = (tr["recv_ns"] - tr["recv_ns"].iloc[0]) / 1e9
            tr["owd_k"] = (tr["kernel_ns"] - tr["send_ns"]) / 1e6
            tr["owd_h"] = (tr["recv_ns"] - tr["send_ns"]) / 1e6
            traces.append((f"{rep.parent.parent.name}/{rep.parent.name}/{rep.name}", tr, ev))
    if a.csv and evs:
        pd.concat(evs).to_csv(a.csv, index=False)
    if a.plot and traces:
        plot(traces, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
