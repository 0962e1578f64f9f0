"""``python -m experiments.metrics_cli RUN_DIR [RUN_DIR ...] [--jitter-buffers 20,40,...] [--base-window 2]``

Prints the BRIEF metrics as JSON. One replication directory (holding
meta.json): its ``summarize_rep``. Otherwise (a run directory holding
``<case>/rep<k>``, a case directory holding ``rep<k>``, or several paths): the
sweep summary of ``summarize_sweep``, per-case means with 95 % confidence
intervals and the list of failed runs. Exit status 1 if nothing could be
summarised (or the single replication failed), else 0.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from .metrics import JITTER_BUFFERS_MS, MetricsError, find_reps, summarize_rep, summarize_sweep


def _clean(x):
    """JSON without NaN/Infinity (not valid JSON): they become null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def _jitter_buffers(text: str) -> list[float]:
    try:
        jbs = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of ms: {text!r}") from None
    if not jbs or any(j < 0 for j in jbs):
        raise argparse.ArgumentTypeError(f"need non-negative jitter buffers in ms: {text!r}")
    return jbs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.metrics_cli", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", type=Path, metavar="RUN_DIR")
    ap.add_argument("--jitter-buffers", type=_jitter_buffers, default=list(JITTER_BUFFERS_MS),
                    help="jitter buffer sizes in ms, comma separated (default 20,40,...,200)")
    ap.add_argument("--base-window", type=float, default=2.0,
                    help="base delay window in seconds before the first TCP start (default 2)")
    a = ap.parse_args(argv)
    if len(a.paths) == 1 and (a.paths[0] / "meta.json").exists():
        try:
            out = summarize_rep(a.paths[0], a.jitter_buffers, a.base_window)
            code = 0
        except MetricsError as e:
            out, code = {"failed": [{"path": str(a.paths[0]), "error": str(e)}]}, 1
    else:
        reps, missing = [], []
        for p in a.paths:
            found = find_reps(p)
            reps += found
            if not found:
                missing.append({"path": str(p), "case": None, "error": "no replication directories found"})
        out = summarize_sweep(reps, a.jitter_buffers, a.base_window)
        out["failed"] = missing + out["failed"]
        code = 0 if out["cases"] else 1
    json.dump(_clean(out), sys.stdout, indent=1, allow_nan=False)
    print()
    return code


if __name__ == "__main__":
    sys.exit(main())
