"""The written report (experiments.report.write_report, CLI) and its figures (experiments.plots) on small
synthetic runs whose answers are computed by hand here, independently of experiments.metrics."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
import pytest

from bulkcapture import connection, write_pcap_us

from accessnet.addresses import V4, V6, low32
from experiments import plots, report
from experiments.metrics import levels_over_time, mean_ci95
from experiments.telemetry_reader import read_telemetry
from refmodel.constants import Aqm, Decision, Reason, TrafficClass
from refmodel.telemetry import Record, encode_frame

MS = 1_000_000
T0 = 1_795_364_758_917_594_589  # CLOCK_REALTIME ns, as in real runs
N_PKTS = 200  # 4 s of audio, one packet every 20 ms
TCP_PKT = 150  # TCP starts at packet 150's send time: 2 s of base-delay window before it
TCP_START = T0 + TCP_PKT * 20 * MS
KEPT = range(TCP_PKT, TCP_PKT + 20)  # flows end at packet 169's send time: 20 audio packets overlap
BASE_MS = 80
T975_1 = 12.706205  # Student t(0.975, 1 degree of freedom), from a table
BULK_START = T0 - 1_000 * MS  # a bulk flow with a capture (write_rep's bulk_ack) starts here
FIFO = "hspa-48p-fifo-iw10"
IWA = "hspa-48p-iwa-iw10"


def owd_ramp(step_ms: float) -> list[float | None]:
    """OWD 80 ms everywhere, 80 + step*i ms on the i-th packet of the TCP overlap."""
    owd: list[float | None] = [BASE_MS] * N_PKTS
    for i, k in enumerate(KEPT):
        owd[k] = BASE_MS + step_ms * i
    return owd


def write_rep(run: Path, case: str, k: int, owd_ms: list[float | None], *, aqm: str = "fifo", status: str = "ok",
              rtos: int = 0, telemetry: bool = False, tuning: bool = False, seed: int | None = None,
              burst_ms: int = 380, bulk: bool = False, pair: str | None = None, bulk_ack: int | None = None,
              meta_extra: dict | None = None) -> Path:
    """One replication directory as docs/data-formats.md describes it: 2 flows (burst 0) from TCP_START, the
    last ending ``burst_ms`` later (default: with packet 169); ``bulk``: a third flow (burst 1) that never
    completes, marked bulk in meta.json's plan; ``bulk_ack``: that flow starts at T0 - 1 s and client.pcap
    holds it, the client acknowledging ``bulk_ack`` more bytes every 20 ms from T0 - 0.78 s (bulk goodput over
    [T0 + 1 s, the audio's last send at T0 + 3.98 s - 2 s]: ACKs 90 to 139, 49 x bulk_ack bytes in 0.98 s = 400
    x bulk_ack bit/s); ``seed`` default 7 + k (the same for every AQM: paired); ``meta_extra`` replaces
    meta.json keys."""
    rep = run / case / f"rep{k}"
    rep.mkdir(parents=True)
    meta = {"status": status, "scenario": "web2", "case": case, "rep": k, "seed": 7 + k if seed is None else seed,
            "profile": {"name": "hspa", "rate_bps": 2e6, "delay_ms": 70.0, "server_delay_ms": 11.0},
            "buffer": {"packets": 48}, "aqm": aqm, "iw": 10, "cc": "cubic", "n_flows": 2,
            "versions": {"kernel": "6.1.0-test", "python": "3.11.2"}, "switch": "bmv2", "delay": "delayline",
            "audio_start_ns": T0, "tcp_start_ns": TCP_START, "duration_s": 4.0,
            "plan": {"bursts": [{"burst": 0, "start_s": 3.0, "flows": 2, "bytes": 62000}]
                     + ([{"burst": 1, "start_s": 3.0, "flows": 1, "bytes": 10**9, "bulk": True}] if bulk else [])}}
    if pair is not None:
        meta["pair"] = pair
    meta.update(meta_extra or {})  # e.g. another scenario or profile
    if status != "ok":
        meta["error"] = "switch died"
    (rep / "meta.json").write_text(json.dumps(meta))
    send = [T0 + i * 20 * MS for i in range(N_PKTS)]
    (rep / "audio_tx.csv").write_text("seq,send_ns\n" + "".join(f"{i},{s}\n" for i, s in enumerate(send)))
    (rep / "audio_rx.csv").write_text("seq,send_ns,recv_ns\n" + "".join(
        f"{i},{s},{s + round(d * MS)}\n" for i, (s, d) in enumerate(zip(send, owd_ms)) if d is not None))
    end = TCP_START + burst_ms * MS
    (rep / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n"
                                   f"0,0,{TCP_START},{end},62000,3,{rtos},1\n"
                                   f"1,0,{TCP_START + MS},{end - 80 * MS},62000,0,0,1\n"
                                   + (f"2,1,{BULK_START if bulk_ack else TCP_START},,90000,0,0,0\n" if bulk else ""))
    if bulk_ack:
        (rep / "client_flows_1.csv").write_text("flow,burst,start_ns,end_ns,bytes,completed,lport\n"
                                                f"0,1,{BULK_START},{T0},0,0,41000\n")
        grid = [(T0 - 800 * MS + i * 20 * MS, bulk_ack * i) for i in range(1, 151)]
        write_pcap_us(rep / "client.pcap", connection(BULK_START, 41000, 123_456, grid))
    if telemetry:
        write_telemetry(rep / "telemetry.pcap")
    if tuning:
        (rep / "tuning.csv").write_text(
            "t_ns,rate_bps,aqm,target_ns,codel_target_ns,audio_pkts,audio_p99_sojourn_ns,new_flows,windows,drops,"
            "reason\n"
            f"{TCP_START},2000000,iwa,27888000,6056000,5,,0,0,0,steady\n"
            f"{TCP_START + 100 * MS},2000000,iwa,16000000,6056000,5,45000000,2,7,3,target -11.1 ms\n")
    return rep


SWITCH_CLOCK0 = 5_000_000_000  # BMv2-style telemetry time: ns since the switch started


def tel_records(ip: int = 4) -> list[Record]:
    """Audio packets every 20 ms around the TCP start, two IWA surplus drops, one ECN mark, one bypass, between
    the lab's server and phone over IPv4 (``ip`` 6: the addresses' low 32 bits, as an IPv6 record holds them;
    ``write_telemetry`` sets their ipver)."""
    h = V4 if ip == 4 else V6
    tcp = {"sport": 80, "dport": 4000, "proto": 6}
    special = {25: dict(decision=Decision.DROP, reason=Reason.IWA_SURPLUS, cls=TrafficClass.TCP_START, **tcp),
               26: dict(decision=Decision.DROP, reason=Reason.IWA_SURPLUS, cls=TrafficClass.TCP_START, **tcp),
               30: dict(decision=Decision.MARK, reason=Reason.NONE, cls=TrafficClass.TCP_EST, **tcp),
               31: dict(decision=Decision.BYPASS, reason=Reason.UPSTREAM, cls=TrafficClass.TCP_CTRL, sport=4000,
                        dport=80, proto=6)}
    audio = dict(decision=Decision.PASS, reason=Reason.NONE, cls=TrafficClass.UDP, sport=5004, dport=5004, proto=17)
    recs = []
    for i in range(40):
        recs.append(Record(aqm=Aqm.IWA, tflags=0, length=94, seq=i, rand=0, ts_ns=SWITCH_CLOCK0 + i * 20 * MS,
                           sojourn_ns=i * MS, backlog_ns=i * MS, src=low32(h.server), dst=low32(h.client), s1=0,
                           s2=0, **special.get(i, audio)))
    return recs


def capture_ts_ns(i: int) -> int:
    """Record i reaches the capture 50 us (record 7: 30 us) after the switch stamped it, on the shared clock."""
    return TCP_START - 400 * MS + i * 20 * MS + (30_000 if i == 7 else 50_000)


def ipv6_frame(rec: Record) -> bytes:
    """The telemetry frame of an IPv6 packet's record: byte 45 of the record (ipver) 6 (docs/telemetry.md), set
    here by hand where ``Record`` has no field for it."""
    frame = encode_frame(rec)
    at = 14 + 45
    assert frame[at] == 0
    return frame[:at] + b"\x06" + frame[at + 1:]


def write_telemetry(path: Path, records: list[Record] | None = None, ipv6: set[int] = frozenset()) -> None:
    """The records (default ``tel_records()``) as telemetry.pcap; those whose seq is in ``ipv6`` as IPv6 ones."""
    with open(path, "wb") as f:
        w = dpkt.pcap.Writer(f, nano=True)
        for i, r in enumerate(tel_records() if records is None else records):
            w.writepkt(ipv6_frame(r) if r.seq in ipv6 else encode_frame(r), ts=capture_ts_ns(i) / 1e9)


def make_run(root: Path) -> Path:
    """fifo: rep0 and rep1 good, rep2 failed (meta.json); iwa: rep0 good with telemetry and tuning.csv,
    rep1 with a truncated audio_rx.csv."""
    run = root / "20260101-000000-web2"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"scenario": "web2", "argv": ["run.py", "--scenario", "web2"],
                                              "reps": 3, "switch": "auto",
                                              "file": {"description": "Audio + 2 web flows"}}))
    write_rep(run, FIFO, 0, owd_ramp(5), rtos=1)
    write_rep(run, FIFO, 1, owd_ramp(7))
    write_rep(run, FIFO, 2, owd_ramp(5), status="failed")
    write_rep(run, IWA, 0, [BASE_MS] * N_PKTS, aqm="iwa", telemetry=True, tuning=True)
    bad = write_rep(run, IWA, 1, [BASE_MS] * N_PKTS, aqm="iwa")
    text = (bad / "audio_rx.csv").read_text()
    (bad / "audio_rx.csv").write_text(text[: text.rindex(",") + 1])  # cut inside the last line's recv_ns
    return run


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A fresh synthetic run for tests that damage it."""
    return make_run(tmp_path)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, str]:
    """(run, report dir, report.md text) of the undamaged synthetic run, built once for the read-only tests."""
    root = tmp_path_factory.mktemp("built")
    run = make_run(root)
    out = root / "out"
    return run, out, report.write_report([run], out).read_text()


def table_row(md: str, case: str) -> list[str]:
    line = next(x for x in md.splitlines() if x.startswith(f"| {case} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def ci_text(values: list[float], digits: int = 1) -> str:
    """mean ± t(0.975, n-1) s / sqrt(n), by hand, for two values."""
    v = np.array(values, float)
    assert v.size == 2
    h = T975_1 * v.std(ddof=1) / math.sqrt(v.size)
    return f"{v.mean():.{digits}f} ± {h:.{digits}f}"


# ----------------------------------------------------------------------------- the report


def test_main_table_holds_the_hand_computed_numbers(built):
    _run, _out, md = built
    row = dict(zip(report.MAIN_HEADER, table_row(md, FIFO)))
    assert (row["AQM"], row["IW"], row["N"], row["reps"], row["failed"]) == ("fifo", "10", "2", "2", "1")
    # Overlap: packets 150..169, OWD 80 + 5i (rep0) and 80 + 7i (rep1), i = 0..19: medians 127.5 and 146.5 ms.
    assert row["OWD median (ms)"] == ci_text([127.5, 146.5])
    p99 = [80 + s * 18.81 for s in (5, 7)]  # linear interpolation at rank 0.99 * 19 = 18.81
    assert row["OWD p99 (ms)"] == ci_text(p99)
    # 40 ms jitter buffer on an 80 ms base: OWD > 120 ms is lost; one run each (level 5): i >= 9 (11 of 20)
    # and i >= 6 (14 of 20).
    assert row["level ≥ 2 @{jb} (%)"] == ci_text([55.0, 70.0])
    assert row["loss rate @{jb} (%)"] == ci_text([55.0, 70.0])
    assert row["good quality @{jb} (%)"] == ci_text([45.0, 30.0])
    assert row["burst completion (s)"] == "0.38 ± 0.00"  # first connect() to last byte: 19 * 20 ms
    assert row["RTOs per rep"] == ci_text([1, 0])
    assert row["frozen flows per rep"] == "– (2 not measured)"  # no server.pcap in these replications
    iwa = dict(zip(report.MAIN_HEADER, table_row(md, IWA)))
    assert (iwa["reps"], iwa["failed"]) == ("1", "1")
    assert iwa["OWD median (ms)"] == "80.0" and iwa["loss rate @{jb} (%)"] == "0.0"  # one rep: no ± part
    # Setup section from meta.json and run.json.
    assert "hspa: 2 Mbit/s, one-way delay 70.0 ms (+11.0 ms server side)" in md
    assert "- buffer: 48 packets" in md and "kernel 6.1.0-test" in md and "3 replications asked" in md
    assert "3 read, 2 failed, over 2 cases" in md


def test_ipdv_table_pools_replications(built):
    _run, _out, md = built
    sec = md[md.index("## IPDV"):md.index("## Failed")]
    row = next(x for x in sec.splitlines() if x.startswith("| fifo |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # 19 pairs of +5 ms (rep0) and 19 of +7 ms (rep1): min 5, median 6 (between ranks 18 and 19), max 7 ms.
    assert cells[:6] == ["fifo", "10", "2", "2", "38", "0.0050"]
    assert cells[7] == "0.0060" and cells[-1] == "0.0070"


def test_every_figure_exists_as_png_and_svg(built):
    _run, out, md = built
    pngs = re.findall(r"!\[[^\]]*\]\((figures/[^)]+\.png)\)", md)
    names = {Path(p).stem for p in pngs}
    assert {"owd_cdf", "loss_vs_jitter", "levels_over_time_40ms", "good_quality_vs_jitter", "burst_completion_cdf",
            f"timeline_{IWA}_rep0"} <= names
    for p in pngs:
        png, svg = out / p, (out / p).with_suffix(".svg")
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", p
        assert b"<svg" in svg.read_bytes()[:2000], svg
    assert "controller targets and flow starts per period (tuning.csv)" in md  # the iwa timeline's controller panels


def test_failed_reps_are_listed_with_the_file_that_broke(built):
    run, _out, md = built
    failed = md[md.index("## Failed replications"):md.index("## Figures")]
    assert f"`{FIFO}/rep2`" in failed and "switch died" in failed
    bad = run / IWA / "rep1" / "audio_rx.csv"
    assert f"`{IWA}/rep1`: {bad}: line {N_PKTS + 1}: column 'recv_ns'" in failed
    # The fifo case has no telemetry.pcap: its timeline is not drawn, and the report says why, naming the file.
    assert f"No switch timeline for fifo IW10 N2 ({run / FIFO / 'rep0'}): {run / FIFO / 'rep0' / 'telemetry.pcap'}: " \
           "missing" in md


@pytest.mark.parametrize("damage,needle", [
    (lambda rep: (rep / "flows.csv").unlink(), "flows.csv: missing"),
    (lambda rep: (rep / "audio_tx.csv").write_text(""), "audio_tx.csv: empty or unreadable"),
    (lambda rep: (rep / "meta.json").write_text('{"status": "ok", "ca'), "meta.json: not JSON (truncated?)"),
])
def test_a_missing_or_truncated_file_fails_its_rep_by_name(run: Path, tmp_path: Path, damage, needle):
    damage(run / FIFO / "rep1")
    md = report.write_report([run], tmp_path / "out").read_text()
    failed = md[md.index("## Failed replications"):md.index("## Figures")]
    assert f"{run / FIFO / 'rep1'}/{needle}" in failed
    assert table_row(md, FIFO)[4:6] == ["1", "2"]  # 1 good rep, 2 failed: the broken one is never averaged


def test_a_truncated_telemetry_capture_is_named_not_plotted(run: Path, tmp_path: Path):
    pcap = run / IWA / "rep0" / "telemetry.pcap"
    pcap.write_bytes(pcap.read_bytes()[:-10])
    md = report.write_report([run], tmp_path / "out").read_text()
    assert f"{pcap}: truncated capture" in md
    assert f"timeline_{IWA}_rep0" not in md


def test_unfinished_tmp_replication_is_listed(run: Path, tmp_path: Path):
    (run / FIFO / "rep3.tmp").mkdir()
    md = report.write_report([run], tmp_path / "out").read_text()
    assert f"`{FIFO}/rep3.tmp`" in md and "unfinished replication" in md


def test_summary_table_still_works(built):
    run = built[0]
    text = report.summary_table(run)
    assert text.splitlines()[0].split()[:2] == ["link", "aqm"] and "FAILED replications (2)" in text
    fifo = next(x for x in text.splitlines() if x.split()[1] == "fifo")
    assert fifo.split()[:4] == ["hspa-48p", "fifo", "10", "2"] and "137.0" in fifo  # (127.5 + 146.5) / 2


# ----------------------------------------------------------------------------- CLI


def test_cli_default_output_and_help(run: Path, capsys):
    assert report.main([str(run)]) == 0
    out = capsys.readouterr()
    assert out.out.strip() == str(run / "report" / "report.md") and (run / "report" / "report.md").exists()
    assert "2 replication(s) failed" in out.err
    with pytest.raises(SystemExit) as e:
        report.main(["--help"])
    assert e.value.code == 0 and "RUN_DIR" in capsys.readouterr().out


def test_cli_bad_input(tmp_path: Path, run: Path, capsys):
    assert report.main([str(tmp_path / "nope")]) == 1
    assert f"{tmp_path / 'nope'}: no such directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert report.main([str(tmp_path / "empty")]) == 1
    assert "no replication directories" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        report.main([str(run), str(run)])  # several run dirs need --out
    assert e.value.code == 2


def test_cli_all_failed_still_writes_the_failed_list(tmp_path: Path, capsys):
    run = tmp_path / "r"
    write_rep(run, FIFO, 0, owd_ramp(5), status="failed")
    assert report.main([str(run), "--out", str(tmp_path / "o")]) == 1
    md = (tmp_path / "o" / "report.md").read_text()
    assert f"`{FIFO}/rep0`" in md and "switch died" in md
    assert "no replication could be read" in capsys.readouterr().err


# ----------------------------------------------------------------------------- pieces


def test_bmv2_telemetry_is_put_on_the_shared_clock(built):
    run = built[0]
    pcap = run / IWA / "rep0" / "telemetry.pcap"
    tel, _ = read_telemetry(pcap)
    off = report.capture_offset_ns(pcap, tel)
    # Earliest capture-minus-switch time: record 7's 30 us latency (1 us rounding of float pcap timestamps).
    assert off == pytest.approx(capture_ts_ns(7) - (SWITCH_CLOCK0 + 7 * 20 * MS), abs=1000)
    realtime = tel.assign(ts_ns=tel["ts_ns"] + off)
    assert report.capture_offset_ns(pcap, realtime) == 0  # already on the shared clock: left alone


def test_level_bins_widen_with_few_replications():
    assert report.lot_bin_s(50) == 0.02 and report.lot_bin_s(20) == 0.02
    assert report.lot_bin_s(10) == 0.04 and report.lot_bin_s(2) == 0.1


def test_fmt_ci_counts_missing_values():
    assert report.fmt_ci(mean_ci95([1.0, None]), 1, 2, "incomplete") == "1.00 (1 incomplete)"
    assert report.fmt_ci(mean_ci95([None]), missing="incomplete") == "– (1 incomplete)"
    assert report.fmt_ci(mean_ci95([])) == "–"


def test_plot_functions_write_png_and_svg(tmp_path: Path):
    """Each plot function on hand-made data: both files written, non-empty."""
    ci = {jb: mean_ci95([0.5, 0.6]) for jb in (20, 40, 60)}
    lot = levels_over_time(np.array([0.0, 0.01, 0.03, 0.05]), np.array([0, 2, 5, 1]), 0.02)
    tel = pd.DataFrame([r.__dict__ for r in tel_records()])
    tuning = pd.DataFrame({"t_ns": [0, 10**8], "target_ns": [2 * 10**7, 10**7], "codel_target_ns": [6 * MS, 6 * MS],
                           "new_flows": [0, 6], "windows": [0, 12]})
    written = [
        *plots.owd_cdf({"a": np.array([1e6, 2e6, np.nan])}, tmp_path),
        *plots.loss_vs_jitter({"a": ci}, tmp_path), *plots.good_quality_vs_jitter({"a": ci}, tmp_path),
        *plots.levels_over_time({"a": lot, "b": lot.iloc[:0]}, tmp_path, 40),
        *plots.completion_cdf({"a": [1.0, 2.0]}, tmp_path, {"a": 1}),
        *plots.switch_timeline(tel, SWITCH_CLOCK0, tmp_path, "t1", "title", tuning),
        *plots.switch_timeline(tel, SWITCH_CLOCK0, tmp_path, "t2", "title"),
        *plots.switch_timeline(tel, SWITCH_CLOCK0, tmp_path, "t3", "title", tuning[["t_ns", "target_ns", "new_flows"]]),
    ]
    assert len(written) == 16 and {p.suffix for p in written} == {".png", ".svg"}
    assert all(p.stat().st_size > 1000 for p in written)


def test_upstream_records_are_never_taken_for_audio(run):
    """IWA's telemetry also holds upstream packets (decision BYPASS): one to the audio port, between two audio
    records, must change neither the single-bottleneck match nor the tuning read."""
    from dataclasses import replace

    from experiments.bottleneck_check import summary
    rep = run / IWA / "rep0"
    before = summary(rep)
    recs = tel_records()
    up = replace(recs[10], decision=Decision.BYPASS, reason=Reason.UPSTREAM, sojourn_ns=0, backlog_ns=0)
    window = replace(recs[31], reason=Reason.IWA_WINDOW)  # an ACK whose window IWA rewrote
    recs = [replace(r, seq=i) for i, r in enumerate([*recs[:10], up, *recs[10:31], window, *recs[32:]])]
    write_telemetry(rep / "telemetry.pcap", recs)
    assert len(read_telemetry(rep / "telemetry.pcap")[0]) == 41
    after = summary(rep)
    assert after == before and after["all"]["packets"] > 30


def test_an_ipv6_runs_audio_is_matched_by_the_phones_ipv6_address(run):
    """A run over IPv6 (meta.json ip 6): its audio records are IPv6 ones (ipver 6, dst the low 32 bits of
    fd00::2). The same records as IPv4 ones (ipver 0) are not its audio, nor IPv4 records whose address is
    fd00::2's low 32 bits (0.0.0.2); and an IPv4 run is matched by 10.0.0.2 only."""
    from experiments.bottleneck_check import summary
    rep = run / IWA / "rep0"
    v4 = summary(rep)
    meta = json.loads((rep / "meta.json").read_text())
    (rep / "meta.json").write_text(json.dumps({**meta, "ip": 6}))
    all6 = {r.seq for r in tel_records(6)}
    write_telemetry(rep / "telemetry.pcap", tel_records(6), ipv6=all6)
    tel, _ = read_telemetry(rep / "telemetry.pcap")
    assert set(tel["ipver"]) == {6} and set(tel["dst"]) == {2}
    assert summary(rep) == v4  # the same match as the IPv4 run's
    write_telemetry(rep / "telemetry.pcap", tel_records(6))  # the IPv6 addresses' bits in IPv4 records
    with pytest.raises(report.MetricsError, match="no audio telemetry records"):
        summary(rep)
    (rep / "meta.json").write_text(json.dumps(meta))  # the IPv4 run: 0.0.0.2 is not its phone either
    with pytest.raises(report.MetricsError, match="no audio telemetry records"):
        summary(rep)
    write_telemetry(rep / "telemetry.pcap")
    assert summary(rep) == v4


def test_a_lost_telemetry_record_stops_the_match_instead_of_shifting_it(run):
    """Audio records are paired with audio packets by position: a record missing from the capture (here
    audio record 12) would pair every later packet with its successor's record. Matching stops at the gap."""
    from experiments.bottleneck_check import record_gaps, sojourn_errors_ns, summary
    rep = run / IWA / "rep0"
    before = sojourn_errors_ns(rep)
    write_telemetry(rep / "telemetry.pcap", [r for r in tel_records() if r.seq != 12])
    after = sojourn_errors_ns(rep)
    assert len(after) == 12 and list(after) == list(before[:12])  # the packets before the gap, unchanged
    assert summary(rep)["records_missing"] == 1
    assert record_gaps([3, 4, 7, 8, 10]) == (3, 5) and record_gaps([1, 2, 3]) == (0, None)


def test_single_bottleneck_section(built):
    """The synthetic iwa rep0 has a constant OWD while its telemetry predicts sojourns of 0..39 ms: the check
    must show errors far over 1 ms for the queued packets (and none for the fifo case, which has no telemetry)."""
    from experiments.bottleneck_check import summary
    run, _, md = built
    section = md[md.index("## Single-bottleneck check"):md.index("## Failed replications")]
    rows = {r[0]: r[1:] for r in (
        [c.strip() for c in x.strip("|").split("|")] for x in section.splitlines() if x.startswith("| hspa"))}
    assert rows[FIFO][:3] == ["fifo", "10", "2"] and rows[FIFO][3:] == ["0", "–", "–", "–", "–", "–"]
    s = summary(run / IWA / "rep0")
    iwa = rows[IWA]
    assert iwa[3] == "1" and iwa[6] == str(s["queued"]["packets"]) and s["queued"]["packets"] > 10
    assert float(iwa[7]) == pytest.approx(s["queued"]["p99_ms"], abs=0.005) and float(iwa[7]) > 30


def paired_rows(md: str) -> dict[tuple[str, str], dict[str, str]]:
    """The paired-differences table by (pairing unit, AQM), each row by header."""
    start = md.index("## Paired differences against FIFO")
    section = md[start:md.index("\n## ", start)]
    lines = [x for x in section.splitlines() if x.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (c.strip() for c in x.strip("|").split("|")))) for x in lines[1:]]
    return {(r["pairing unit"], r["AQM"]): r for r in rows}


def test_paired_differences_against_fifo(built):
    """iwa rep0 pairs with fifo rep0 (same seed); iwa rep1 is unreadable and fifo rep2 failed, so the pairs are
    k = 0 alone (n = 1: no interval) and fifo rep1 is left out. Old case names: the unit is the name less the
    AQM."""
    _run, _out, md = built
    row = paired_rows(md)[("hspa-48p-iw10", "iwa")]
    assert (row["n"], row["left out"], row["seeds"]) == ("1", "1", "same")
    # constant 80 ms vs fifo rep0's ramp 80 + 5i: p99 80 - (80 + 5 * 18.81); level >= 2: 0 - 55 %
    p99, half = row["Δ OWD p99 (ms)"].split(" ± ")
    assert float(p99) == pytest.approx(-5 * 18.81, abs=0.051) and half == "n/a"  # one rounded decimal
    assert row["Δ level ≥ 2 @40 ms (points)"] == "-55.0 ± n/a"
    assert row["Δ good quality @40 ms (points)"] == "+55.0 ± n/a"
    assert row["Δ burst completion (s)"] == "+0.00 ± n/a" and row["Δ RTOs per rep"] == "-1.0 ± n/a"
    assert ("hspa-48p-iw10", "fifo") not in paired_rows(md)


def test_replications_with_other_seeds_are_marked_unpaired(run):
    """Differing seeds (runs before paired seeds) still give differences, but the row says UNPAIRED."""
    meta = run / IWA / "rep0" / "meta.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "seed": 999}))
    cases, _ = report.load_cases([run])
    (d,) = report.paired_diffs(cases)
    assert (d["pairs"], d["seeds_differ"]) == (1, 1) and d["ci"]["level2plus"]["mean"] == pytest.approx(-0.55)
    assert report.seeds_cell(d) == "UNPAIRED (1 of 1 differ)"


T975_2 = 4.302653  # Student t(0.975, 2 degrees of freedom), from a table
UNIT = "web2-hspa-48p-iw10"


def write_rtc_logs(rep: Path, suffix: str = "", received: int = 100, owd_ns: int = 60_000_000) -> None:
    """A real-time flow's logs (rtc_tx{suffix}.csv / rtc_rx{suffix}.csv): 100 packets of 1000 B, one every
    10 ms from 10**18 ns (0.99 s), the first ``received`` of them arriving ``owd_ns`` later."""
    t0 = 10**18
    (rep / f"rtc_tx{suffix}.csv").write_text("seq,send_ns,size,rate_bps\n" + "".join(
        f"{i},{t0 + i * 10_000_000},1000,800000\n" for i in range(100)))
    (rep / f"rtc_rx{suffix}.csv").write_text("seq,send_ns,recv_ns,size\n" + "".join(
        f"{i},{t0 + i * 10_000_000},{t0 + i * 10_000_000 + owd_ns},1000\n" for i in range(received)))


def lost_at_end(n_lost: int, burst_ms: int = 380) -> list[float | None]:
    """OWD 80 ms, the last n_lost packets of the overlap (burst_ms / 20 + 1 packets) never arrive: one loss
    period of n_lost packets, so the level >= 2 share at any jitter buffer is n_lost / overlap (n_lost >= 2)."""
    owd: list[float | None] = [BASE_MS] * N_PKTS
    last = TCP_PKT + burst_ms // 20
    for k in range(last - n_lost + 1, last + 1):
        owd[k] = None
    return owd


def paired_run(root: Path) -> Path:
    """One pairing unit (format-2 names, meta.json "pair"): fifo reps 0-3 ok and 4 failed; iwa 0-2 ok, 3 failed,
    4 ok; codel 0-1 ok with other seeds than fifo's; red only failed. Another unit holds iwa alone."""
    run = root / "paired"
    case = lambda aqm, unit="web2-hspa-48p": f"{unit}-{aqm}-iw10"  # noqa: E731
    for k, (lost, burst, rtos) in enumerate([(6, 380, 2), (8, 400, 1), (4, 380, 0), (5, 380, 0)]):
        write_rep(run, case("fifo"), k, lost_at_end(lost, burst), burst_ms=burst, rtos=rtos, pair=UNIT)
    write_rep(run, case("fifo"), 4, lost_at_end(0), status="failed", pair=UNIT)
    for k, (lost, burst, rtos) in enumerate([(0, 380, 0), (2, 420, 0), (3, 380, 1)]):
        write_rep(run, case("iwa"), k, lost_at_end(lost, burst), aqm="iwa", burst_ms=burst, rtos=rtos, pair=UNIT)
    write_rep(run, case("iwa"), 3, lost_at_end(0), aqm="iwa", status="failed", pair=UNIT)
    write_rep(run, case("iwa"), 4, lost_at_end(0), aqm="iwa", pair=UNIT)
    for k in (0, 1):
        write_rep(run, case("codel"), k, lost_at_end(2), aqm="codel", seed=100 + k, pair=UNIT)
    write_rep(run, case("red"), 0, lost_at_end(0), aqm="red", status="failed", pair=UNIT)
    write_rep(run, case("iwa", "web2-hspa-24p"), 0, lost_at_end(0), aqm="iwa", pair="web2-hspa-24p-iw10")
    return run


def hand_ci(diffs: list[float], scale: float, digits: int) -> str:
    """mean ± t(0.975, 2) s / sqrt(3), by hand, signed."""
    v = np.array(diffs, float) * scale
    h = T975_2 * v.std(ddof=1) / math.sqrt(3)
    return f"{v.mean():+.{digits}f} ± {h:.{digits}f}"


def test_paired_differences_over_reps_ok_on_both_sides(tmp_path: Path):
    run = paired_run(tmp_path)
    md = report.write_report([run], tmp_path / "out").read_text()
    rows = paired_rows(md)
    iwa = rows[(UNIT, "iwa")]
    # k = 0, 1, 2 only: iwa rep3 and fifo rep4 failed; the ok iwa rep4 and fifo rep3 are left out.
    assert (iwa["n"], iwa["left out"], iwa["seeds"]) == ("3", "2", "same")
    level = [0 - 6 / 20, 2 / 22 - 8 / 21, 3 / 20 - 4 / 20]  # overlap: burst_ms / 20 + 1 packets
    assert iwa["Δ level ≥ 2 @40 ms (points)"] == hand_ci(level, 100, 1)
    assert iwa["Δ good quality @40 ms (points)"] == hand_ci([-x for x in level], 100, 1)
    assert iwa["Δ burst completion (s)"] == hand_ci([0.0, 0.02, 0.0], 1, 2)
    assert iwa["Δ RTOs per rep"] == hand_ci([0 - 2, 0 - 1, 1 - 0], 1, 1)
    # codel's seeds differ from fifo's: differences are shown, the row is marked.
    codel = rows[(UNIT, "codel")]
    assert codel["seeds"] == "UNPAIRED (2 of 2 differ)" and codel["n"] == "2"
    assert codel["Δ level ≥ 2 @40 ms (points)"] == hand_ci_2([2 / 20 - 6 / 20, 2 / 20 - 8 / 21], 100, 1)
    # red failed everywhere: a row without pairs; the unit without fifo has no row.
    red = rows[(UNIT, "red")]
    assert (red["n"], red["left out"], red["Δ level ≥ 2 @40 ms (points)"], red["seeds"]) == ("0", "4", "–", "–")
    assert not [k for k in rows if k[0] == "web2-hspa-24p-iw10"]


def hand_ci_2(diffs: list[float], scale: float, digits: int) -> str:
    """mean ± t(0.975, 1) s / sqrt(2), by hand, signed."""
    v = np.array(diffs, float) * scale
    return f"{v.mean():+.{digits}f} ± {T975_1 * v.std(ddof=1) / math.sqrt(2):.{digits}f}"


def test_paired_burst_differences_count_incomplete_and_skip_bulk(tmp_path: Path):
    """An incomplete burst on one side is a counted missing difference; a bulk flow is no burst at all."""
    run = tmp_path / "r"
    for aqm in ("fifo", "iwa"):
        for k in (0, 1):
            write_rep(run, f"web6-bulk-hspa-48p-{aqm}-iw10", k, lost_at_end(0), aqm=aqm, bulk=True,
                      burst_ms=380 + 40 * k * (aqm == "iwa"))
    rep = run / "web6-bulk-hspa-48p-iwa-iw10" / "rep1"
    flows = (rep / "flows.csv").read_text().replace(",62000,0,0,1\n", ",62000,0,0,0\n")  # flow 1 incomplete
    (rep / "flows.csv").write_text(flows)
    (d,) = report.paired_diffs(report.load_cases([run])[0])
    assert d["ci"]["burst_s"]["n"] == 1 and d["ci"]["burst_s"]["n_missing"] == 1
    assert report.fmt_diff(d["ci"]["burst_s"], 1, 2, "incomplete") == "+0.00 ± n/a (1 incomplete)"


def test_bulk_flows_are_no_bursts(tmp_path: Path):
    """A bulk flow never completes: the burst completion time is the web burst's alone, not "incomplete"."""
    run = tmp_path / "r"
    for k in (0, 1):
        write_rep(run, "web6-bulk-hspa-48p-fifo-iw10", k, owd_ramp(5), bulk=True, burst_ms=380 + 20 * k)
    c = report.load_cases([run])[0][0]
    assert report.bulk_bursts(c.reps[0].meta) == {1}
    st = report.case_stats(c)
    assert st["burst_s"]["mean"] == pytest.approx(0.39) and st["burst_s"]["n_missing"] == 0
    # Without the plan (older runs) the bulk burst is an incomplete burst, as before.
    assert report.rep_scalars(c.reps[0].summary)["burst_s"] is None


# ----------------------------------------------------------------------------- IWA's held-out table


def st(level: list, burst: list, rtos: list, bulk: list = ()) -> dict:
    """aqm_stats as experiments.iwa_table makes them, from per-replication values."""
    return {"level2plus": mean_ci95(level), "burst_s": mean_ci95(burst), "rtos": mean_ci95(rtos),
            "bulk_bps": mean_ci95(bulk)}


def test_iwa_checks_against_the_issue_targets():
    from experiments.iwa_table import iwa_checks
    base = {"fifo": st([0.30, 0.40], [2.0, 2.0], [1, 1]), "red": st([0.20], [1.9], [1]),
            "codel": st([0.04, 0.06], [2.5], [3])}  # the best other level >= 2: codel's 5 %; the fewest RTOs: 1
    ok = iwa_checks({**base, "iwa": st([0.059], [2.19], [1])}, has_bulk=False)
    assert ok == {"level": "pass", "burst": "pass", "RTOs": "pass", "bulk": "n/a", "verdict": "pass"}
    # Each target failed alone: 1.1 points over the best, 1.105 x FIFO's burst, more RTOs than the best peer.
    assert iwa_checks({**base, "iwa": st([0.061], [2.19], [1])}, False)["level"] == "FAIL"
    worse = iwa_checks({**base, "iwa": st([0.059], [2.21], [1])}, False)
    assert worse["burst"] == "FAIL" and worse["verdict"] == "FAIL"
    assert iwa_checks({**base, "iwa": st([0.059], [2.19], [1, 2])}, False)["RTOs"] == "FAIL"
    # RTOs against the best peer, not FIFO: one where FIFO has three but CoDel none fails.
    assert iwa_checks({"fifo": st([0.3], [2.0], [3]), "codel": st([0.3], [2.0], [0]),
                       "iwa": st([0.0], [2.0], [1])}, False)["RTOs"] == "FAIL"
    # The burst against 1.10 x the larger of FIFO's and the bound (issue 33): 2.30 s passes beside a bound of
    # 2.2 s (2.42 s allowed), fails without it (2.2 s allowed) and beside a bound below FIFO's.
    assert iwa_checks({**base, "iwa": st([0.059], [2.30], [1])}, False, bound_s=2.2)["burst"] == "pass"
    assert iwa_checks({**base, "iwa": st([0.059], [2.30], [1])}, False)["burst"] == "FAIL"
    assert iwa_checks({**base, "iwa": st([0.059], [2.30], [1])}, False, bound_s=1.5)["burst"] == "FAIL"
    # A faster mean does not hide an incomplete burst FIFO did not have.
    assert iwa_checks({**base, "iwa": st([0.0, 0.0], [1.0, None], [0, 0])}, False)["burst"] == "FAIL"
    # Bulk throughput not measured (no replication with client.pcap): the unit cannot pass, only fail or stay
    # incomplete.
    bulk = iwa_checks({**base, "iwa": st([0.059], [2.19], [1])}, has_bulk=True)
    assert bulk["bulk"] == "not measured" and bulk["verdict"] == "incomplete"
    # Measured: IWA's mean bulk goodput against 0.95 x FIFO's (2.0 Mbit/s): 1.9 Mbit/s (a tie) passes.
    fifo_bulk = {**base, "fifo": st([0.30, 0.40], [2.0, 2.0], [1, 1], [1.9e6, 2.1e6])}
    tie = iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [1.9e6, None])}, has_bulk=True)
    assert tie["bulk"] == "pass" and tie["verdict"] == "pass"  # the one not measured is left out
    low = iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [1.85e6, 1.95e6 - 2])}, has_bulk=True)
    assert low["bulk"] == "FAIL" and low["verdict"] == "FAIL"
    edge = iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [1.81e6])}, True, bulk_share=0.90)
    assert edge["bulk"] == "pass"  # 90.5 % of FIFO's: enough where the jitter buffer is raised (EDGE)
    assert iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [1.79e6])}, True, bulk_share=0.90)["bulk"] == "FAIL"
    assert iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [None])}, True)["bulk"] == "not measured"
    assert iwa_checks({**base, "iwa": st([0.059], [2.19], [1], [2e6])}, True)["bulk"] == "not measured"  # FIFO's
    assert iwa_checks({"red": base["red"], "iwa": st([0.059], [2.19], [1], [2e6])}, True)["bulk"] == "-"  # no FIFO
    assert iwa_checks({**fifo_bulk, "iwa": st([0.059], [2.19], [1], [1e6])}, False)["bulk"] == "n/a"
    # Partial data: no fifo (level is still checked against the others), no iwa, a workload without bursts.
    nofifo = iwa_checks({"red": base["red"], "iwa": st([0.205], [2.0], [0])}, False)
    assert (nofifo["level"], nofifo["burst"], nofifo["RTOs"], nofifo["verdict"]) == ("pass", "-", "pass",
                                                                                     "incomplete")
    assert set(iwa_checks(base, False).values()) == {"-", "n/a"} and iwa_checks(base, False)["verdict"] == "-"
    audio_bulk = iwa_checks({"fifo": st([0.1], [], [0]), "iwa": st([0.1], [], [0])}, False)
    assert audio_bulk["burst"] == "n/a" and audio_bulk["verdict"] == "pass"


def unit_row(lines: list[str], unit: str) -> dict[str, str]:
    rows = [x for x in lines if x.startswith("| ")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    line = next(x for x in rows if x.startswith(f"| {unit} |"))
    return dict(zip(header, (c.strip() for c in line.strip("|").split("|"))))


def test_iwa_table_from_a_partial_run(tmp_path: Path):
    from experiments.iwa_table import iwa_table_md
    run = paired_run(tmp_path)
    # A third unit where IWA has more RTOs than FIFO.
    for aqm, rtos in (("fifo", 0), ("iwa", 2)):
        write_rep(run, f"web2-hspa-12p-{aqm}-iw10", 0, lost_at_end(0), aqm=aqm, rtos=rtos, pair="web2-hspa-12p-iw10")
    lines = iwa_table_md(report.load_cases([run])[0])
    row = unit_row(lines, UNIT)
    assert row["reps"] == "fifo 4 (+1 failed), red 0 (+1 failed), codel 2, iwa 4 (+1 failed)"
    assert row["fifo level ≥ 2 (%)"] == f"{100 * (6 / 20 + 8 / 21 + 4 / 20 + 5 / 20) / 4:.1f}"
    assert row["iwa level ≥ 2 (%)"] == f"{100 * (0 + 2 / 22 + 3 / 20 + 0) / 4:.1f}"
    assert (row["fifo burst (s)"], row["iwa burst (s)"]) == ("0.39", "0.39")  # (0.38*3 + 0.40) / 4, (0.38*3 + 0.42) / 4
    assert (row["fifo RTOs"], row["iwa RTOs"]) == ("0.8", "0.2")
    assert [row[f"red {k}"] for k in ("level ≥ 2 (%)", "burst (s)", "RTOs")] == ["-", "-", "-"]  # all failed
    assert [row[f"IWA {k}"] for k in ("level", "burst", "RTOs", "bulk")] + [row["verdict"]] == \
        ["pass", "pass", "FAIL", "n/a", "FAIL"]  # 6.0 % against codel's 10 %: better; 0.2 RTOs against its 0
    assert row["IWA bulk (% of FIFO)"] == "n/a"  # no bulk flow
    from experiments.iwa_bound import budget_bound_s
    bound = budget_bound_s(2e6, 0.162, 2, 62000, 0.040)  # write_rep's 2 x 62 kB, the queue the whole 40 ms budget
    assert row["burst bound (s)"] == f"{bound:.2f}" and 1.0 < bound < 2.0
    alone = unit_row(lines, "web2-hspa-24p-iw10")  # iwa without any other AQM
    assert alone["fifo level ≥ 2 (%)"] == "-" and alone["IWA level"] == "-" and alone["verdict"] == "incomplete"
    rtos = unit_row(lines, "web2-hspa-12p-iw10")
    assert (rtos["IWA RTOs"], rtos["verdict"], rtos["codel RTOs"]) == ("FAIL", "FAIL", "-")


def test_burst_bound_only_for_bursts_on_an_idle_link(tmp_path: Path):
    from experiments.iwa_table import unit_bound
    run = paired_run(tmp_path)
    cases = {c.aqm: c for c in report.load_cases([run])[0] if report.case_pair(c) == UNIT}
    assert unit_bound(cases)[1] not in ("n/a", "-")
    for plan in ({"bursts": [], "workloads": {"users": {"count": 5}}},
                 {"bursts": [{"burst": 0, "flows": 1, "bytes": 372000, "quic": True, "streams": 6}]},
                 {"bursts": [{"burst": 0, "flows": 6, "bytes": 62000}, {"burst": 1, "flows": 1, "bytes": 10**9,
                                                                        "bulk": True}]}):
        for c in cases.values():
            for r in c.reps:
                r.meta["plan"] = plan
        assert unit_bound(cases)[1] == "n/a"
    for c in cases.values():
        for r in c.reps:
            r.meta["profile"] = {"name": "broken"}
            r.meta["plan"] = {"bursts": [{"burst": 0, "flows": 6, "bytes": 62000}]}
    assert unit_bound(cases)[1] == "-"


@pytest.mark.parametrize("users", [{"count": 2}, {"count": 2, "mode": "keepalive", "objects": 6, "connections": 6},
                                   {"count": 2, "mode": "h2", "objects": 6}])
def test_web_users_are_judged_on_the_pages_every_aqm_completed(tmp_path: Path, users: dict):
    """users5: every user's last page is cut off by the run's end under every AQM, so there is no burst time;
    the pages completed under every AQM of the replication are compared instead (the k-th page of a user has
    the same size under every AQM). The same for users on kept-alive or HTTP/2-like connections (meta.json's
    plan says the mode; flows.csv has a row per page as for fresh users)."""
    from experiments.iwa_table import iwa_table_md, users_completion
    run = tmp_path / "users"
    # (user, start s, duration s or None): fifo and iwa, the same pages in another order of starts
    pages = {"fifo": [(0, 0.0, 1.0), (0, 2.0, 2.0), (1, 0.5, 3.0), (1, 4.0, None)],
             "iwa": [(0, 0.0, 1.1), (0, 2.0, None), (1, 0.5, 3.4), (1, 4.5, None)]}
    for aqm, rows in pages.items():
        rep = write_rep(run, f"users5-hspa-48p-{aqm}-iw10", 0, lost_at_end(0), aqm=aqm, pair="users5-hspa-48p-iw10",
                        meta_extra={"scenario": "users5", "plan": {"bursts": [], "workloads": {"users": users}}})
        (rep / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n" + "".join(
            f"{i},{u},{TCP_START + round(t * 1e9)},{'' if d is None else TCP_START + round((t + d) * 1e9)},"
            f"100000,0,0,{0 if d is None else 1}\n" for i, (u, t, d) in enumerate(rows)))
    cases = report.load_cases([run])[0]
    by_aqm = {str(c.aqm): c for c in cases}
    times = users_completion(by_aqm)
    assert times == {"fifo": [pytest.approx(2.0)], "iwa": [pytest.approx(2.25)]}  # pages (0, 0) and (1, 0)
    row = unit_row(iwa_table_md(cases), "users5-hspa-48p-iw10")
    assert (row["fifo burst (s)"], row["iwa burst (s)"], row["IWA burst"]) == ("2.00", "2.25", "FAIL")
    assert row["burst bound (s)"] == "n/a"
    web = paired_run(tmp_path / "web")
    assert all(users_completion({str(c.aqm): c}) is None for c in report.load_cases([web])[0])


def test_iwa_table_cli_writes_between_markers(tmp_path: Path, capsys):
    from experiments import iwa_table
    run = paired_run(tmp_path)
    doc = tmp_path / "iwa-results.md"
    doc.write_text(f"# IWA\n\nbefore\n{iwa_table.BEGIN}\nold table\n{iwa_table.END}\nafter\n")
    assert iwa_table.main([str(run), "--out", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith("# IWA\n\nbefore\n<!-- iwa-table begin -->")
    assert text.endswith("<!-- iwa-table end -->\nafter\n")
    assert "old table" not in text and f"| {UNIT} |" in text and "11 replications read, 3 failed" in text
    assert iwa_table.main([str(run), "--out", str(doc)]) == 0 and doc.read_text() == text  # regenerated: same
    plain = tmp_path / "plain.md"
    plain.write_text("a document without markers\n")
    assert iwa_table.main([str(run), "--out", str(plain)]) == 1
    assert plain.read_text() == "a document without markers\n" and "without the lines" in capsys.readouterr().err
    assert iwa_table.main([str(run)]) == 0 and f"| {UNIT} |" in capsys.readouterr().out
    assert iwa_table.main([str(tmp_path / "nope")]) == 1 and "no such directory" in capsys.readouterr().err


def test_report_holds_the_held_out_section(built):
    md = built[2]
    section = md[md.index("## Held-out evaluation of IWA"):md.index("## IPDV")]
    row = unit_row(section.splitlines(), "hspa-48p-iw10")
    # iwa rep0 (0 % level >= 2, 0.38 s, 0 RTOs) against fifo's two reps (55 / 70 %, 0.38 s, 1 / 0 RTOs).
    assert (row["fifo level ≥ 2 (%)"], row["iwa level ≥ 2 (%)"], row["fifo RTOs"]) == ("62.5", "0.0", "0.5")
    assert row["verdict"] == "pass" and row["reps"] == "fifo 2 (+1 failed), iwa 1 (+1 failed)"


# ----------------------------------------------------------------------------- bulk throughput in the tables


def bulk_run(root: Path) -> Path:
    """web6-bulk units with captures (write_rep's bulk_ack: 400 x bulk_ack bit/s): 48p: fifo 2.0 and 2.04
    Mbit/s, iwa 1.92 and 1.938 (95.5 % of FIFO's mean: pass); 24p: iwa at 94 % (FAIL); 12p: iwa without
    client.pcap (not measured)."""
    run = root / "bulk"
    units = {"48p": {"fifo": [5000, 5100], "iwa": [4800, 4845]}, "24p": {"fifo": [5000], "iwa": [4700]},
             "12p": {"fifo": [5000], "iwa": [4900]}}
    for buf, by_aqm in units.items():
        for aqm, per_ack in by_aqm.items():
            for k, b in enumerate(per_ack):
                rep = write_rep(run, f"web6-bulk-hspa-{buf}-{aqm}-iw10", k, lost_at_end(0), aqm=aqm, bulk=True,
                                bulk_ack=b, pair=f"web6-bulk-hspa-{buf}-iw10")
                if buf == "12p" and aqm == "iwa":
                    (rep / "client.pcap").unlink()
    return run


def test_bulk_goodput_in_the_main_paired_and_held_out_tables(tmp_path: Path):
    run = bulk_run(tmp_path)
    md = report.write_report([run], tmp_path / "out").read_text()
    header = "bulk goodput (kbit/s)"
    col = report.MAIN_HEADER.index(header)
    assert md.count(header) == 1
    assert table_row(md, "web6-bulk-hspa-48p-fifo-iw10")[col] == ci_text([2000, 2040], 0)
    assert table_row(md, "web6-bulk-hspa-48p-iwa-iw10")[col] == ci_text([1920, 1938], 0)
    assert table_row(md, "web6-bulk-hspa-12p-iwa-iw10")[col] == "– (1 not measured)"
    # Paired: (AQM - FIFO) / FIFO per pair: 4800 / 5000 - 1 = -4 %, 4845 / 5100 - 1 = -5 %.
    rows = paired_rows(md)
    assert rows[("web6-bulk-hspa-48p-iw10", "iwa")]["Δ bulk goodput (% of FIFO)"] == hand_ci_2([-0.04, -0.05], 100, 1)
    assert rows[("web6-bulk-hspa-24p-iw10", "iwa")]["Δ bulk goodput (% of FIFO)"] == "-6.0 ± n/a"
    assert rows[("web6-bulk-hspa-12p-iw10", "iwa")]["Δ bulk goodput (% of FIFO)"] == "– (1 not measured)"
    # Held out: IWA's mean in % of FIFO's mean and the check against 95 %.
    from experiments.iwa_table import iwa_table_md
    lines = iwa_table_md(report.load_cases([run])[0])
    ok, low, unmeasured = (unit_row(lines, f"web6-bulk-hspa-{b}-iw10") for b in ("48p", "24p", "12p"))
    assert (ok["IWA bulk (% of FIFO)"], ok["IWA bulk"], ok["verdict"]) == (f"{100 * 1929 / 2020:.1f}", "pass", "pass")
    assert (low["IWA bulk (% of FIFO)"], low["IWA bulk"], low["verdict"]) == ("94.0", "FAIL", "FAIL")
    assert (unmeasured["IWA bulk (% of FIFO)"], unmeasured["IWA bulk"], unmeasured["verdict"]) == \
        ("- (1 not measured)", "not measured", "incomplete")
    section = md[md.index("## Held-out evaluation of IWA"):md.index("## IPDV")]
    assert unit_row(section.splitlines(), "web6-bulk-hspa-24p-iw10")["IWA bulk"] == "FAIL"


def test_bulk_table_gives_every_aqms_share_of_fifos_bulk(tmp_path: Path):
    """The held-out block's second table: per unit with a bulk flow, each AQM's level >= 2 and its mean bulk
    goodput in % of FIFO's, from bulk_run's hand-set rates (48p: IWA 1929 of FIFO's 2020 kbit/s)."""
    from experiments.iwa_table import bulk_table_md, table_block
    cases = report.load_cases([bulk_run(tmp_path)])[0]
    lines = bulk_table_md(cases)
    ok, low, unmeasured = (unit_row(lines, f"web6-bulk-hspa-{b}-iw10") for b in ("48p", "24p", "12p"))
    share = "iwa: level ≥ 2 (%) / bulk (% of FIFO)"
    assert ok[share].endswith(f" / {100 * 1929 / 2020:.1f}") and low[share].endswith(" / 94.0")
    assert unmeasured[share].endswith(" / - (1 not measured)")
    assert ok["fifo: level ≥ 2 (%) / bulk (% of FIFO)"].endswith(" / 100.0")
    assert "Bulk goodput under every AQM" in "\n".join(table_block([tmp_path / "bulk"]))
    # No unit with a bulk flow: no second table.
    assert bulk_table_md([c for c in cases if "bulk" not in c.name]) == []


def test_bulk_goodput_is_shown_only_where_there_is_a_bulk_flow(built):
    md = built[2]
    col = report.MAIN_HEADER.index("bulk goodput (kbit/s)")
    assert table_row(md, FIFO)[col] == "–"
    assert paired_rows(md)[("hspa-48p-iw10", "iwa")]["Δ bulk goodput (% of FIFO)"] == "–"


def test_summary_table_shows_bulk_goodput_and_no_bulk_burst(tmp_path: Path):
    """The table the main job prints: a bulk flow is no (incomplete) burst; its goodput in kbit/s, mean over the
    replications measured ('-' where none is)."""
    text = report.summary_table(bulk_run(tmp_path))
    assert text.splitlines()[0].split()[-2:] == ["bulk", "kbit/s"] and "incomplete" not in text
    rows = {(x.split()[0], x.split()[1]): x.split() for x in text.splitlines()[1:]}
    assert rows[("web6-bulk-hspa-48p", "fifo")][-1] == "2020" and rows[("web6-bulk-hspa-48p", "iwa")][-1] == "1929"
    assert rows[("web6-bulk-hspa-12p", "iwa")][-1] == "-" and rows[("web6-bulk-hspa-48p", "iwa")][-3] == "0.38"


def test_iwa_table_judges_a_unit_whose_frame_exceeds_the_buffer_at_the_next_studied_buffer(tmp_path: Path):
    """At EDGE (160 kbit/s) one 1514 B frame takes 75.7 ms: the unit is judged at 80 ms, the smallest studied
    jitter buffer above it, and its level >= 2 shares are the 80 ms ones; an HSPA unit stays at 40 ms."""
    from experiments.iwa_table import iwa_table_md, unit_jitter_buffer
    run = tmp_path / "edge"
    late = [BASE_MS] * N_PKTS  # 60 ms over the base delay for the overlap's first 10 packets: lost at 40 ms only
    for k in range(TCP_PKT, TCP_PKT + 10):
        late[k] = BASE_MS + 60
    for prof, rate in (("edge", 160e3), ("hspa", 2e6)):
        for aqm in ("fifo", "iwa"):
            write_rep(run, f"web2-{prof}-48p-{aqm}-iw10", 0, late if aqm == "iwa" else lost_at_end(0), aqm=aqm,
                      pair=f"web2-{prof}-48p-iw10", meta_extra={"profile": {
                          "name": prof, "rate_bps": rate, "delay_ms": 70.0, "server_delay_ms": 11.0}})
    cases = report.load_cases([run])[0]
    lines = iwa_table_md(cases)
    edge, hspa = unit_row(lines, "web2-edge-48p-iw10"), unit_row(lines, "web2-hspa-48p-iw10")
    assert (edge["jitter buffer (ms)"], hspa["jitter buffer (ms)"]) == ("80", "40")
    assert edge["iwa level ≥ 2 (%)"] == "0.0" and edge["IWA level"] == "pass"
    assert float(hspa["iwa level ≥ 2 (%)"]) > 40 and hspa["IWA level"] == "FAIL"
    assert unit_jitter_buffer({}, 40.0) == 40.0  # no profile known: the buffer asked for


def test_main_table_counts_frozen_flows_per_replication(tmp_path):
    """The frozen-flow column: the mean over replications of metrics.frozen_flows' count, from each replication's
    server.pcap (rep0: one flow stalled for 3 s beside a flow that streams all along, as in test_frozen; rep1: the
    same two flows, no stall)."""
    from servercapture import Flow, write_server_pcap
    run = tmp_path / "run"
    for k, stall in ((0, True), (1, False)):
        rep = write_rep(run, FIFO, k, owd_ramp(5))
        a, b = Flow(40001, 1, 0.99), Flow(40002, 2, 0.99)
        a.stream(1.00, 3.98)
        a.send(4.00, 7.10 if stall else 4.10)
        a.stream(7.12 if stall else 4.02, 8.98)
        b.stream(1.00, 8.98)
        write_server_pcap(rep / "server.pcap", [a, b])
    cases, _ = report.load_cases([run], [40.0])
    row = dict(zip(report.MAIN_HEADER, table_row("\n".join(report.main_table(cases)), FIFO)))
    assert row["frozen flows per rep"] == ci_text([1, 0])


def test_the_setup_names_the_ip_family(built, tmp_path):
    """The setup says which IP family the replications ran over (meta.json ip; runs before it: IPv4)."""
    _, _, md = built
    assert "; IP: IPv4\n" in md
    run = tmp_path / "run6"
    write_rep(run, "hspa-48p-fifo-iw10-ip6", 0, owd_ramp(5), meta_extra={"ip": 6})
    assert "; IP: IPv6\n" in report.write_report([run], tmp_path / "out").read_text()
