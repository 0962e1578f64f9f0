"""BRIEF metrics against hand-computed answers on synthetic traces (experiments.metrics, telemetry_reader)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
import pytest

from experiments import metrics_cli
from experiments.metrics import (Audio, MetricsError, active_mask, base_delay_ns, cdf, ipdv_ns, ipdv_table, jain,
                                 levels_over_time, loss_levels, lost_mask, mean_ci95, read_flows, summarize_rep,
                                 summarize_sweep, t_quantile_975, tcp_metrics, tfs, time_since_tcp_start_s)
from experiments.telemetry_reader import COLUMNS, read_telemetry, read_telemetry_scapy
from refmodel.telemetry import Record, encode_frame

MS = 1_000_000
T0 = 1_700_000_000_123_456_789  # realistic CLOCK_REALTIME ns: float64 cannot hold these exactly


def audio(owd_ms, start_ns=0):
    n = len(owd_ms)
    send = np.arange(n) * 20 * MS + start_ns
    recv = [np.nan if o is None else s + o * MS for s, o in zip(send, owd_ms)]
    return Audio(pd.DataFrame({"seq": np.arange(n), "send_ns": send, "recv_ns": recv}))


def write_rep(rep: Path, owd_ns, flows=(), tcp_start_ns=None, status="ok", case="caseA"):
    """Audio every 20 ms from T0 with the given OWDs (None = never arrived); flows as (start, end|None, bytes)."""
    rep.mkdir(parents=True)
    (rep / "meta.json").write_text(json.dumps({"status": status, "error": "switch died", "case": case, "rep": 0,
                                               "aqm": "fifo", "iw": 10, "n_flows": len(flows), "switch": "model",
                                               "audio_start_ns": T0, "tcp_start_ns": tcp_start_ns}))
    send = [T0 + i * 20 * MS for i in range(len(owd_ns))]
    (rep / "audio_tx.csv").write_text("seq,send_ns\n" + "".join(f"{i},{s}\n" for i, s in enumerate(send)))
    rx = [f"{i},{s},{s + d}\n" for i, (s, d) in enumerate(zip(send, owd_ns)) if d is not None]
    (rep / "audio_rx.csv").write_text("seq,send_ns,recv_ns\n" + "".join(rx) + rx[0])  # + a duplicate, ignored
    (rep / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n" + "".join(
        f"{i},0,{s},{'' if e is None else e},{b},0,0,{0 if e is None else 1}\n" for i, (s, e, b) in enumerate(flows)))
    return rep


# Packets 0..19, 20 ms apart. TCP starts at packet 10's send time; one flow to packet 18's send time (inclusive).
# Jitter buffer 40 ms on a 30 ms base: the threshold is OWD 70 ms, exactly; 70 ms + 1 ns is lost.
OWD = [30 * MS] * 10 + [30 * MS, 70 * MS + 1, 72 * MS, None, 30 * MS, 70 * MS, 30 * MS, 80 * MS, 90 * MS, None]
TCP_START = T0 + 200 * MS
FLOWS = [(TCP_START, T0 + 360 * MS, 20_000)]


# ----------------------------------------------------------------------------- loss period levels


@pytest.mark.parametrize("run,level", [(1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (6, 4), (9, 4), (10, 5), (11, 5)])
def test_loss_run_lengths_map_to_levels(run, level):
    lost = np.array([False] * 3 + [True] * run + [False] * 3)
    lv = loss_levels(lost)
    assert (lv[3:3 + run] == level).all() and (lv[:3] == 0).all() and (lv[3 + run:] == 0).all()


def test_levels_of_several_runs_including_the_stream_edges():
    lost = np.array([1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1], dtype=bool)
    assert loss_levels(lost).tolist() == [1, 0, 2, 2, 0, 0, 4, 4, 4, 4, 4, 4]
    assert loss_levels(np.zeros(0, dtype=bool)).size == 0


# ----------------------------------------------------------------------------- OWD, IPDV, base delay


def test_ipdv_signs_and_pairs_around_a_loss():
    a = audio([10, 30, 20, None, 50, 40])
    assert (ipdv_ns(a) / MS).tolist() == [20, -10, -10]  # pairs (0,1) (1,2) (4,5); (2,3), (3,4) skipped


def test_ipdv_table_percentiles():
    steps = [3, -5, 0, 5, -1, 2, -4, 1, 4, -3, -2]  # IPDV -5..5 ms, shuffled
    owd = np.cumsum([100] + steps).tolist()
    t = ipdv_table(ipdv_ns(audio(owd)))
    assert list(t) == ["min", "p25", "p50", "p75", "p90", "p95", "p96", "p97", "p98", "p99", "max"]
    expect = {"min": -5, "p25": -2.5, "p50": 0, "p75": 2.5, "p90": 4, "p95": 4.5, "p96": 4.6, "p97": 4.7,
              "p98": 4.8, "p99": 4.9, "max": 5}  # linear interpolation over 11 sorted values
    assert t == pytest.approx({k: v / 1000 for k, v in expect.items()})
    assert ipdv_table(np.array([])) == {}


def test_cdf():
    x, f = cdf(np.array([3.0, np.nan, 1.0, 2.0, 2.0]))
    assert x.tolist() == [1, 2, 2, 3] and f.tolist() == [0.25, 0.5, 0.75, 1.0]


def test_base_delay_uses_the_window_before_tcp_start():
    a = audio([5] + [30] * 99 + [1] + [90] * 49)  # packet 100 (OWD 1 ms) is sent exactly at TCP start: excluded
    assert base_delay_ns(a, tcp_start_ns=2_000 * MS, window_s=1.0) == 30 * MS
    assert base_delay_ns(a, tcp_start_ns=2_000 * MS, window_s=2.0) == 5 * MS  # packet 0 at start - 2 s: in
    assert base_delay_ns(a, tcp_start_ns=2_000 * MS + 1, window_s=2.0) == 1 * MS  # packet 0 out, 100 in
    assert base_delay_ns(a, tcp_start_ns=None) == 1 * MS  # no TCP: the whole run
    with pytest.raises(MetricsError, match="base-delay window"):
        base_delay_ns(audio([None] * 10 + [30] * 10), tcp_start_ns=200 * MS)


def test_delay_based_loss_at_the_exact_threshold():
    a = audio([30, 70, 70.000001, None])
    assert lost_mask(a, base_ns=30 * MS, jitter_buffer_ms=40).tolist() == [False, False, True, True]


# ----------------------------------------------------------------------------- overlap filter, TCP


def test_overlap_filter_is_the_union_of_flow_intervals():
    send = np.array([0, 10, 20, 30, 40, 50]) * MS
    flows = pd.DataFrame({"start_ns": [10 * MS, 15 * MS, 35 * MS], "end_ns": [20 * MS, 12 * MS, ""]})
    assert active_mask(send, flows, run_end_ns=45 * MS).tolist() == [False, True, True, False, True, False]
    assert active_mask(send, flows).tolist() == [False, True, True, False, True, True]  # not completed: to the end
    assert time_since_tcp_start_s(send, 10 * MS).tolist() == [-0.01, 0, 0.01, 0.02, 0.03, 0.04]
    lot = levels_over_time(np.array([0.0, 0.001, 0.021, 0.022, 0.025]), np.array([0, 1, 5, 5, 0]), bin_s=0.02)
    assert lot["samples"].tolist() == [2, 3] and lot["level5"].tolist() == pytest.approx([0, 2 / 3])


def test_completion_goodput_jain_from_flow_logs(tmp_path):
    rep = tmp_path / "rep0"
    rep.mkdir()
    (rep / "flows.csv").write_text(
        "flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n"
        f"0,0,{T0},{T0 + 1000 * MS},125000,1,0,1\n"
        f"1,0,{T0},{T0 + 2000 * MS},125000,0,1,1\n"
        f"2,1,{T0 + 1000 * MS},{T0 + 1500 * MS + 1},62500,2,,1\n"
        f"3,1,{T0 + 1000 * MS},,1000,,,0\n")
    m = tcp_metrics(read_flows(rep))
    assert m["flow_completion_s"] == [1.0, 2.0, 0.500000001, None]
    assert m["flow_goodput_bps"][:2] == [1e6, 0.5e6] and m["flow_goodput_bps"][3] is None
    b0, b1 = m["bursts"][0], m["bursts"][1]
    assert b0["completion_s"] == 2.0 and b0["goodput_bps"] == 250000 * 8 / 2.0
    assert b0["jain"] == pytest.approx((1e6 + 0.5e6) ** 2 / (2 * (1e12 + 0.25e12)))  # 0.9
    assert b1["completion_s"] is None and b1["jain"] is None and b1["completed"] == 1  # a flow did not finish
    assert m["jain_between_bursts"] == pytest.approx(jain([0.75e6, 62500 * 8 / 0.500000001]))
    assert m["retrans"] == 3 and m["rtos"] == 1 and m["rtos_unknown_flows"] == 2
    assert jain([1.0, 1.0, 1.0]) == 1.0 and jain([1.0, 0.0]) == 0.5 and jain([]) is None


def test_tfs():
    assert tfs(688.5, 3593, 6) == pytest.approx(688.5 / (3593 / 6))
    with pytest.raises(ValueError):
        tfs(1, 0, 2)


# ----------------------------------------------------------------------------- one replication, a sweep


def test_summary_of_a_rep_by_hand(tmp_path):
    rep = write_rep(tmp_path / "caseA" / "rep0", OWD, FLOWS, TCP_START)
    s = summarize_rep(rep, jitter_buffers=[40, 60])
    assert s["base_delay_s"] == 0.030
    assert s["audio"] == {"sent": 9, "received": 8, "pure_losses": 1, "owd_median_s": pytest.approx(0.0700000005),
                          "owd_p99_s": pytest.approx(0.0893), "owd_max_s": 0.090}  # kept: packets 10..18
    # kept pairs (10,11) (11,12) (14,15) (15,16) (16,17) (17,18): 40+1ns, 2, 40, -40, 50, 10 ms
    assert s["ipdv"]["min"] == -0.040 and s["ipdv"]["max"] == 0.050
    assert s["ipdv"]["p50"] == pytest.approx(0.025)
    j40 = s["jitter_buffers_ms"]["40"]
    # lost at 40 ms: 11 (70 ms + 1 ns), 12, 13 (pure), 17, 18 -- 15 at exactly 70 ms is not lost; 17, 18 are a
    # run of 3 with packet 19 (outside the filter): level 2
    assert (j40["pure_losses"], j40["delay_losses"]) == (1, 4) and j40["loss_rate"] == pytest.approx(5 / 9)
    assert j40["levels"] == pytest.approx([4 / 9, 0, 5 / 9, 0, 0, 0]) and j40["good_quality"] == pytest.approx(4 / 9)
    j60 = s["jitter_buffers_ms"]["60"]  # threshold 90 ms: only the pure loss
    assert j60["loss_rate"] == pytest.approx(1 / 9) and j60["levels"][1] == pytest.approx(1 / 9)
    assert j60["good_quality"] == 1.0
    assert s["tcp"]["flow_completion_s"] == [0.16] and s["tcp"]["flow_goodput_bps"] == [pytest.approx(1e6)]
    assert s["audio_whole_run"]["sent"] == 20 and s["audio_whole_run"]["pure_losses"] == 2


def test_sweep_and_cli(tmp_path, capsys):
    run = tmp_path / "run"
    write_rep(run / "caseA" / "rep0", OWD, FLOWS, TCP_START)
    write_rep(run / "caseA" / "rep1", [d and d + 10 * MS for d in OWD], FLOWS, TCP_START)  # base 40 ms
    write_rep(run / "caseA" / "rep2", OWD, FLOWS, TCP_START, status="failed")
    (run / "caseA" / "rep3.tmp").mkdir()  # an unfinished replication: not a run
    s = summarize_sweep(sorted((run / "caseA").glob("rep[0-9]")), jitter_buffers=[40])
    case = s["cases"]["caseA"]
    assert case["reps"] == 2 and case["failed"] == 1 and len(s["failed"]) == 1
    assert "rep2/meta.json: the run failed: switch died" in s["failed"][0]["error"]
    base = case["metrics"]["base_delay_s"]
    assert base["n"] == 2 and base["mean"] == pytest.approx(0.035)
    assert base["ci95"] == pytest.approx(12.706205 * 0.005 * math.sqrt(2) / math.sqrt(2))
    assert case["metrics"]["jitter_buffers_ms.40.loss_rate"]["mean"] == pytest.approx(5 / 9)

    assert metrics_cli.main([str(run), "--jitter-buffers", "40,60", "--base-window", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["cases"]["caseA"]["reps"] == 2 and out["failed"][0]["path"].endswith("rep2")
    assert "jitter_buffers_ms.60.loss_rate" in out["cases"]["caseA"]["metrics"]
    assert metrics_cli.main([str(run / "caseA" / "rep0"), "--jitter-buffers", "40"]) == 0
    assert json.loads(capsys.readouterr().out)["jitter_buffers_ms"]["40"]["delay_losses"] == 4
    assert metrics_cli.main([str(run / "caseA" / "rep2")]) == 1
    assert "the run failed" in json.loads(capsys.readouterr().out)["failed"][0]["error"]


def test_mean_ci95_student_t():
    r = mean_ci95([1, 2, 3, 4, 5, None])
    sd = math.sqrt(2.5)
    assert r["n"] == 5 and r["n_missing"] == 1 and r["mean"] == 3
    assert r["ci95"] == pytest.approx(2.776445 * sd / math.sqrt(5)) and r["lo"] == pytest.approx(3 - r["ci95"])
    assert mean_ci95([7.0])["ci95"] is None and mean_ci95([])["mean"] is None
    assert t_quantile_975(30) == 2.042272 and 2.021075 < t_quantile_975(35) < 2.042272
    assert t_quantile_975(1000) == pytest.approx(1.962339, abs=1e-4)


# ----------------------------------------------------------------------------- bad input


def test_failed_run_and_truncated_files_name_the_file(tmp_path):
    with pytest.raises(MetricsError, match=r"meta.json: the run failed: switch died"):
        summarize_rep(write_rep(tmp_path / "bad", OWD, FLOWS, TCP_START, status="failed"))
    rep = write_rep(tmp_path / "rep0", OWD, FLOWS, TCP_START)
    good = {p.name: p.read_text() for p in rep.iterdir()}

    def broken(name, text, pattern):
        (rep / name).write_text(text)
        with pytest.raises(MetricsError, match=pattern):
            summarize_rep(rep)
        (rep / name).write_text(good[name])

    rx = good["audio_rx.csv"]
    broken("audio_rx.csv", rx[:rx.rindex(",")] + "\n", r"audio_rx.csv: line \d+: column 'recv_ns'")  # cut row
    broken("audio_rx.csv", rx[:rx.rindex(",") - 3], r"audio_rx.csv: line \d+")  # cut in the middle of a number
    broken("audio_rx.csv", "", r"audio_rx.csv: empty")
    broken("audio_tx.csv", "seq,send_ns\n0,12x\n", r"audio_tx.csv: line 2: column 'send_ns' is '12x'")
    broken("audio_tx.csv", "seq,send_ns\n", r"audio_tx.csv: no packets")
    broken("flows.csv", good["flows.csv"].replace(",1\n", ",\n"), r"flows.csv: line 2: column 'completed'")
    broken("flows.csv", good["flows.csv"].replace(str(T0 + 360 * MS), ""), r"flows.csv: a completed flow without")
    broken("meta.json", good["meta.json"][:30], r"meta.json: not JSON")
    (rep / "flows.csv").unlink()
    with pytest.raises(MetricsError, match=r"flows.csv: missing"):
        summarize_rep(rep)
    assert summarize_rep(write_rep(tmp_path / "again", OWD, FLOWS, TCP_START))["audio"]["sent"] == 9


# ----------------------------------------------------------------------------- telemetry


def write_pcap(path: Path, frames: list[bytes]) -> None:
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f)
        for i, fr in enumerate(frames):
            w.writepkt(fr, ts=i / 1000)


def test_telemetry_ipver_and_ipv6_hosts(tmp_path):
    """Byte 45 of a record is its packet's IP version (6 for IPv6, else 0; docs/telemetry.md), src/dst an IPv6
    address's low 32 bits: both readers give ipver, and host_mask finds a host's records of either family."""
    from experiments.telemetry_reader import host_mask
    v6 = Record(4, 0, 0, 1, 0, 114, 0, 0, T0, 0, 0, 0x00000001, 0x00000002, 5004, 5004, 17, 0, 0)
    v4 = Record(4, 0, 0, 1, 0, 94, 1, 0, T0, 0, 0, 0x0A000001, 0x0A000002, 5004, 5004, 17, 0, 0)
    decoy = Record(4, 0, 0, 1, 0, 94, 2, 0, T0, 0, 0, 0x00000001, 0x00000002, 5004, 5004, 17, 0, 0)  # 0.0.0.2
    frame6 = bytearray(encode_frame(v6))
    frame6[14 + 45] = 6
    path = tmp_path / "telemetry.pcap"
    write_pcap(path, [bytes(frame6), encode_frame(v4), encode_frame(decoy)])
    df, _ = read_telemetry(path)
    assert df["ipver"].tolist() == [6, 0, 0]
    assert read_telemetry_scapy(path).astype(object).equals(df.astype(object))
    assert host_mask(df, "fd00::2").tolist() == [True, False, False]
    assert host_mask(df, "fd00::1", "src").tolist() == [True, False, False]
    assert host_mask(df, "10.0.0.2").tolist() == [False, True, False]
    assert host_mask(df, "fd00::3").tolist() == [False, False, False]


def test_telemetry_pcap_roundtrip_and_truncation(tmp_path):
    recs = [Record(4, i % 3, 2, 1, 3, 94 + i, i, 7 * i, T0 + i * 1000, 5 * i, 6, 0x0A000001, 0x0A000002, 5004,
                   40000 + i, 17, 2**64 - 1 - i, i) for i in range(5)]
    path = tmp_path / "telemetry.pcap"
    other = b"\xff" * 12 + b"\x08\x00" + b"\x45" + b"\x00" * 39  # an IPv4 frame
    write_pcap(path, [encode_frame(r) for r in recs[:2]] + [other] + [encode_frame(r) for r in recs[2:]])
    df, skipped = read_telemetry(path)
    assert skipped == 1 and list(df.columns) == COLUMNS and set(df["ipver"]) == {0}
    fields = set(Record.__dataclass_fields__)
    assert [Record(**{k: int(v) for k, v in row.items() if k in fields}) for row in df.to_dict("records")] == recs
    slow = read_telemetry_scapy(path)
    assert slow.astype(object).equals(df.astype(object))

    data = path.read_bytes()
    path.write_bytes(data[:-30])
    with pytest.raises(MetricsError, match="telemetry.pcap: truncated"):
        read_telemetry(path)
    path.write_bytes(data[:20])
    with pytest.raises(MetricsError, match="telemetry.pcap: truncated"):
        read_telemetry(path)
    write_pcap(path, [encode_frame(recs[0])[:40]])
    with pytest.raises(MetricsError, match="telemetry.pcap: telemetry frame of 40 bytes"):
        read_telemetry(path)
    empty = tmp_path / "empty.pcap"
    write_pcap(empty, [])
    df, skipped = read_telemetry(empty)
    assert df.empty and skipped == 0 and list(df.columns) == COLUMNS


# ----------------------------------------------------------------------------- bulk throughput

from bulkcapture import CLIENT, SERVER, audio_frames, connection, write_pcap_us  # noqa: E402

from accessnet.addresses import V4, V6, Hosts  # noqa: E402
from experiments.metrics import bulk_goodput, delivered_bytes, read_tcp_headers  # noqa: E402

NS = 1_000_000_000
TB = 1_700_000_001_000_000_000  # on the microsecond, so the capture's timestamps are exact
BULK_START = TB + 1 * NS  # connect() of the bulk flow
PORT = 40000
ISN = 2**32 - 5000  # the server's initial sequence number: ACK numbers wrap 5 kB into the download
ACK_BYTES = 25_000  # every 100 ms from 1.3 s: 250 kB/s = 2 Mbit/s


def acks(k_max: int = 100, base: int = TB + 1_300_000_000) -> list[tuple[int, int]]:
    """The client's ACK k (k = 1..k_max) at base + 100 ms k acknowledges 25,000 k bytes."""
    return [(base + k * 100 * MS, ACK_BYTES * k) for k in range(1, k_max + 1)]


def write_bulk_rep(rep: Path, *, n_audio: int = 596, start: int = BULK_START, ack_list=None, end: int | None = None,
                   nbytes: int = 0, client_log: bool = True, extra=(), fin_at: int | None = None,
                   bulk: bool = True, hosts: Hosts = V4) -> Path:
    """Audio every 20 ms from TB (n_audio packets: the last one sent at TB + 11.9 s by default, so the window
    ends 2 s earlier, at TB + 9.9 s), one bulk flow
    (burst 0) from ``start`` that never completes unless ``end`` is given, its client log, and client.pcap:
    the bulk connection, the audio, ``extra`` frames and a last frame at TB + 12 s, between ``hosts``."""
    rep.mkdir(parents=True)
    plan = {"bursts": [{"burst": 0, "start_s": (start - TB) / NS, "flows": 1, "bytes": 10**9, **({"bulk": True}
                                                                                                 if bulk else {})}]}
    (rep / "meta.json").write_text(json.dumps({"status": "ok", "case": "bulk-hspa-48p-fifo-iw10", "rep": 0,
                                               "aqm": "fifo", "iw": 10, "n_flows": 1, "switch": "model",
                                               "audio_start_ns": TB, "tcp_start_ns": start, "plan": plan}))
    send = [TB + i * 20 * MS for i in range(n_audio)]
    (rep / "audio_tx.csv").write_text("seq,send_ns\n" + "".join(f"{i},{s}\n" for i, s in enumerate(send)))
    (rep / "audio_rx.csv").write_text("seq,send_ns,recv_ns\n" + "".join(
        f"{i},{s},{s + 80 * MS}\n" for i, s in enumerate(send)))
    done = end is not None
    (rep / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n"
                                   f"0,0,{start},{end if done else ''},{nbytes},0,0,{int(done)}\n")
    if client_log:
        (rep / "client_flows_0.csv").write_text("flow,burst,start_ns,end_ns,bytes,completed,lport\n"
                                                f"0,0,{start},{end if done else TB},{nbytes},{int(done)},{PORT}\n")
    frames = connection(start, PORT, ISN, acks() if ack_list is None else ack_list, fin_at=fin_at, hosts=hosts)
    frames += audio_frames(TB, n_audio, hosts) + list(extra) + [(TB + 12 * NS, audio_frames(0, 1, hosts)[0][1])]
    write_pcap_us(rep / "client.pcap", frames)
    return rep


def test_tcp_headers_of_a_capture(tmp_path):
    rep = write_bulk_rep(tmp_path / "rep0", ack_list=acks(2))
    pk, last = read_tcp_headers(rep / "client.pcap")
    assert last == TB + 12 * NS  # the last frame of any kind (audio)
    assert len(pk) == 3 + 2 * 2  # SYN, SYN-ACK, handshake ACK; a data segment and an ACK per ACK; no UDP
    syn = pk.iloc[0]
    assert (syn["ts_ns"], syn["sport"], syn["dport"], syn["flags"]) == (BULK_START + 100_000, PORT, 8080, 0x02)
    assert (syn["src"], syn["dst"]) == tuple(int.from_bytes(bytes(map(int, a.split("."))), "big")
                                             for a in (CLIENT, SERVER))
    assert pk.iloc[1]["seq"] == ISN and pk.iloc[-1]["ack"] == (ISN + 1 + 2 * ACK_BYTES) % 2**32  # wrapped
    ts, cum = delivered_bytes(pk, (syn["src"], syn["dst"], PORT, 8080, syn["ts_ns"]))
    assert cum.tolist() == [0, ACK_BYTES, 2 * ACK_BYTES]  # the handshake's ACK, then ACK 1 and 2, unwrapped
    assert ts.tolist() == [BULK_START + 162_050_000, TB + 1_400 * MS, TB + 1_500 * MS]


def test_tcp_headers_of_an_ipv6_capture(tmp_path):
    """The same download over IPv6: the same segments, 128-bit addresses (exact), no IP ID (0), the payload from
    the IPv6 payload length; a capture holding both families keeps each segment's own."""
    import ipaddress
    rep = write_bulk_rep(tmp_path / "rep0", ack_list=acks(2), hosts=V6)
    pk, last = read_tcp_headers(rep / "client.pcap")
    v4, _ = read_tcp_headers(write_bulk_rep(tmp_path / "v4", ack_list=acks(2)) / "client.pcap")
    assert last == TB + 12 * NS and len(pk) == len(v4) == 7
    same = ["ts_ns", "sport", "dport", "seq", "ack", "flags", "payload"]
    assert pk[same].equals(v4[same]) and set(pk["ipver"]) == {6} and set(v4["ipver"]) == {4}
    assert set(pk["ip_id"]) == {0} and pk["payload"].tolist() == [0, 0, 0, 1448, 0, 1448, 0]
    syn = pk.iloc[0]
    assert (syn["src"], syn["dst"]) == (int(ipaddress.IPv6Address(V6.client)), int(ipaddress.IPv6Address(V6.server)))
    ts, cum = delivered_bytes(pk, (syn["src"], syn["dst"], PORT, 8080, syn["ts_ns"]))
    assert cum.tolist() == [0, ACK_BYTES, 2 * ACK_BYTES]
    both = tmp_path / "both.pcap"
    write_pcap_us(both, connection(BULK_START, PORT, ISN, acks(2), hosts=V6) + connection(BULK_START, PORT + 1, 7, acks(2)))
    mixed, _ = read_tcp_headers(both)
    assert sorted(mixed["ipver"].unique()) == [4, 6] and mixed["src"].map(type).eq(int).all()


def test_bulk_goodput_over_ipv6_is_the_ipv4_one(tmp_path):
    """summarize_rep of the same replication captured over IPv6: every metric as over IPv4 (the bulk goodput
    read from the client's IPv6 ACKs)."""
    v4 = summarize_rep(write_bulk_rep(tmp_path / "v4"), jitter_buffers=[40])
    v6 = summarize_rep(write_bulk_rep(tmp_path / "v6", hosts=V6), jitter_buffers=[40])
    assert v6["bulk"]["bytes"] == 1_725_000 and v6["bulk"]["goodput_bps"] == pytest.approx(2e6, rel=1e-12)
    def same(d, rep):  # every value but where it was read from
        return json.loads(json.dumps({k: v for k, v in d.items() if k != "path"}).replace(str(rep), "REP"))
    assert same(v6, tmp_path / "v6") == same(v4, tmp_path / "v4")


def test_bulk_goodput_by_hand(tmp_path):
    """Window [start + 2 s, the audio's last send - 2 s] = [TB + 3 s, TB + 9.9 s]; ACK 17 (TB + 3.0 s, 425 kB) and ACK
    86 (TB + 9.9 s, 2,150 kB) sit exactly on its edges and count (the last ACK at or before each edge): 1,725,000
    bytes in 6.9 s = 2 Mbit/s. A stale ACK (an older one, captured last at the window's end) and another
    connection (a web flow from another port, 1 MB acknowledged) change nothing."""
    stale = (TB + 9_900 * MS, connection(BULK_START, PORT, ISN, [(0, 10)])[-1][1])  # acknowledges 10 B
    web = connection(TB + 5 * NS, PORT + 2, 1234, [(TB + 6 * NS, 1_000_000)])
    rep = write_bulk_rep(tmp_path / "rep0", extra=[stale, *web])
    s = summarize_rep(rep, jitter_buffers=[40])
    assert s["bulk"] == {"flows": 1, "goodput_bps": pytest.approx(2e6, rel=1e-12), "bytes": 1_725_000,
                         "window_s": 6.9, "window_start_ns": TB + 3 * NS, "window_end_ns": TB + 9_900 * MS,
                         "warmup_s": 2.0, "cooldown_s": 2.0, "not_measured": None}
    assert s["tcp"]["flows"] == 1 and s["tcp"]["completed"] == 0  # the other metrics as before
    # No warm-up: from connect() (nothing acknowledged yet) to the end: 2,150,000 bytes in 8.9 s.
    flows, meta = read_flows(rep), json.loads((rep / "meta.json").read_text())
    g = bulk_goodput(rep, flows, meta, TB + 11_900 * MS, warmup_s=0.0)
    assert (g["bytes"], g["window_s"]) == (2_150_000, 8.9) and g["goodput_bps"] == pytest.approx(2_150_000 * 8 / 8.9)
    # No cool-down: to the audio's last send (TB + 11.9 s), past the last ACK (100, at 11.3 s): 2,075,000 bytes.
    g = bulk_goodput(rep, flows, meta, TB + 11_900 * MS, cooldown_s=0.0)
    assert (g["bytes"], g["window_s"]) == (2_500_000 - 425_000, 8.9)


@pytest.mark.parametrize("start_shift,n_audio,nbytes,window_s", [
    (-1_000, 596, 25_000 * (86 - 16), 6.900001),  # start 1 us earlier: ACK 17 is inside, ACK 16 is the base
    (+1_000, 596, 25_000 * (86 - 17), 6.899999),  # 1 us later: ACK 17 is still the last before the start
    (0, 595, 25_000 * (85 - 17), 6.88),  # the audio ends 20 ms earlier: the window at TB + 9.88 s, ACK 86 outside
])
def test_bulk_window_edges(tmp_path, start_shift, n_audio, nbytes, window_s):
    rep = write_bulk_rep(tmp_path / "rep0", start=BULK_START + start_shift, n_audio=n_audio,
                         ack_list=acks(base=TB + 1_300_000_000))  # the ACKs stay where they are
    b = summarize_rep(rep, jitter_buffers=[40])["bulk"]
    assert (b["bytes"], b["window_s"]) == (nbytes, pytest.approx(window_s, abs=1e-12))
    assert b["goodput_bps"] == pytest.approx(nbytes * 8 / window_s)


def test_completed_bulk_flow_ends_the_window_and_its_fin_is_no_byte(tmp_path):
    """A bulk flow that completes (925,000 bytes, ACK 37 at TB + 5.0 s, the FIN acknowledged 1 ms later, the
    last byte read at 5.002 s) is measured up to its own end: 500,000 bytes in 2.002 s."""
    rep = write_bulk_rep(tmp_path / "rep0", ack_list=acks(37), end=TB + 5_002 * MS, nbytes=925_000,
                         fin_at=TB + 5_001 * MS)
    b = summarize_rep(rep, jitter_buffers=[40])["bulk"]
    assert (b["bytes"], b["window_end_ns"]) == (500_000, TB + 5_002 * MS)
    assert b["goodput_bps"] == pytest.approx(500_000 * 8 / 2.002)


def test_bulk_connection_without_the_client_log(tmp_path):
    """Without client_flows_0.csv the connection is the one SYN within 1 s after connect(); two such SYNs cannot
    be told apart (not measured), unless the client log names the port."""
    plain = write_bulk_rep(tmp_path / "a", client_log=False)
    assert summarize_rep(plain, jitter_buffers=[40])["bulk"]["bytes"] == 1_725_000
    other = connection(BULK_START + 500 * MS, PORT + 1, 99, [(TB + 4 * NS, 10**6)])
    two = write_bulk_rep(tmp_path / "b", client_log=False, extra=other)
    b = summarize_rep(two, jitter_buffers=[40])["bulk"]
    assert b["goodput_bps"] is None and "2 connections opened within 1 s" in b["not_measured"]
    named = write_bulk_rep(tmp_path / "c", extra=other)
    assert summarize_rep(named, jitter_buffers=[40])["bulk"]["bytes"] == 1_725_000


def not_measured(rep: Path) -> str:
    s = summarize_rep(rep, jitter_buffers=[40])
    assert s["bulk"]["goodput_bps"] is None and s["bulk"]["bytes"] is None
    assert s["audio"]["sent"] > 0  # the replication's other metrics stand
    return s["bulk"]["not_measured"]


def test_bulk_not_measured_names_the_reason(tmp_path):
    rep = write_bulk_rep(tmp_path / "missing")
    (rep / "client.pcap").unlink()
    assert not_measured(rep).endswith("client.pcap: missing")
    rep = write_bulk_rep(tmp_path / "garbage")
    (rep / "client.pcap").write_bytes(b"not a capture at all, but long enough")
    assert "client.pcap: not a classic pcap file" in not_measured(rep)
    rep = write_bulk_rep(tmp_path / "short")
    write_pcap_us(rep / "client.pcap", [])  # a header, no frame
    assert "client.pcap: the capture ends before the window's end (no frames)" in not_measured(rep)
    write_pcap_us(rep / "client.pcap", connection(BULK_START, PORT, ISN, acks(77)))  # stopped at TB + 9.0 s
    assert "the capture ends before the window's end (0.900 s)" in not_measured(rep)
    rep = write_bulk_rep(tmp_path / "late", start=TB + 8 * NS)  # start + 2 s > the audio's end - 2 s
    assert not_measured(rep).startswith("empty window: the bulk flow starts 0.100 s too late")
    rep = write_bulk_rep(tmp_path / "nosyn", ack_list=acks())
    write_pcap_us(rep / "client.pcap", [f for f in connection(BULK_START, PORT, ISN, acks())[1:]]
                  + [(TB + 12 * NS, audio_frames(0, 1)[0][1])])  # the SYN was not captured
    assert "client.pcap: no SYN within 1 s of the bulk flow's connect() from port 40000" in not_measured(rep)
    rep = write_bulk_rep(tmp_path / "norow")
    (rep / "flows.csv").write_text((rep / "flows.csv").read_text().replace("\n0,0,", "\n0,1,"))  # burst 1
    assert "flows.csv: no row of bulk burst(s) [0]" in not_measured(rep)


def test_a_capture_cut_inside_its_last_record_is_read_up_to_the_cut(tmp_path):
    rep = write_bulk_rep(tmp_path / "rep0")
    data = (rep / "client.pcap").read_bytes()
    (rep / "client.pcap").write_bytes(data[:-20])  # the frame at TB + 12 s is cut: the last audio packet's is last
    _, last = read_tcp_headers(rep / "client.pcap")
    assert last == TB + 11_980 * MS
    assert summarize_rep(rep, jitter_buffers=[40])["bulk"]["bytes"] == 1_725_000


def test_no_bulk_flow_no_bulk_metric_and_the_sweep_averages_goodput(tmp_path):
    assert "bulk" not in summarize_rep(write_bulk_rep(tmp_path / "web" / "rep0", bulk=False), jitter_buffers=[40])
    run = tmp_path / "run"
    write_bulk_rep(run / "c" / "rep0")
    write_bulk_rep(run / "c" / "rep1", ack_list=[(t, n // 2) for t, n in acks()])  # 1 Mbit/s
    m = summarize_sweep(sorted((run / "c").glob("rep[0-9]")), jitter_buffers=[40])["cases"]["bulk-hspa-48p-fifo-iw10"]
    assert m["metrics"]["bulk.goodput_bps"]["mean"] == pytest.approx(1.5e6)
    assert "bulk.window_start_ns" not in m["metrics"] and m["metrics"]["bulk.window_s"]["mean"] == 6.9


def test_two_real_time_flows_each_have_their_metrics_and_tfs_counts_both(tmp_path):
    """Seed 002's second case: rtc_tx.csv / rtc_tx_1.csv. Each flow's goodput and loss are its own; TFS's
    total throughput holds both flows' bytes and its number of flows both flows and the web users."""
    from test_report import write_rtc_logs

    from experiments.metrics import rtc_metrics, rtc_suffixes
    t0 = 10**18  # write_rtc_logs's first send
    for sfx, got in (("", 100), ("_1", 50)):
        write_rtc_logs(tmp_path, sfx, got, owd_ns=5_000_000)
    assert rtc_suffixes(tmp_path) == ["", "_1"]
    flows = pd.DataFrame({"flow": [0], "burst": [0], "start_ns": [t0], "end_ns": [t0 + NS], "bytes": [125_000],
                          "retrans": [0], "rtos": [0], "completed": [1]})
    first = rtc_metrics(tmp_path, flows, 3, "", 50 * 1000)
    second = rtc_metrics(tmp_path, flows, 3, "_1", 100 * 1000)
    assert (first["loss_rate"], second["loss_rate"]) == (0.0, 0.5)
    assert first["total_throughput_bps"] == second["total_throughput_bps"] == (150_000 + 125_000) * 8 / 0.99
    assert first["tfs"] == 1e6 / (first["total_throughput_bps"] / 3)  # 125 kB in 1 s per download; 3 flows
