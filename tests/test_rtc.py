"""The rtc+web workload's pieces without a network: the rate controller's reactions and the TFS metric
on a hand-made replication."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from accessnet.rtc import MIN_RATE, next_rate
from experiments.metrics import rtc_metrics

NS = 1_000_000_000


def test_rate_controller_reacts_to_overuse_underuse_and_loss():
    assert next_rate(1e6, 1e6, 0.0, 10_000_000, 2.5e6) == pytest.approx(1.05e6)  # under-use: +5 %
    assert next_rate(1e6, 0.9e6, 0.0, 60_000_000, 2.5e6) == pytest.approx(0.85 * 0.9e6)  # over-use: 0.85 x recv
    assert next_rate(1e6, 0.9e6, 0.2, 0, 2.5e6) == pytest.approx(0.85 * 0.9e6)  # heavy loss
    assert next_rate(1e6, 1e6, 0.05, 30_000_000, 2.5e6) == 1e6  # in between: hold
    assert next_rate(2.45e6, 2.45e6, 0.0, 0, 2.5e6) == 2.5e6  # capped
    assert next_rate(70e3, 10e3, 0.5, 0, 2.5e6) == MIN_RATE  # floor


def test_tfs_on_a_hand_made_run(tmp_path):
    # real-time flow: 11 packets of 1000 B over 1 s, 10 received
    pd.DataFrame({"seq": range(11), "send_ns": [k * NS // 10 for k in range(11)], "size": 1000,
                  "rate_bps": 80_000}).to_csv(tmp_path / "rtc_tx.csv", index=False)
    pd.DataFrame({"seq": range(10), "send_ns": [k * NS // 10 for k in range(10)],
                  "recv_ns": [k * NS // 10 + 50_000_000 for k in range(10)], "size": 1000}).to_csv(
        tmp_path / "rtc_rx.csv", index=False)
    # two downloads: 100 kB in 0.5 s (1.6 Mbit/s) and 50 kB in 1 s (0.4 Mbit/s)
    flows = pd.DataFrame({"flow": [0, 1], "burst": [0, 1], "start_ns": [0, 0], "end_ns": [NS // 2, NS],
                          "bytes": [100_000, 50_000], "retrans": [0, 0], "rtos": [0, 0], "completed": [1, 1]})
    m = rtc_metrics(tmp_path, flows, n_flows=3)
    assert m["sent"] == 11 and m["received"] == 10 and m["loss_rate"] == pytest.approx(1 / 11)
    assert m["goodput_bps"] == pytest.approx(10_000 * 8)  # 10 kB over the 1 s span
    assert m["owd_median_s"] == pytest.approx(0.05)
    tcp = (1.6e6 + 0.4e6) / 2
    total = (10_000 + 150_000) * 8
    assert m["tcp_throughput_bps"] == pytest.approx(tcp)
    assert m["tfs"] == pytest.approx(tcp / (total / 3))
    json.dumps(m)
