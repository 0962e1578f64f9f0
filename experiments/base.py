"""What every reader of a replication's raw data (docs/data-formats.md) shares: the time units of its
timestamps and the error that names a file that cannot give metrics. The lowest module of experiments: it
imports none of the others."""

from __future__ import annotations

NS = 1_000_000_000
MS = 1_000_000


class MetricsError(ValueError):
    """Raw data that cannot give metrics; the message names the file."""
