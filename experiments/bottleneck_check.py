"""Is the switch's modelled queue the only bottleneck? Compare, per audio packet, the delay it
really got beyond the base delay with the sojourn the switch predicted for it (telemetry).

Audio records are matched to audio packets by order (one sender, FIFO path,
nothing lost before the switch); packets the switch dropped are skipped.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .metrics import MetricsError, base_delay_ns, owd_ns, read_audio, read_meta
from .telemetry_reader import read_telemetry

AUDIO_PORT = 5004


def sojourn_errors_ns(rep: Path) -> np.ndarray:
    """(OWD - base delay) - predicted sojourn, for every audio packet that passed the switch."""
    rep = Path(rep)
    meta = read_meta(rep)
    audio = read_audio(rep)
    tel, _ = read_telemetry(rep / "telemetry.pcap")
    a = tel[(tel["proto"] == 17) & (tel["dport"] == AUDIO_PORT)].sort_values("seq")
    n = min(len(a), len(audio.df))
    if n == 0:
        raise MetricsError(f"{rep}: no audio telemetry records")
    a = a.iloc[:n]
    d = owd_ns(audio)[:n]
    base = base_delay_ns(audio, meta.get("tcp_start_ns"))
    passed = (a["decision"].to_numpy() != 1) & ~np.isnan(d)
    return (d - base)[passed] - a["sojourn_ns"].to_numpy()[passed]


def summary(rep: Path) -> dict:
    e = np.abs(sojourn_errors_ns(rep))
    return {"packets": int(e.size), "median_abs_err_ms": float(np.median(e)) / 1e6,
            "p99_abs_err_ms": float(np.percentile(e, 99)) / 1e6, "max_abs_err_ms": float(e.max()) / 1e6}


if __name__ == "__main__":
    import json
    import sys
    for p in sys.argv[1:]:
        print(p, json.dumps(summary(Path(p))))
