"""Figures of a run, drawn from already-computed metrics (Flent style: data files in, pictures out).

Every function takes plain data (arrays, ``experiments.metrics`` dicts and
DataFrames) keyed by a case label, draws one figure and saves it as PNG and
SVG under ``out_dir`` (``save``); it returns the paths written. Nothing here
reads raw run files: ``experiments.report`` computes the data, so each figure
can be unit-tested on synthetic numbers and redrawn without re-running.

Figures are rendered with matplotlib's Agg canvas directly (``Figure`` +
``FigureCanvasAgg``), never through pyplot: no display is needed and no
global backend state is changed for whoever imports this module.

Case styles: one colour per AQM, one line style per initial window
(``case_style``), so the same case looks the same in every figure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from refmodel.aqms import COLOURS
from refmodel.constants import Decision, Reason

from .bottleneck_check import AUDIO_PORT
from .metrics import MS, NS, cdf

FORMATS = ("png", "svg")
DPI = 120
AQM_COLOURS = COLOURS  # each AQM's module (refmodel/aqms/) gives its colour
IW_LINESTYLES = {3: "--", 10: "-"}
# Loss period levels 1..5 (BRIEF "Loss period level"): light to dark, worst = 5; level 0 pale.
LEVEL_COLOURS = {0: "#e8f0e8", 1: "#fee391", 2: "#fdae61", 3: "#f46d43", 4: "#d73027", 5: "#67001f"}
LEVEL_LABELS = {0: "0 (no loss)", 1: "1 (20 ms)", 2: "2 (40-60 ms)", 3: "3 (80-100 ms)", 4: "4 (120-180 ms)",
                5: "5 (200+ ms)"}
REASON_MARKERS = "xv^sDo+*<>Ph"


def case_style(aqm: str | None, iw: int | None) -> dict:
    """Line style of a case: colour from its AQM, dashes from its IW (same case, same look everywhere)."""
    return {"color": AQM_COLOURS.get(str(aqm), None), "linestyle": IW_LINESTYLES.get(iw, ":")}


def _style(styles: Mapping[str, dict] | None, label: str) -> dict:
    return dict((styles or {}).get(label, {}))


def save(fig: Figure, out_dir: Path, name: str) -> list[Path]:
    """Write ``fig`` as out_dir/name.png and .svg (both: PNG to look at, SVG to put in a paper)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    paths = []
    for ext in FORMATS:
        p = out_dir / f"{name}.{ext}"
        fig.savefig(p, dpi=DPI, bbox_inches="tight", metadata={"Date": None} if ext == "svg" else None)
        paths.append(p)
    return paths


def _new(nrows: int = 1, ncols: int = 1, w: float = 7.0, h: float = 4.2, **kw) -> tuple[Figure, np.ndarray]:
    fig = Figure(figsize=(w, h), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False, **kw)
    return fig, axes


def _grid(n: int, ncols: int | None) -> tuple[int, int]:
    ncols = max(1, min(n, ncols or min(n, 3)))
    return math.ceil(n / ncols), ncols


# ----------------------------------------------------------------------------- audio


def owd_cdf(owd_ns_by_case: Mapping[str, np.ndarray], out_dir: Path, styles: Mapping[str, dict] | None = None,
            name: str = "owd_cdf") -> list[Path]:
    """Audio one-way delay CDF per case (BRIEF "One-way delay"; seeds' 003 Fig. 4): values in ns, all
    replications pooled, packets that never arrived left out (they are in the loss figures)."""
    fig, ax = _new()
    ax = ax[0, 0]
    for label, v in owd_ns_by_case.items():
        x, f = cdf(np.asarray(v, dtype=float))
        if x.size:
            ax.step(x / MS, f, where="post", label=f"{label} ({x.size} pkts)", **_style(styles, label))
    ax.set(xlabel="one-way delay (ms)", ylabel="CDF", ylim=(0, 1.01), title="Audio one-way delay")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return save(fig, out_dir, name)


def metric_vs_jitter(ci_by_case: Mapping[str, Mapping[float, dict]], out_dir: Path, name: str, ylabel: str,
                     title: str, styles: Mapping[str, dict] | None = None, percent: bool = True) -> list[Path]:
    """A per-replication metric against the jitter buffer size, one line per case: mean over replications
    with 95 % CI error bars; ``ci_by_case[label][jb_ms]`` is a ``metrics.mean_ci95`` dict."""
    fig, ax = _new()
    ax = ax[0, 0]
    scale = 100.0 if percent else 1.0
    for label, by_jb in ci_by_case.items():
        jbs = sorted(j for j, c in by_jb.items() if c["mean"] is not None)
        if not jbs:
            continue
        mean = np.array([by_jb[j]["mean"] for j in jbs]) * scale
        err = np.array([by_jb[j]["ci95"] or 0.0 for j in jbs]) * scale
        ax.errorbar(jbs, mean, yerr=err, capsize=3, marker="o", ms=3, label=label, **_style(styles, label))
    ax.set(xlabel="jitter buffer (ms)", ylabel=ylabel + (" (%)" if percent else ""), title=title)
    if percent:
        ax.set_ylim(-2, 102)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return save(fig, out_dir, name)


def loss_vs_jitter(ci_by_case: Mapping[str, Mapping[float, dict]], out_dir: Path,
                   styles: Mapping[str, dict] | None = None) -> list[Path]:
    """Loss rate after the jitter filter vs jitter buffer (BRIEF; seeds' 003 Fig. 5)."""
    return metric_vs_jitter(ci_by_case, out_dir, "loss_vs_jitter", "loss rate after the jitter filter",
                            "Audio loss rate (pure + delay-based), mean and 95 % CI", styles)


def good_quality_vs_jitter(ci_by_case: Mapping[str, Mapping[float, dict]], out_dir: Path,
                           styles: Mapping[str, dict] | None = None) -> list[Path]:
    """Share of audio packets at loss period level 0-1 ("good quality", BRIEF) vs jitter buffer."""
    return metric_vs_jitter(ci_by_case, out_dir, "good_quality_vs_jitter", "good quality (level 0-1)",
                            "Audio packets of good quality, mean and 95 % CI", styles)


def levels_over_time(lot_by_case: Mapping[str, pd.DataFrame], out_dir: Path, jitter_buffer_ms: float,
                     ncols: int | None = None, name: str | None = None) -> list[Path]:
    """Loss period levels over time since TCP start, one panel per case (seeds' 003 Fig. 6): per time bin,
    the shares of levels 5..1 stacked from the bottom (level 0 the rest up to 1), and the number of samples
    normalised by its maximum (it declines as flows complete: BRIEF "Overlap filter").
    ``lot_by_case[label]`` is a ``metrics.levels_over_time`` DataFrame (t_s, samples, level0..level5)."""
    n = max(len(lot_by_case), 1)
    nrows, nc = _grid(n, ncols)
    fig, axes = _new(nrows, nc, w=3.6 * nc + 1.2, h=2.6 * nrows + 0.6, sharex=True, sharey=True)
    flat = axes.ravel()
    for ax, (label, lot) in zip(flat, lot_by_case.items()):
        if lot.empty:
            ax.set_title(f"{label}: no samples", fontsize="small")
            continue
        bin_s = float(np.diff(lot["t_s"]).min()) if len(lot) > 1 else 0.02
        t = np.r_[lot["t_s"].to_numpy(), lot["t_s"].iloc[-1] + bin_s]
        layers = [np.r_[lot[f"level{k}"].to_numpy(), lot[f"level{k}"].iloc[-1]] for k in (5, 4, 3, 2, 1, 0)]
        ax.stackplot(t, *layers, step="post", colors=[LEVEL_COLOURS[k] for k in (5, 4, 3, 2, 1, 0)],
                     labels=[LEVEL_LABELS[k] for k in (5, 4, 3, 2, 1, 0)])
        samples = lot["samples"].to_numpy(dtype=float)
        ax.step(t, np.r_[samples, samples[-1]] / samples.max(), where="post", color="k", lw=0.8, ls="--",
                label="samples (normalised)")
        ax.set_title(label, fontsize="small")
        ax.set_ylim(0, 1.05)
        ax.set_xlim(0, t[-1])
    for ax in flat[len(lot_by_case):]:
        ax.set_visible(False)
    for ax in axes[-1, :]:
        ax.set_xlabel("time since TCP start (s)")
    for ax in axes[:, 0]:
        ax.set_ylabel("share of packets")
    handles, labels = flat[0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right center", fontsize="small", title="loss period level")
    fig.suptitle(f"Audio loss period level over time, {jitter_buffer_ms:g} ms jitter buffer")
    return save(fig, out_dir, name or f"levels_over_time_{jitter_buffer_ms:g}ms")


# ----------------------------------------------------------------------------- TCP


def completion_cdf(times_s_by_case: Mapping[str, Sequence[float]], out_dir: Path,
                   incomplete_by_case: Mapping[str, int] | None = None, styles: Mapping[str, dict] | None = None,
                   name: str = "burst_completion_cdf") -> list[Path]:
    """Web burst completion time CDF per case (BRIEF "TCP": per-burst completion time), all replications
    pooled; bursts that did not complete have no time and are counted in the legend, not hidden."""
    fig, ax = _new()
    ax = ax[0, 0]
    for label, v in times_s_by_case.items():
        x, f = cdf(np.asarray(list(v), dtype=float))
        miss = (incomplete_by_case or {}).get(label, 0)
        extra = f", {miss} incomplete" if miss else ""
        if x.size:
            ax.step(np.r_[x[0], x], np.r_[0, f], where="post", label=f"{label} ({x.size} bursts{extra})",
                    **_style(styles, label))
    ax.set(xlabel="burst completion time (s)", ylabel="CDF", ylim=(0, 1.01), title="Web burst completion time")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    return save(fig, out_dir, name)


# ----------------------------------------------------------------------------- one replication


def _reason_name(r: int) -> str:
    """': iwa_surplus' etc. for a marker label; nothing for reason 0 (an ECN mark names no reason)."""
    if r == Reason.NONE:
        return ""
    try:
        return ": " + Reason(r).name.lower()
    except ValueError:
        return f": reason {r}"


def _queue_panels(ax_s: Axes, ax_b: Axes, tel: pd.DataFrame, t: np.ndarray, audio_port: int) -> None:
    """The predicted sojourn and the backlog of every admitted packet (the audio's as dots over them): the
    queue the AQMs decide on."""
    passed = tel["decision"].isin([Decision.PASS, Decision.MARK]).to_numpy()  # marked packets are admitted
    audio = ((tel["proto"] == 17) & (tel["dport"] == audio_port)).to_numpy()
    for ax, col, what in ((ax_s, "sojourn_ns", "predicted sojourn"), (ax_b, "backlog_ns", "backlog at arrival")):
        y = tel[col].to_numpy(dtype=float) / MS
        ax.plot(t[passed], y[passed], lw=0.6, color="tab:blue", label=f"{what}, all admitted packets")
        ax.plot(t[passed & audio], y[passed & audio], ".", ms=2.5, color="tab:green", label="audio packets")
        ax.set_ylabel(f"{what} (ms)", fontsize="small")
        ax.grid(alpha=0.3)


def _aqm_actions(ax_s: Axes, tel: pd.DataFrame, t0_ns: int) -> None:
    """The AQM's drops and ECN marks over the sojourn, a marker per (decision, reason) with its count, so that
    one can see which rule acted when."""
    acted = tel[tel["decision"].isin([Decision.DROP, Decision.MARK])]
    for i, ((dec, reason), grp) in enumerate(sorted(acted.groupby(["decision", "reason"]), key=lambda kv: kv[0])):
        kind = "drop" if dec == Decision.DROP else "ECN mark"
        tt = (grp["ts_ns"].to_numpy(dtype=np.int64) - int(t0_ns)) / NS
        ax_s.plot(tt, grp["sojourn_ns"].to_numpy(dtype=float) / MS, REASON_MARKERS[i % len(REASON_MARKERS)],
                  ms=5, mfc="none", color="tab:red" if dec == Decision.DROP else "tab:purple",
                  label=f"{kind}{_reason_name(int(reason))} ({len(grp)})")


def _tuning_panels(ax_t: Axes, ax_n: Axes, tuning: pd.DataFrame, t0_ns: int, ends_s: list[float]) -> None:
    """The controller's targets as step lines, and per period the flows that started and the ACK windows IWA
    rewrote. A setting holds until the next row: the last one is drawn on to the latest of its own time and
    ``ends_s`` (the end of the data, of the x axis)."""
    tt = (tuning["t_ns"].to_numpy(dtype=np.int64) - int(t0_ns)) / NS
    end = max([tt.max(), *ends_s])
    tt = np.r_[tt, end]

    def setting(col: str, color: str, label: str) -> None:  # in force from its row to the next
        y = tuning[col].to_numpy(dtype=float) / MS
        ax_t.step(tt, np.r_[y, y[-1]], where="post", color=color, label=label)

    def count(col: str, color: str, label: str) -> None:  # counted over the period that ends at its row
        ax_n.step(tt[:-1], tuning[col].to_numpy(dtype=float), where="pre", color=color, label=label)

    setting("target_ns", "tab:olive", "IWA target (starting flows)")
    if "codel_target_ns" in tuning:
        setting("codel_target_ns", "tab:gray", "CoDel target (established flows)")
    ax_t.set_ylabel("controller target (ms)", fontsize="small")
    ax_t.set_ylim(bottom=0)
    count("new_flows", "tab:brown", "flows started (SYN-ACKs)")
    if "windows" in tuning:
        count("windows", "tab:cyan", "ACK windows rewritten by IWA")
    ax_n.set_ylabel("per period", fontsize="small")
    for ax in (ax_t, ax_n):
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small", loc="upper right")


def switch_timeline(telemetry: pd.DataFrame, t0_ns: int, out_dir: Path, name: str, title: str,
                    tuning: pd.DataFrame | None = None, xlim_s: tuple[float, float] | None = None,
                    audio_port: int = AUDIO_PORT) -> list[Path]:
    """One replication seen from the switch: predicted sojourn and backlog of every downstream packet
    (telemetry ``ts_ns``/``sojourn_ns``/``backlog_ns`` on the shared clock, time since ``t0_ns``), the AQM's
    drops and ECN marks as markers per reason, and, when ``tuning`` (tuning.csv rows: t_ns, target_ns,
    new_flows; codel_target_ns and windows when present) is given, two more panels: the controller's
    targets (IWA's, and CoDel's for established flows) as step lines, and per period the flows that started
    (SYN-ACKs) and the ACKs whose window IWA rewrote. Upstream records (decision BYPASS) are never drawn
    as queued packets."""
    tel = telemetry[telemetry["decision"] != Decision.BYPASS]
    panels = 2 + (2 if tuning is not None and not tuning.empty else 0)
    fig, axes = _new(panels, 1, w=9, h=2.1 * panels + 0.6, sharex=True)
    ax_s, ax_b = axes[0, 0], axes[1, 0]
    t = (tel["ts_ns"].to_numpy(dtype=np.int64) - int(t0_ns)) / NS
    _queue_panels(ax_s, ax_b, tel, t, audio_port)
    _aqm_actions(ax_s, tel, t0_ns)
    ax_s.legend(fontsize="x-small", loc="upper right")
    ax_b.legend(fontsize="x-small", loc="upper right")
    if panels == 4:
        ends_s = [*([t.max()] if t.size else []), *(xlim_s[1:] if xlim_s else [])]  # the data's, the x axis'
        _tuning_panels(axes[2, 0], axes[3, 0], tuning, t0_ns, ends_s)
    axes[-1, 0].set_xlabel("time since TCP start (s)")
    if xlim_s is not None:
        axes[-1, 0].set_xlim(*xlim_s)
    fig.suptitle(title)
    return save(fig, out_dir, name)
