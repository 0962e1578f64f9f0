"""``python -m experiments.metrics_cli PATH [PATH ...]``: the seeds' metrics as JSON.

PATH is one replication directory (``.../rep0``) or a run directory holding
``<case>/rep<k>`` directories; failed or unreadable replications are listed
with the reason instead of numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .metrics import JITTER_BUFFERS_MS, MetricsError, summarize_rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.metrics_cli", description=__doc__)
    ap.add_argument("paths", nargs="+", type=Path)
    ap.add_argument("--jitter-buffers", default=",".join(map(str, JITTER_BUFFERS_MS)), help="ms, comma separated")
    ap.add_argument("--base-window", type=float, default=2.0, help="seconds before the first TCP start")
    a = ap.parse_args(argv)
    jbs = [float(x) for x in a.jitter_buffers.split(",")]
    out = {"replications": [], "failed": []}
    for path in a.paths:
        reps = [path] if (path / "meta.json").exists() else sorted(p for p in path.glob("*/rep[0-9]*")
                                                                   if not p.name.endswith(".tmp"))
        if not reps:
            out["failed"].append({"path": str(path), "error": "no replication directories found"})
        for rep in reps:
            try:
                out["replications"].append(summarize_rep(rep, jbs, a.base_window))
            except MetricsError as e:
                out["failed"].append({"path": str(rep), "error": str(e)})
    json.dump(out, sys.stdout, indent=1)
    print()
    return 1 if out["failed"] and not out["replications"] else 0


if __name__ == "__main__":
    sys.exit(main())
