"""The seeds' metrics against hand-computed answers on synthetic traces."""

import json

import dpkt
import numpy as np
import pytest

from experiments.metrics import (Audio, MetricsError, active_mask, base_delay_ns, ipdv_ns, ipdv_table, jain,
                                 lost_mask, loss_levels, summarize_rep, tcp_metrics)
from experiments.telemetry_reader import read_telemetry
from refmodel.telemetry import Record, encode_frame

MS = 1_000_000
import pandas as pd  # noqa: E402


def audio(owd_ms, start_ns=0):
    n = len(owd_ms)
    send = np.arange(n) * 20 * MS + start_ns
    recv = [np.nan if o is None else s + o * MS for s, o in zip(send, owd_ms)]
    return Audio(pd.DataFrame({"seq": np.arange(n), "send_ns": send, "recv_ns": recv}))


@pytest.mark.parametrize("run,level", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (9, 4), (10, 5), (11, 5)])
def test_loss_run_lengths_map_to_levels(run, level):
    lost = np.array([False] * 3 + [True] * run + [False] * 3)
    lv = loss_levels(lost)
    assert (lv[3:3 + run] == level).all() and (lv[:3] == 0).all() and (lv[3 + run:] == 0).all()


def test_ipdv_signs_and_table():
    a = audio([10, 30, 20, None, 50, 40])
    v = ipdv_ns(a) / MS
    assert v.tolist() == [20, -10, -10]  # pairs (0,1) (1,2) (4,5); pairs around the loss are skipped
    t = ipdv_table(ipdv_ns(a))
    assert t["min"] == -0.010 and t["max"] == 0.020 and t["p50"] == -0.010


def test_base_delay_uses_the_window_before_tcp_start():
    a = audio([5] + [30] * 99 + [90] * 50)  # packet 0 at t=0 is outside a 2 s window before t = 2.0 s
    assert base_delay_ns(a, tcp_start_ns=2_000 * MS, window_s=1.0) == 30 * MS
    assert base_delay_ns(a, tcp_start_ns=2_000 * MS, window_s=2.0) == 5 * MS


def test_delay_based_loss_at_the_exact_threshold():
    a = audio([30, 70, 70.000001, None])
    lost = lost_mask(a, base_ns=30 * MS, jitter_buffer_ms=40)
    assert lost.tolist() == [False, False, True, True]


def test_overlap_filter():
    send = np.array([0, 10, 20, 30, 40, 50]) * MS
    flows = pd.DataFrame({"start_ns": [10 * MS, 35 * MS], "end_ns": [20 * MS, ""]})
    assert active_mask(send, flows, run_end_ns=45 * MS).tolist() == [False, True, True, False, True, False]


def test_completion_goodput_jain_from_flow_logs():
    f = pd.DataFrame({"flow": [0, 1, 2], "burst": [0, 0, 1], "start_ns": [0, 0, 1000 * MS],
                      "end_ns": [1000 * MS, 2000 * MS, 1500 * MS], "bytes": [125000, 125000, 62500],
                      "retrans": [1, 0, 2], "rtos": [0, 1, 0], "completed": [1, 1, 1]})
    m = tcp_metrics(f)
    assert m["flow_completion_s"] == [1.0, 2.0, 0.5]
    assert m["bursts"][0]["completion_s"] == 2.0 and m["bursts"][1]["completion_s"] == 0.5
    assert m["bursts"][0]["jain"] == pytest.approx((1e6 + 0.5e6) ** 2 / (2 * (1e12 + 0.25e12)))
    assert m["rtos"] == 1 and m["retrans"] == 3
    assert jain(np.array([1.0, 1.0, 1.0])) == 1.0


def write_rep(tmp_path, status="ok"):
    rep = tmp_path / "rep0"
    rep.mkdir()
    (rep / "meta.json").write_text(json.dumps({"status": status, "error": "switch died", "tcp_start_ns": None,
                                               "aqm": "fifo", "iw": 10, "case": "c", "rep": 0}))
    n = 200
    (rep / "audio_tx.csv").write_text("seq,send_ns\n" + "".join(f"{i},{i * 20 * MS}\n" for i in range(n)))
    (rep / "audio_rx.csv").write_text("seq,send_ns,recv_ns\n" + "".join(
        f"{i},{i * 20 * MS},{i * 20 * MS + (81 if i % 50 else 200) * MS}\n" for i in range(n)))
    return rep


def test_summary_of_a_rep(tmp_path):
    s = summarize_rep(write_rep(tmp_path))
    assert s["base_delay_s"] == pytest.approx(0.081)
    assert s["jitter_buffers_ms"]["40"]["loss_rate"] == pytest.approx(4 / 200)
    assert s["jitter_buffers_ms"]["40"]["levels"][1] == pytest.approx(4 / 200)


def test_failed_run_and_truncated_file_name_the_file(tmp_path):
    with pytest.raises(MetricsError, match="meta.json: the run failed: switch died"):
        summarize_rep(write_rep(tmp_path, status="failed"))
    rep = tmp_path / "rep0"
    (rep / "meta.json").write_text(json.dumps({"status": "ok", "tcp_start_ns": None}))
    (rep / "audio_rx.csv").write_text("seq,send_ns,recv_ns\n1,2")
    with pytest.raises(MetricsError, match="audio_rx.csv"):
        summarize_rep(rep)
    (rep / "audio_rx.csv").write_text("")
    with pytest.raises(MetricsError, match="audio_rx.csv"):
        summarize_rep(rep)


def test_telemetry_pcap_roundtrip_and_truncation(tmp_path):
    recs = [Record(4, 0, 0, 1, 0, 94, i, 7, i * 1000, 5, 6, 1, 2, 3, 4, 17, 8, 9) for i in range(5)]
    path = tmp_path / "t.pcap"
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for i, r in enumerate(recs):
            w.writepkt(encode_frame(r), ts=i)
        w.writepkt(b"\xff" * 12 + b"\x08\x00" + b"\x00" * 40, ts=9)
    df, skipped = read_telemetry(path)
    assert skipped == 1 and df["seq"].tolist() == list(range(5)) and (df["sojourn_ns"] == 5).all()
    data = path.read_bytes()
    path.write_bytes(data[:-30])
    with pytest.raises(MetricsError, match="t.pcap"):
        read_telemetry(path)
