"""Seed 002's tables and issue 35's checks of IWA (experiments/seed002_table.py), from replication directories
written as real runs write them (test_report's helpers) and from their digests: the audio's level >= 2 share
is known by construction (one loss period of n packets in a 20-packet overlap: n / 20), the real-time flow's
goodput from the packets its receiver log holds (1000 B each over 0.99 s)."""

from __future__ import annotations

from pathlib import Path

from test_report import BASE_MS, N_PKTS, T975_1, lost_at_end, write_rep, write_rtc_logs

from experiments import digest, seed002_table

UNIT = "webrtc5-rtc50-50p-iw10-pion"
OVERLAP = 20  # audio packets of the TCP overlap (test_report.KEPT)


def kbit(received: int) -> float:
    """The goodput write_rtc_logs gives: ``received`` packets of 1000 B over 0.99 s, in kbit/s."""
    return received * 8 / 0.99


def rtc_run(root: Path, iwa_lost: int) -> Path:
    """One Pion unit at 50 ms, two paired replications per AQM: FIFO 10 and 12 audio packets lost in a row
    (50 and 60 %) with 10 and 12 RTC packets received; CoDel 4 (20 %) with 30; IWA ``iwa_lost`` with 50 and 70."""
    run = root / "run"
    plan = {"bursts": [{"burst": 0, "start_s": 3.0, "flows": 2, "bytes": 62000}],
            "workloads": {"webrtc": {"stack": "pion"}}}
    for aqm, lost, got in (("fifo", (10, 12), (10, 12)), ("codel", (4, 4), (30, 30)),
                           ("iwa", (iwa_lost, iwa_lost), (50, 70))):
        for k in range(2):
            owd = lost_at_end(lost[k]) if lost[k] else [float(BASE_MS)] * N_PKTS
            r = write_rep(run, f"webrtc5-rtc50-50p-{aqm}-iw10-pion", k, owd, aqm=aqm, meta_extra={
                "scenario": "webrtc5", "plan": plan, "profile": {"name": "rtc50", "rate_bps": 5e6, "delay_ms": 50.0}})
            write_rtc_logs(r, received=got[k])
    return run


def cells(lines: list[str], first: str) -> list[list[str]]:
    return [[c.strip() for c in x.strip("|").split("|")] for x in lines if x.startswith(f"| {first}")]


def test_per_aqm_rows_pair_against_fifo_and_iwa_passes(tmp_path: Path):
    run = rtc_run(tmp_path, iwa_lost=0)
    cases = seed002_table.load_cases([run])[0]
    rows = {r[2]: r for r in cells(seed002_table.aqm_table_md(cases), UNIT)}
    assert list(rows) == ["fifo", "codel", "iwa"]  # the report's AQM order
    assert rows["fifo"][1:4] == ["pion", "fifo", "2"]
    assert rows["fifo"][4] == f"55.0 ± {T975_1 * 5:.1f}"  # 50 and 60 %: half width t·sd/√2 = t·|a - b|/2
    assert rows["codel"][4] == "20.0 ± 0.0" and rows["iwa"][4] == "0.0 ± 0.0"
    assert rows["fifo"][5] == f"{kbit(11):.0f} ± {T975_1 * kbit(1):.0f}"
    assert rows["fifo"][-1] == "" and rows["fifo"][-2] == ""  # FIFO is the base, not paired against itself
    # IWA - FIFO by replication: level (0 - 50, 0 - 60) %, goodput (50 - 10, 70 - 12) packets
    assert rows["iwa"][-2] == f"-55.0 ± {T975_1 * 5:.1f}"
    assert rows["iwa"][-1] == f"{kbit(49):+.0f} ± {T975_1 * kbit(18) / 2:.0f}"
    checks = cells(seed002_table.checks_md(cases), UNIT)
    assert checks == [[UNIT, "pass", "pass", "codel"]]


def test_iwa_fails_the_level_check_beyond_one_point_of_the_best_other(tmp_path: Path):
    """IWA at 25 % against CoDel's 20 %: 5 points worse, FAIL; its goodput is still above FIFO's."""
    cases = seed002_table.load_cases([rtc_run(tmp_path, iwa_lost=5)])[0]
    assert cells(seed002_table.checks_md(cases), UNIT) == [[UNIT, "pass", "FAIL", "codel"]]


def test_digests_give_the_same_block_and_the_cli_writes_between_markers(tmp_path: Path, capsys):
    run = rtc_run(tmp_path, iwa_lost=0)
    into = tmp_path / "digests"
    digest.write_digests([run], into)
    from_run, from_digests = (seed002_table.table_block([d]) for d in (run, into))
    assert from_run[3:] == from_digests[3:] and "6 replications read, 0 failed" in from_digests[2]
    doc = tmp_path / "seeds.md"
    doc.write_text(f"# Seeds\n\nbefore\n{seed002_table.BEGIN}\nold\n{seed002_table.END}\nafter\n")
    assert seed002_table.main([str(into), "--out", str(doc)]) == 0
    text = doc.read_text()
    assert text.startswith(f"# Seeds\n\nbefore\n{seed002_table.BEGIN}") and text.endswith(f"{seed002_table.END}\nafter\n")
    assert "old" not in text and f"| {UNIT} | pass | pass | codel |" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert seed002_table.main([str(into), "--out", str(plain)]) == 1 and plain.read_text() == "no markers\n"
    assert "without the lines" in capsys.readouterr().err
