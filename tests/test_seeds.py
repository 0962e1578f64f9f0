"""The seeds' numbers beside the lab's (experiments/seeds.py): the seed data's own orderings, and the lab's
values and verdicts from replication directories written as real runs write them (test_report's helpers)."""

from __future__ import annotations

from pathlib import Path

from test_report import BASE_MS, N_PKTS, TCP_PKT, write_rep, write_rtc_logs

from experiments import report, seeds


def test_the_seed_tables_order_as_the_papers_say():
    for row in seeds.PAM13_TABLE1.values():
        assert list(row) == sorted(row)  # a CDF: percentiles never decrease
    t = seeds.PAM13_TABLE1
    p99, mx = seeds.PAM13_COLUMNS.index("p99"), seeds.PAM13_COLUMNS.index("max")
    for n in (1, 2, 6):  # "Clearly larger delay with IW10 than IW3"
        assert t[(10, n)][p99] > t[(3, n)][p99] and t[(10, n)][mx] > t[(3, n)][mx]
    assert t[(10, 6)][mx] == 0.589717 and t[(3, 1)][mx] == 0.111526  # BRIEF's quotes of Table 1
    r = seeds.IETF79_REDOK_MAX_OWD
    assert r[(1, 10)] > r[(1, 3)] and r[(6, 10)] > r[(6, 3)]
    # the verdicts with the lab's data missing: "-" for every ordering, none invented
    assert {o.verdict for o in seeds.pam13_orderings([]) + seeds.ietf79_orderings([])} == {"-"}


def spike(ms: float, at: int = 3) -> list[float]:
    """OWD at the base delay, one audio packet of the overlap ``ms`` later: IPDV max ``ms`` (and OWD max
    base + ``ms``)."""
    owd = [float(BASE_MS)] * N_PKTS
    owd[TCP_PKT + at] = BASE_MS + ms
    return owd


def rep(run: Path, case: str, owd: list[float], *, aqm: str, scenario: str, iw: int, n: int, prof: str,
        k: int = 0) -> None:
    write_rep(run, case, k, owd, aqm=aqm, meta_extra={
        "scenario": scenario, "iw": iw, "n_flows": n, "profile": {"name": prof, "rate_bps": 2e6, "delay_ms": 70.0},
        "buffer": {"packets": 48}})


def test_lab_rows_and_verdicts_from_runs(tmp_path: Path):
    run = tmp_path / "run"
    # HSPA web6: IW10's spikes (150, 160 ms) above IW3's (90 ms): PAM'13's ordering holds.
    rep(run, "web6-hspa-48p-fifo-iw10", spike(150), aqm="fifo", scenario="web6", iw=10, n=6, prof="hspa")
    rep(run, "web6-hspa-48p-fifo-iw10", spike(160, at=5), aqm="fifo", scenario="web6", iw=10, n=6, prof="hspa",
        k=1)
    rep(run, "web6-hspa-48p-fifo-iw3", spike(90), aqm="fifo", scenario="web6", iw=3, n=6, prof="hspa")
    # HSPA web1: IW10 below IW3 (self-congestion, say): differs.
    rep(run, "web1-hspa-48p-fifo-iw10", spike(40), aqm="fifo", scenario="web1", iw=10, n=1, prof="hspa")
    rep(run, "web1-hspa-48p-fifo-iw3", spike(60), aqm="fifo", scenario="web1", iw=3, n=1, prof="hspa")
    # Not FIFO, not web: never in Table 1's lab rows.
    rep(run, "web6-hspa-48p-iwa-iw10", spike(500), aqm="iwa", scenario="web6", iw=10, n=6, prof="hspa")
    # IETF79: REDok on EDGE, one flow per burst, IW10's max OWD above IW3's: holds; 6+6 not run: "-".
    rep(run, "burst1+1-edge-48p-redok-iw10", spike(300), aqm="redok", scenario="burst1+1", iw=10, n=2, prof="edge")
    rep(run, "burst1+1-edge-48p-redok-iw3", spike(200), aqm="redok", scenario="burst1+1", iw=3, n=2, prof="edge")
    cases = report.load_cases([run])[0]

    lines = seeds.pam13_table_md(cases)
    lab6 = next(x for x in lines if x.startswith("| lab fifo hspa 48p | 10 | 6 |"))
    cells = [c.strip() for c in lab6.strip("|").split("|")]
    assert cells[3] == "2" and cells[-1] == "0.1600"  # two replications pooled; the max is the larger spike
    assert not any("iwa" in x or "500" in x for x in lines)

    by = {(o.claim, o.seed): o for o in seeds.pam13_orderings(cases)}
    key = "PAM'13 Table 1 / lab hspa 48p"
    six = by[("IPDV max: IW10 > IW3 at N=6", key)]
    assert (six.lab_a, six.lab_b, six.verdict) == (0.16, 0.09, "holds")
    one = by[("IPDV max: IW10 > IW3 at N=1", key)]
    assert (one.lab_a, one.lab_b, one.verdict) == (0.04, 0.06, "differs")
    assert by[("IPDV max: IW10 > IW3 at N=2", key)].verdict == "-"  # no web2 in these runs
    assert by[("IPDV max: N=6 > N=1 at IW10", key)].verdict == "holds"

    single, six_flows = seeds.ietf79_orderings(cases)
    assert single.verdict == "holds" and abs(single.lab_a - (BASE_MS + 300) / 1e3) < 1e-9
    assert six_flows.verdict == "-" and six_flows.lab_a is None

    md = "\n".join(seeds.seeds_md(cases))
    assert "## Seeds versus lab" in md and "| differs |" in md and "| holds |" in md
    text = report.write_report([run], tmp_path / "out").read_text()
    assert "## Seeds versus lab" in text and text.index("## Seeds versus lab") < text.index("## IPDV")


def test_seed002_table_with_the_labs_real_time_flow(tmp_path: Path):
    """A replication with the real-time flow's logs: 100 packets of 1000 B over 0.99 s, 90 received -> goodput
    90 kB x 8 / 0.99 s, loss 10 %; its row sits under the seed's 50 ms row, named by scenario and AQM, its
    stack the lab's own controller, which logs no over-use detector ("-")."""
    run = tmp_path / "run"
    r = write_rep(run, "rtc5-rtc50-50p-fifo-iw10", 0, [float(BASE_MS)] * N_PKTS, aqm="fifo", meta_extra={
        "scenario": "rtc5", "profile": {"name": "rtc50", "rate_bps": 5e6, "delay_ms": 50.0}})
    write_rtc_logs(r, received=90)
    cases = report.load_cases([run])[0]
    lines = seeds.seed002_md(cases)
    rows = [x for x in lines if x.startswith("| ")]
    i = next(k for k, x in enumerate(rows) if x.startswith("| seed 002") and "| 50 |" in x)
    lab = [c.strip() for c in rows[i + 1].strip("|").split("|")]
    assert lab[:4] == ["lab rtc5 fifo", "accessnet.rtc", "50", "1"]
    assert lab[4] == f"{90_000 * 8 / 0.99 / 1e3:.1f}" and lab[5] == "10.0" and lab[8] == "-"
    assert [c.strip() for c in rows[i].strip("|").split("|")][-1] == "-"  # the seed gives no over-use seconds
    assert not any(x.startswith("| lab") for x in rows[i + 2:])  # nothing under the 100 ms row


def test_the_pam13_profile_follows_from_the_seeds_numbers():
    """docs/seeds.md: the rate at which one flow's IW3 and IW10 windows add Table 1's largest IPDV beyond the
    radio's own jitter (audio alone: max 70.4 ms, median 18.0 ms), and the delay that makes the audio's
    one-way delay its median."""
    from accessnet.profiles import PROFILES
    frame_bits, radio = 1514 * 8, 0.0704 - 0.0180
    mx = seeds.PAM13_COLUMNS.index("max")
    r3 = 3 * frame_bits / (seeds.PAM13_TABLE1[(3, 1)][mx] - radio)
    r10 = 10 * frame_bits / (seeds.PAM13_TABLE1[(10, 1)][mx] - radio)
    assert abs(r3 - r10) / ((r3 + r10) / 2) < 0.05  # two independent windows, one rate
    p = PROFILES["pam13"]
    assert abs(p.rate_bps - (r3 + r10) / 2) < 1e3
    audio_frame_s = (40 + 8 + 20 + 14) * 8 / p.rate_bps
    assert abs(p.server_delay_ms / 1e3 + p.delay_ms / 1e3 + audio_frame_s - 0.0180) < 0.0002
    # The radio profile the sweeps use: its slowest rate is the fixed reading's, its mean carries 372 kB in about
    # 1.2 s (Fig. 6), its window lets IW10 leave whole, and the audio alone keeps the 18.0 ms median.
    r = PROFILES["pam13radio"]
    assert r.rate_min_bps == p.rate_bps and abs(372_000 * 8 / r.rate_bps - 1.2) < 0.05
    assert r.client_window_bytes == 10 * 1460 and r.slot_s * 1e3 >= 10 * 1514 * 8 / r.rate_min_bps * 1e3 - 1
    assert abs(r.server_delay_ms / 1e3 + r.delay_ms / 1e3 + (40 + 8 + 20 + 14) * 8 / r.rate_bps - 0.0180) < 0.0002
    from accessnet import sweep
    _, units = sweep.load_sweep("pam13")
    assert {u.case.buffer["packets"] for u in units} == {256} and 256 * 1514 >= 372_000  # web6 without a drop
    assert {u.case.profile.name for u in units} == {"pam13radio"}
    assert {u.case.name.split("-")[0] for u in units} == {"audio", "bulk", "web1", "web2", "web6"}
    assert len(units) == 50 * (4 * 2 + 1)


def test_seed002_two_flow_table_reads_each_flow(tmp_path: Path):
    run = tmp_path / "run"
    r = write_rep(run, "webrtc10-rtc50-50p-fifo-iw10", 0, [float(BASE_MS)] * N_PKTS, aqm="fifo", meta_extra={
        "scenario": "webrtc10", "profile": {"name": "rtc50", "rate_bps": 5e6, "delay_ms": 50.0}})
    for sfx, got, usage in (("", 100, ["", "overusing", "normal", "overusing", "normal"]),
                            ("_1", 80, ["normal", "underusing", "overusing", "normal"])):
        write_rtc_logs(r, sfx, got)
        write_aiortc_stats(r, usage, sfx)
    cases = report.load_cases([run])[0]
    assert seeds.rtc_units(cases, 1) == {}  # two flows: not a row of the one-flow table
    rows = [x for x in seeds.seed002_two_md(cases) if x.startswith("| lab")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells[:4] == ["lab webrtc10 fifo", "aiortc", "50", "1"] and (cells[6], cells[7]) == ("0.0", "20.0")
    assert cells[10:] == ["2.0 (50 %)", "1.0 (25 %)"]  # flow 1: 2 of 4 sampled seconds, flow 2: 1 of 4


def write_aiortc_stats(rep: Path, usage: list[str], suffix: str = "") -> None:
    """aiortc's per-second stats as its flow writes them: the receiver's usage column (empty before the first
    packet), the sender's without one."""
    from accessnet.webrtc import RX_STATS, TX_STATS
    rx = [dict.fromkeys(RX_STATS, "") | {"t_ns": str(10**18 + i * 10**9), "usage": u} for i, u in enumerate(usage)]
    tx = [dict.fromkeys(TX_STATS, "") | {"t_ns": str(10**18 + i * 10**9), "target_bps": "50000"} for i in range(4)]
    for name, cols, rows in (("webrtc_rx_stats", RX_STATS, rx), ("webrtc_tx_stats", TX_STATS, tx)):
        (rep / f"{name}{suffix}.csv").write_text(",".join(cols) + "\n" + "".join(
            ",".join(row[c] for c in cols) + "\n" for row in rows))


def write_pion_stats(rep: Path, usage: list[str], suffix: str = "") -> None:
    """Pion's per-second stats: GCC's usage in the sender's, the receiver's usage column empty."""
    from accessnet.webrtc import PION_RX_STATS, PION_TX_STATS
    tx = [dict.fromkeys(PION_TX_STATS, "") | {"t_ns": str(10**18 + i * 10**9), "usage": u, "state": "hold"}
          for i, u in enumerate(usage)]
    rx = [dict.fromkeys(PION_RX_STATS, "") | {"t_ns": str(10**18 + i * 10**9), "received": "90"} for i in range(3)]
    for name, cols, rows in (("webrtc_tx_stats", PION_TX_STATS, tx), ("webrtc_rx_stats", PION_RX_STATS, rx)):
        (rep / f"{name}{suffix}.csv").write_text(",".join(cols) + "\n" + "".join(
            ",".join(row[c] for c in cols) + "\n" for row in rows))


def _usage(over: int, n: int, state: str = "overusing", other: str = "normal", lead: int = 0) -> list[str]:
    """``lead`` empty samples, then ``n``: ``over`` of them in ``state``, every other one while they last."""
    assert 0 <= over <= n
    out = [other] * n
    for i in [*range(0, n, 2), *range(1, n, 2)][:over]:
        out[i] = state
    return [""] * lead + out


def test_seed002_shows_both_stacks_side_by_side_with_over_use_seconds_and_pairs_them(tmp_path: Path):
    """The 1 + 5 case at 50 ms on aiortc (reps 0-2) and Pion (reps 0-2, rep 2 with another seed): one row each,
    aiortc first; over-use seconds from each stack's own stats (aiortc's receiver: 3, 5 and 4 of 8 sampled
    seconds after two empty ones; Pion's sender: 1, 2 and 3 of 10); the paired table takes reps 0 and 1 only."""
    from experiments.metrics import overuse_seconds
    run = tmp_path / "run"
    plan = lambda stack: {"bursts": [{"burst": 0, "start_s": 3.0, "flows": 2, "bytes": 62000}],  # noqa: E731
                          "workloads": {"webrtc": {"stack": stack}}}
    for stack, sfx, got, over, n, state in (("aiortc", "", (90, 90, 90), (3, 5, 4), 8, "overusing"),
                                            ("pion", "-pion", (100, 96, 92), (1, 2, 3), 10, "overuse")):
        for k in range(3):
            r = write_rep(run, f"webrtc5-rtc50-50p-fifo-iw10{sfx}", k, [float(BASE_MS)] * N_PKTS, aqm="fifo",
                          seed=99 if (stack, k) == ("pion", 2) else None, meta_extra={
                              "scenario": "webrtc5", "plan": plan(stack),
                              "profile": {"name": "rtc50", "rate_bps": 5e6, "delay_ms": 50.0}})
            write_rtc_logs(r, received=got[k])
            if stack == "aiortc":
                write_aiortc_stats(r, _usage(over[k], n, lead=2))
            else:
                write_pion_stats(r, _usage(over[k], n, "overuse", "underuse"))
    first = run / "webrtc5-rtc50-50p-fifo-iw10" / "rep0"
    assert overuse_seconds(first) == {"stack": "aiortc", "overuse_s": 3, "usage_s": 8, "overuse_share": 3 / 8}
    assert overuse_seconds(run / "webrtc5-rtc50-50p-fifo-iw10-pion" / "rep1") == {
        "stack": "pion", "overuse_s": 2, "usage_s": 10, "overuse_share": 0.2}
    cases = report.load_cases([run])[0]
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in seeds.seed002_md(cases) if x.startswith("| lab")]
    assert [r[:4] for r in rows] == [["lab webrtc5 fifo", "aiortc", "50", "3"], ["lab webrtc5 fifo", "pion", "50", "3"]]
    t2 = 4.302653  # t(0.975, 2)
    assert rows[0][4] == f"{90 * 8 / 0.99:.1f} ± 0.0" and rows[0][5] == "10.0 ± 0.0"
    assert rows[1][4].startswith(f"{96 * 8 / 0.99:.1f} ± {t2 * 4 * 8 / 0.99 / 3 ** 0.5:.1f}")  # sd 4 packets
    # over-use: aiortc 3, 5, 4 s (sd 1) of 8 sampled: 50 %; Pion 1, 2, 3 s (sd 1) of 10: 20 %
    assert rows[0][-1] == f"4.0 ± {t2 / 3 ** 0.5:.1f} (50 %)" and rows[1][-1] == f"2.0 ± {t2 / 3 ** 0.5:.1f} (20 %)"
    paired = [[c.strip() for c in x.strip("|").split("|")] for x in seeds.seed002_stacks_md(cases)
              if x.startswith("| lab")]
    t1 = 12.706205  # t(0.975, 1); two pairs: Pion - aiortc = (10, 6) packets, (0 - 10, 4 - 10) % loss, (1 - 3, 2 - 5) s
    assert len(paired) == 1 and paired[0][:3] == ["lab webrtc5 fifo", "50", "2"]
    sd = lambda a, b: abs(a - b) / 2 ** 0.5  # noqa: E731
    assert paired[0][3] == f"{8 * 8 / 0.99:+.1f} ± {t1 * sd(10, 6) * 8 / 0.99 / 2 ** 0.5:.1f}"
    assert paired[0][4] == f"{-8:+.2f} ± {t1 * sd(-10, -6) / 2 ** 0.5:.2f}"
    assert paired[0][7] == f"{-2.5:+.1f} ± {t1 * sd(-2, -3) / 2 ** 0.5:.1f}"
    text = "\n".join(seeds.seeds_md(cases))
    assert "### Seed 002: Pion − aiortc, paired by replication" in text


def burst_of(ms: float, at: int, n: int) -> list[float]:
    """OWD at the base delay, ``n`` consecutive audio packets of the overlap from ``at`` on ``ms`` later."""
    owd = [float(BASE_MS)] * N_PKTS
    for i in range(n):
        owd[TCP_PKT + at + i] = BASE_MS + ms
    return owd


def test_pam13_fig5_and_fig6_statements_from_runs(tmp_path: Path, monkeypatch):
    """Fig. 5: IW10's loss after the 40 ms jitter filter (3 of the 20 overlapping packets late) above IW3's
    (1 of 20), and IW3 with six flows above IW3 with one (none late); Fig. 6, with an early window of 0.2 s
    (10 packets): IW10's late packets sit early (holds), web6 IW3's single late packet is no level >= 2 run
    (0 against 0: differs), web1 IW10's run sits late (differs)."""
    run = tmp_path / "run"
    rep(run, "web6-hspa-48p-fifo-iw10", burst_of(150, 3, 3), aqm="fifo", scenario="web6", iw=10, n=6, prof="hspa")
    rep(run, "web6-hspa-48p-fifo-iw3", burst_of(150, 3, 1), aqm="fifo", scenario="web6", iw=3, n=6, prof="hspa")
    rep(run, "web1-hspa-48p-fifo-iw3", burst_of(0, 0, 0), aqm="fifo", scenario="web1", iw=3, n=1, prof="hspa")
    rep(run, "web1-hspa-48p-fifo-iw10", burst_of(150, 15, 2), aqm="fifo", scenario="web1", iw=10, n=1, prof="hspa")
    cases = report.load_cases([run])[0]
    monkeypatch.setattr(seeds, "PAM13_FIG6_EARLY_S", 0.2)

    by = {o.claim: o for o in seeds.pam13_fig_orderings(cases)}
    iw6 = by["loss after the jitter filter at 40 ms (share): IW10 > IW3 at N=6"]
    assert (iw6.lab_a, iw6.lab_b, iw6.verdict) == (3 / 20, 1 / 20, "holds") and iw6.seed_a is None
    assert by["loss after the jitter filter at 40 ms (share): IW10 > IW3 at N=1"].verdict == "holds"
    assert by["loss after the jitter filter at 40 ms (share): IW10 > IW3 at N=2"].verdict == "-"
    n6 = by["loss after the jitter filter at 40 ms (share): N=6 > N=1 at IW3"]
    assert (n6.lab_a, n6.lab_b, n6.verdict) == (1 / 20, 0.0, "holds")
    early = "first 0.2 s after the start > the rest of the transfer"
    w6 = by[f"level >= 2 share at 40 ms, IW10 N=6: {early}"]
    assert (w6.lab_a, w6.lab_b, w6.verdict) == (3 / 10, 0.0, "holds")
    assert by[f"level >= 2 share at 40 ms, IW3 N=6: {early}"].verdict == "differs"  # 0 > 0 is false
    w1 = by[f"level >= 2 share at 40 ms, IW10 N=1: {early}"]
    assert (w1.lab_a, w1.lab_b, w1.verdict) == (0.0, 2 / 10, "differs")

    fig5 = [x for x in seeds.pam13_fig5_md(cases) if x.startswith("| lab fifo hspa 48p | 10 | 6 |")]
    assert len(fig5) == 1 and "| 15.0 |" in fig5[0]  # 3 of 20 late at 40 ms, one replication (no interval)
    md = "\n".join(seeds.seeds_md(cases))
    assert "### PAM'13 Fig. 5" in md and "Fig. 6: \"the arrival of the initial windows" in md


def test_ietf79_measures_per_burst_case_with_the_timeouts_told_apart(tmp_path: Path):
    """A burst1+1 replication: burst 0 (one flow of 62 kB in 0.38 s) then burst 1 (one of 62 kB in 0.1 s): Jain's
    index between the bursts over their goodputs (in 1/0.38 to 1/0.1); its captures hold one spurious timeout
    (test_timeouts' queue-delayed segment), and the server's own count (2) is shown beside the captures' (1)."""
    from test_report import TCP_START

    from test_timeouts import Link, down, handshake, seg

    run = tmp_path / "run"
    r = write_rep(run, "burst1+1-edge-14p-redok-iw10-irto1", 0, spike(300), aqm="redok", meta_extra={
        "scenario": "burst1+1", "n_flows": 2, "irto_s": 1, "profile": {"name": "edge", "rate_bps": 160e3,
                                                                      "delay_ms": 250.0}})
    ms = 1_000_000
    (r / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n"
                                 f"0,0,{TCP_START},{TCP_START + 380 * ms},62000,1,2,1\n"
                                 f"1,1,{TCP_START + 400 * ms},{TCP_START + 500 * ms},62000,0,0,1\n")
    link = Link()
    handshake(link)
    link.send(60, down(seg(1), 11), 1360)
    link.send(1055, down(seg(1), 12), 1400)
    link.write(r)
    cases = report.load_cases([run])[0]
    rows = [x for x in seeds.ietf79_measures_md(cases) if x.startswith("| burst1+1")]
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert dict(zip(seeds.IETF79_MEASURES_HEADER, cells)) == {
        "case": "burst1+1-edge-14p-redok-iw10-irto1", "reps": "1", "max audio OWD (s)": f"{(BASE_MS + 300) / 1e3:.3f}",
        "burst 1 (s)": "0.38", "burst 2 (s)": "0.10", "Jain burst 1": "1.000", "Jain burst 2": "1.000",
        "Jain between": f"{(1 / 0.38 + 1 / 0.1) ** 2 / (2 * (1 / 0.38 ** 2 + 1 / 0.1 ** 2)):.3f}",
        "RTOs / rep (server)": "2.0", "timeouts / rep (captures)": "1.0", "spurious / rep": "1.0",
        "unknown / rep": "0.0"}
    assert seeds.ietf79_measures_md([]) == ["(no burst workload in these runs)"]


def test_ietf79_statements_per_unit_from_runs(tmp_path: Path):
    """EDGE FIFO with a 1 s initial RTO, one flow per burst: IW3's bursts take 0.38 s, IW10's 0.2 s, so "IW10
    improves performance" holds; no capture, so no timeouts counted, and the 3 s RTO was not run ("-")."""
    from test_report import TCP_START
    ms = 1_000_000
    run = tmp_path / "run"
    for iw, span, rtos in ((3, 380, 0), (10, 200, 2)):
        r = write_rep(run, f"burst1+1-edge-14p-fifo-iw{iw}-irto1", 0, spike(100), aqm="fifo", meta_extra={
            "scenario": "burst1+1", "iw": iw, "n_flows": 2, "irto_s": 1,
            "profile": {"name": "edge", "rate_bps": 160e3, "delay_ms": 250.0}, "buffer": {"packets": 14}})
        (r / "flows.csv").write_text("flow,burst,start_ns,end_ns,bytes,retrans,rtos,completed\n"
                                     f"0,0,{TCP_START},{TCP_START + span * ms},90000,0,{rtos},1\n"
                                     f"1,1,{TCP_START + 500 * ms},{TCP_START + (500 + span) * ms},90000,0,0,1\n")
    got = {o.claim: o for o in seeds.ietf79_statements(report.load_cases([run])[0])
           if o.seed == "IETF79 / lab edge 14p fifo initial RTO 1 s"}
    faster = got["elapsed: IW3 > IW10, 1+1 flows"]
    assert (faster.lab_a, faster.lab_b, faster.verdict) == (0.38, 0.2, "holds")
    assert got["elapsed: IW10 > IW3, 6+6 flows"].verdict == "-"  # no 6+6 in these runs
    between = got["Jain between bursts: IW10 > IW3, 1+1 flows"]
    assert between.lab_a == between.lab_b == 1.0 and between.verdict == "differs"  # equal: the seed says more
    rtos = [o for o in seeds.ietf79_statements(report.load_cases([run])[0])
            if o.claim == "timeouts / rep: IRTO 1 s > 3 s, IW10 1+1 flows"]
    assert len(rtos) == 1 and (rtos[0].lab_a, rtos[0].lab_b, rtos[0].verdict) == (0.0, None, "-")
    md = "\n".join(seeds.seeds_md(report.load_cases([run])[0]))
    assert "improves performance" in md and "| elapsed: IW3 > IW10, 1+1 flows |" in md
