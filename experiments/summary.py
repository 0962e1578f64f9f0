"""What the main job and a sweep print when they end: the summary table (per AQM x IW) and the report.

``python -m accessnet.run`` and ``python -m accessnet.sweep`` hand ``print_summary`` to their ``main`` from
their command line (the lab's library, accessnet, never imports the analysis)."""

from __future__ import annotations

import logging
from pathlib import Path

from .report import summary_table, write_report


def print_summary(rundir: Path, report: bool = True) -> None:
    print(summary_table(rundir))
    if not report:
        return
    try:
        path = write_report([rundir], rundir / "report")
        print(f"report: {path}")
    except Exception as e:  # noqa: BLE001 - the raw data is kept; the report can be made again later
        logging.getLogger("iwlab.run").error("the report could not be made (%s); the data is kept: "
                                             "make report RUN=%s", e, rundir)
