"""What the main job prints when it ends: the summary table (per AQM x IW) and the report."""

from __future__ import annotations

import logging
from pathlib import Path


def print_summary(rundir: Path, report: bool = True) -> None:
    from experiments.report import summary_table
    print(summary_table(rundir))
    if not report:
        return
    try:
        from experiments.report import write_report
        path = write_report([rundir], rundir / "report")
        print(f"report: {path}")
    except Exception as e:  # noqa: BLE001 - the raw data is kept; the report can be made again later
        logging.getLogger("iwlab.run").error("the report could not be made (%s); the data is kept: "
                                             "make report RUN=%s", e, rundir)
