"""experiments.grant_error on a telemetry capture built record by record, whose grants, matches and errors are
worked out by hand from how it is built (target 28 ms, server RTT 22 ms, budget 40 ms: margin 12 ms)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from bulkcapture import write_pcap_us

from experiments.grant_error import grant_errors, main, summarize, target_of
from experiments.telemetry_reader import read_telemetry
from refmodel.constants import Reason, TrafficClass
from refmodel.telemetry import Record, encode_frame

MS = 1_000_000
SERVER, CLIENT = 0x0A000001, 0x0A000002
A, B = 40001, 40002
UP, DOWN = dict(src=CLIENT, dst=SERVER, dport=8080), dict(src=SERVER, dst=CLIENT, sport=8080)


def grant(t_ms: float, port: int, granted: int, room_ms: float, reason: Reason = Reason.IWA_WINDOW) -> tuple:
    rec = Record(aqm=4, decision=3, reason=int(reason), cls=int(TrafficClass.TCP_CTRL), tflags=1, length=66, seq=0,
                 rand=0, ts_ns=int(t_ms * MS), sojourn_ns=0, backlog_ns=0, sport=port, proto=6, s1=0,
                 s2=granted << 32 | int(room_ms * MS), **UP)
    return rec.ts_ns, encode_frame(rec)


def data(t_ms: float, port: int, backlog_ms: float, cls: TrafficClass = TrafficClass.TCP_EST,
         length: int = 1514) -> tuple:
    rec = Record(aqm=4, decision=0, reason=0, cls=int(cls), tflags=1, length=length, seq=0, rand=0,
                 ts_ns=int(t_ms * MS), sojourn_ns=int(backlog_ms * MS), backlog_ns=int(backlog_ms * MS), dport=port,
                 proto=6, s1=0, s2=0, **DOWN)
    return rec.ts_ns, encode_frame(rec)


def audio(t_ms: float) -> tuple:
    rec = Record(aqm=4, decision=0, reason=0, cls=int(TrafficClass.UDP), tflags=0, length=214, seq=0, rand=0,
                 ts_ns=int(t_ms * MS), sojourn_ns=45 * MS, backlog_ns=45 * MS, src=SERVER, dst=CLIENT, sport=5004,
                 dport=5004, proto=17, s1=0, s2=0)
    return rec.ts_ns, encode_frame(rec)


FRAMES = [
    data(90, B, 0, TrafficClass.TCP_START),  # another connection's start-phase data, 32 ms before A's
    grant(100, A, 2896, 10),                  # predicts 28 - 10 = 18 ms
    data(110, A, 5),                          # before one server RTT less the slack (121 ms): an earlier grant's
    data(115, B, 0),                          # B's data, not A's
    data(122, A, 33),                         # G1's data: met 33, error +15 > the margin
    grant(200, A, 1448, 20, Reason.UPSTREAM),  # predicts 8 ms (a window the client's own: reason UPSTREAM)
    grant(205, A, 0, 20),                     # opened nothing: not a grant
    grant(210, A, 1448, 0),                   # no room: left out
    data(230, A, 6),                          # G2's data: error -2
    grant(400, A, 1448, 5),                   # its data comes too late (after 400 + 21 + 22 ms)
    data(444, A, 1),
    audio(122),
]


@pytest.fixture
def rep(tmp_path: Path) -> Path:
    write_pcap_us(tmp_path / "telemetry.pcap", FRAMES)
    (tmp_path / "tuning.csv").write_text("t_ns,target_ns,new_flows\n1,28000000,0\n2,28000000,0\n3,30000000,0\n")
    (tmp_path / "meta.json").write_text('{"profile": {"server_delay_ms": 11.0}}')
    return tmp_path


def test_each_grant_meets_its_own_data_one_server_rtt_later(rep):
    records, _ = read_telemetry(rep / "telemetry.pcap")
    e = grant_errors(records, 28 * MS, 22 * MS)
    assert list(e["ts_ns"] // MS) == [100, 200, 400]
    assert list(e["predicted_ns"] / MS) == [18, 8, 23]
    assert list(e["data_ts_ns"][:2] / MS) == [122, 230] and math.isnan(e["data_ts_ns"][2])
    assert list(e["error_ns"][:2] / MS) == [15, -2]
    # in the 50 ms before G1's data: B's start-phase frame at 90 ms; B's at 115 and A's at 110 established
    assert (e["start_bytes"][0], e["est_bytes"][0]) == (1514, 2 * 1514)


def test_summary_counts_the_grants_beyond_the_margin(rep):
    records, _ = read_telemetry(rep / "telemetry.pcap")
    s = summarize(grant_errors(records, 28 * MS, 22 * MS), 12 * MS)
    assert (s["grants"], s["matched"], s["high"]) == (3, 2, 1)
    assert s["median_ms"] == pytest.approx(6.5) and s["over_budget_pct"] == 0.0
    assert s["start_kb_high"] == pytest.approx(1.514) and s["est_kb_rest"] == pytest.approx(0.0)


def test_the_target_is_the_replications_most_common(rep):
    assert target_of(rep, None) == 28 * MS and target_of(rep, 25.0) == 25 * MS


def test_cli_names_a_replication_it_cannot_read_and_reads_the_others(rep, tmp_path_factory, capsys):
    bad = tmp_path_factory.mktemp("bad")
    write_pcap_us(bad / "telemetry.pcap", FRAMES)  # no tuning.csv, and meta.json without the profile
    (bad / "meta.json").write_text("{}")
    assert main([str(rep), str(bad)]) == 0
    out, err = capsys.readouterr()
    assert f"| {rep} | 3 | 2 | 6.5 |" in out and str(bad) in err and "tuning.csv" in err
    assert main([str(bad)]) == 1
