"""experiments/bmv2_work.py: the exact per-packet counts `make bench` prints beside its timings."""

from __future__ import annotations

import pytest

from accessnet.bmv2_veth import ROOT, build_p4, missing_toolchain
from experiments.bench import bench_frames, work
from experiments.bmv2_work import metadata_fields, missing, parse_stat
from refmodel.params import pipeline_params

STAT = """# started on Thu Nov 26 05:02:11 2026

4000,,iwlab_bmv2:tables,2004311,100.00,,
0,,iwlab_bmv2:conditions,2004311,100.00,,
8000,,iwlab_bmv2:primitives,2004311,100.00,,
12000,,iwlab_bmv2:expressions,2004311,100.00,,
"""


def test_perf_stat_csv_is_read_per_event():
    assert parse_stat(STAT) == {"tables": 4000, "conditions": 0, "primitives": 8000, "expressions": 12000}


def test_an_event_perf_could_not_count_is_an_error_not_a_zero():
    with pytest.raises(RuntimeError, match="could not count iwlab_bmv2:tables"):
        parse_stat("<not counted>,,iwlab_bmv2:tables,0,100.00,,\n")


REASON = missing_toolchain() or missing()


@pytest.mark.bmv2
@pytest.mark.skipif(REASON is not None, reason=REASON or "")
def test_plain_forwarding_is_one_table_and_the_bottleneck_does_more():
    build_p4()
    frames = bench_frames(64)
    plain = work(frames, None, n=100)
    assert (plain.tables, plain.conditions, plain.primitives) == (1.0, 0.0, 2.0)   # forward: set port, and no more
    fifo = work(frames, pipeline_params(1e9, "fifo", limit_pkts=1000), telemetry=False, n=100)
    with_records = work(frames, pipeline_params(1e9, "fifo", limit_pkts=1000), telemetry=True, n=100)
    assert fifo.tables > 10 * plain.tables
    assert with_records.tables > fifo.tables and with_records.primitives > fifo.primitives   # the clone's egress
    assert metadata_fields(ROOT / "build" / "bottleneck.json") > metadata_fields(ROOT / "build" / "plain_forward.json")
