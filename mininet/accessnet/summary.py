"""The table printed at the end of the main job (per AQM x IW)."""

from __future__ import annotations

from pathlib import Path


def print_summary(rundir: Path) -> None:
    from experiments.report import summary_table
    print(summary_table(rundir))
