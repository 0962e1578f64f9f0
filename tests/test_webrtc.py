"""The [webrtc] workload (accessnet.webrtc, aiortc): the synthetic encoder's sizes follow target_bitrate, the
scenario checks, the processes a replication starts, the log format (a short run of both ends on the
loopback), and the acceptance test of issue 14 in the emulated network (root and Mininet): the rate rises on an idle
5 Mbit/s link and falls within a few seconds when the link rate is halved, for both stacks ([webrtc] stack:
aiortc, and Pion's send-side GCC in build/pion-rtc, issue 35)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from test_workloads import FakeNet

from accessnet import scenario as scen
from accessnet import webrtc
from accessnet.addresses import V4, ipv6_missing
from accessnet.workloads import Lab, WebRtc, workloads_for
from experiments.metrics import RTC_RX_COLUMNS, RTC_TX_COLUMNS, rtc_metrics
from refmodel.params import ConfigError

ROOT = Path(__file__).resolve().parent.parent
HAVE_AIORTC = importlib.util.find_spec("aiortc") is not None
needs_aiortc = pytest.mark.skipif(not HAVE_AIORTC, reason="aiortc is not installed (make setup installs it)")
HAVE_PION = os.access(webrtc.PION_BINARY, os.X_OK)
needs_pion = pytest.mark.skipif(not HAVE_PION, reason=f"{webrtc.PION_BINARY} is not built (make setup builds it with Go)")


# ----------------------------------------------------------------------------- pure pieces

@pytest.mark.parametrize("bps, fps", [(128_000, 30), (1_000_000, 30), (2_345_678, 25), (50_000, 7)])
def test_frames_add_up_to_the_target_rate(bps, fps):
    carry, total = 0.0, 0
    for _ in range(fps * 10):
        n, carry = webrtc.frame_sizes(bps, fps, carry)
        total += n
    assert abs(total - bps / 8 * 10) <= 1


def test_a_frame_splits_into_even_packets_within_the_payload_limit():
    for n in (1, webrtc.MIN_PACKET, 533, 1200, 1201, 10_417, 41_667):
        sizes = webrtc.split_frame(n)
        assert sum(sizes) == max(n, webrtc.MIN_PACKET)
        assert max(sizes) <= webrtc.MAX_PAYLOAD and min(sizes) >= webrtc.MIN_PACKET
        assert max(sizes) - min(sizes) <= 1


def test_the_trailer_carries_seq_frame_and_the_send_time_written_last():
    body = b"\x90\x80\x81\x23" + b"\x00" * 50 + webrtc.TRAILER.pack(7, 3, 0, webrtc.MAGIC)
    assert webrtc.read_trailer(body) == (7, 3, 0)
    assert webrtc.read_trailer(webrtc.stamp(body, 1_795_000_000_123_456_789)) == (7, 3, 1_795_000_000_123_456_789)
    assert webrtc.read_trailer(b"\x00" * 40) is None and webrtc.read_trailer(b"short") is None


@needs_pion
@pytest.mark.parametrize("kbps, fps", [(128, 30), (1000, 30), (2345.678, 25), (50, 7), (10_000, 29.97), (777.7, 60)])
def test_pions_encoder_makes_the_python_encoders_packet_sizes(kbps, fps):
    """tools/pion-rtc mirrors frame_sizes and split_frame: ``pion-rtc sizes`` prints its packet sizes per frame,
    which must be the Python functions' for the same rate and frame rate, frame by frame (the fraction of a
    byte carried over 300 frames included)."""
    frames = 300
    out = subprocess.run([str(webrtc.PION_BINARY), "sizes", "--start-kbps", str(kbps), "--fps", str(fps), "--frames",
                          str(frames)], capture_output=True, text=True, timeout=30, check=True).stdout
    got = [[int(x) for x in line.split()] for line in out.splitlines()]
    carry, want = 0.0, []
    for _ in range(frames):
        n, carry = webrtc.frame_sizes(kbps * 1e3, fps, carry)
        want.append(webrtc.split_frame(n))
    assert got == want


GO = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)


@needs_pion
@pytest.mark.skipif(GO is None, reason="needs Go (go version -m reads the binary's module list)")
def test_pion_rtc_is_built_with_the_patched_interceptor():
    """build/pion-rtc compiles pion/interceptor from the copy patched.sh assembles (tools/pion-rtc/patches:
    the arrival groups that froze GCC behind a standing queue, issue 35), not from the module as released;
    a binary built with a plain ``go build`` would have upstream's accumulator."""
    out = subprocess.run([GO, "version", "-m", str(webrtc.PION_BINARY)], capture_output=True, text=True,
                         check=True).stdout
    lines = out.splitlines()
    (k,) = [i for i, line in enumerate(lines) if line.split()[:2] == ["dep", "github.com/pion/interceptor"]]
    patches = sorted(p.name for p in (ROOT / "tools/pion-rtc/patches").iterdir() if p.is_dir())
    assert patches == ["interceptor-" + lines[k].split()[2]]
    assert lines[k + 1].split()[:2] == ["=>", str(ROOT / "build/pion-mod" / patches[0])], lines[k:k + 2]


@needs_pion
@pytest.mark.skipif(GO is None, reason="needs Go")
def test_pions_gcc_falls_below_a_standing_queues_link_with_the_patch(tmp_path):
    """tools/pion-rtc/gcc_test.go (3 s in real time): Pion's GCC behind a simulated 2.5 Mbit/s drop-tail queue
    falls below the link within 2 s when built as build/pion-rtc is (patched.sh's go.mod)."""
    pion = ROOT / "tools/pion-rtc"
    modfile = subprocess.run(["./patched.sh", GO, str(tmp_path / "mod")], cwd=pion, capture_output=True,
                             text=True, check=True).stdout.strip()
    r = subprocess.run([GO, "test", "-modfile", modfile, "-count=1", "-run", "GCCFallsBelowTheLink", "-v", "."],
                       cwd=pion, capture_output=True, text=True, env={**os.environ, "GOFLAGS": "-mod=readonly"})
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_pions_stats_begin_with_the_python_columns():
    assert webrtc.PION_TX_STATS[:len(webrtc.TX_STATS)] == webrtc.TX_STATS
    assert webrtc.PION_RX_STATS[:len(webrtc.RX_STATS)] == webrtc.RX_STATS
    import re
    go = (ROOT / "tools/pion-rtc/csvlog.go").read_text()  # what the Go program writes
    lists = {name: tuple(re.findall(r'"(\w+)"', body)) for name, body in re.findall(r"(\w+) += \[\]string\{([^}]*)\}", go)}
    assert lists == {"txColumns": webrtc.TX_COLUMNS, "rxColumns": webrtc.RX_COLUMNS, "txStats": webrtc.PION_TX_STATS,
                     "rxStats": webrtc.PION_RX_STATS}


@needs_aiortc
def test_the_synthetic_encoder_follows_target_bitrate_as_aiortc_sets_it():
    from aiortc.codecs import vp8_depayload
    enc = webrtc.make_encoder_class()(128_000, 50_000, 10_000_000, 30)
    assert enc.target_bitrate == 128_000 and enc.remb_bps is None

    def one_second() -> list[bytes]:
        return [p for _ in range(30) for p in enc.payloads()]

    first = one_second()
    assert abs(sum(map(len, first)) - 16_000) <= 1  # 128 kbit/s for one second
    enc.target_bitrate = 3_000_000  # what RTCRtpSender._handle_rtcp_packet does with a REMB
    big = one_second()
    assert abs(sum(map(len, big)) - 375_000) <= 1 and max(map(len, big)) <= webrtc.MAX_PAYLOAD
    enc.target_bitrate = 20_000_000
    assert enc.target_bitrate == 10_000_000 and enc.remb_bps == 20_000_000 and enc.rembs == 2  # clamped
    enc.target_bitrate = 1
    assert enc.target_bitrate == 50_000
    trailers = [webrtc.read_trailer(p) for p in first + big]
    assert [t[0] for t in trailers] == list(range(len(first) + len(big)))  # packet numbers
    assert [t[1] for t in trailers][:30] == list(range(30))  # one packet per frame at 128 kbit/s
    for p in big:
        vp8_depayload(p)  # the receiver's depacketiser accepts it
    assert enc.frame_rate[0] == 128_000 and enc.frame_rate[59] == 3_000_000


@needs_aiortc
def test_aiortc_still_has_the_hooks_this_module_relies_on():
    """The pinned aiortc's receiver runs the RemoteBitrateEstimator and its sender hands REMB to the encoder's
    target_bitrate: if a new aiortc version moves them, this says so before a run does."""
    import inspect

    from aiortc import rate, rtcdtlstransport, rtcrtpreceiver, rtcrtpsender
    assert "RemoteBitrateEstimator()" in inspect.getsource(rtcrtpreceiver.RTCRtpReceiver.__init__)
    assert "self.__encoder.target_bitrate = bitrate" in inspect.getsource(rtcrtpsender.RTCRtpSender._handle_rtcp_packet)
    assert hasattr(rtcrtpsender, "get_encoder") and hasattr(rtcrtpreceiver, "get_decoder")
    for name in ("_send_rtp", "_handle_rtp_data"):
        assert hasattr(rtcdtlstransport.RTCDtlsTransport, name)
    assert {"rate_control", "detector", "incoming_bitrate"} <= set(vars(rate.RemoteBitrateEstimator()))


@needs_aiortc
def test_the_diagnostics_change_only_the_estimators_arrival_clock_and_rtt_and_undo():
    """--diag-arrival us: aiortc's DTLS transport reads a fractional-ms clock (same origin as its integer one),
    the incoming-rate counter still gets integer ms; --diag-rtt-ms sets AimdRateControl.rtt. Both undo."""
    from aiortc import clock, rate, rtcdtlstransport
    undo = webrtc.fine_arrival_times()
    try:
        fine, coarse = rtcdtlstransport.clock.current_ms(), clock.current_ms()
        assert isinstance(fine, float) and abs(fine - coarse) < 50
        rbe = rate.RemoteBitrateEstimator()
        for k in range(200):  # 1.5 ms apart: the float times reach the estimator, the rate counter copes
            rbe.add(arrival_time_ms=fine + 1.5 * k, abs_send_time=int(k * 1.5e-3 * (1 << 18)) & 0xFFFFFF,
                    payload_size=1000, ssrc=1)
        assert rbe.incoming_bitrate.rate(int(fine + 300)) is not None
    finally:
        undo()
    assert rtcdtlstransport.clock is clock and rate.RateCounter.add.__name__ == "add"
    undo = webrtc.fixed_rtt(100)
    try:
        assert rate.AimdRateControl().rtt == 100
    finally:
        undo()
    assert rate.AimdRateControl().rtt == 200


# ----------------------------------------------------------------------------- the controller in a simulated bottleneck

@needs_aiortc
def test_simulated_the_rate_rises_on_an_idle_link_and_falls_when_it_halves():
    """aiortc's estimator and the synthetic encoder in tests/webrtcsim.py's 5 Mbit/s, 50 ms, 50-packet FIFO
    (no network): the acceptance test's shape without namespaces. Deterministic."""
    from webrtcsim import simulate
    r = pd.DataFrame(simulate(50, [(0, 5e6), (30, 2.5e6)], start_kbps=1000)).set_index("t_s")
    assert r.loc[3, "target_bps"] == 1_000_000  # no REMB before the estimator's 3 s of incoming rate
    assert r.loc[:30, "target_bps"].max() > 4_000_000  # x1.08 a second up to the link
    assert r.loc[20:30, "lost"].sum() == 0  # it backed off on delay before the queue overflowed
    assert r.loc[31:33, "target_bps"].max() < 2_500_000  # below the halved link within 3 s
    assert r.loc[30:, "lost"].sum() < 100
    start128 = pd.DataFrame(simulate(60, [(0, 5e6)])).set_index("t_s")  # the seed's start rate
    assert start128.loc[1, "target_bps"] == 128_000 and start128.loc[45:, "target_bps"].min() > 2_500_000


@needs_aiortc
def test_simulated_aiortc_as_shipped_is_blind_behind_a_standing_queue():
    """Without libwebrtc's 100 ms cap on a burst group (``--max-burst-ms 0``), aiortc 1.16.0 merges every
    packet behind a standing queue into one group, never sees over-use, holds 1.5 x the incoming rate and
    loses half its packets after the link halves. If a new aiortc fixes its InterArrival, this fails: then
    the cap (accessnet.webrtc.cap_bursts) may go."""
    from webrtcsim import simulate
    r = pd.DataFrame(simulate(45, [(0, 5e6), (30, 2.5e6)], start_kbps=1000, max_burst_ms=0)).set_index("t_s")
    assert r.loc[35:, "target_bps"].min() > 5_000_000
    late = r.loc[35:]
    assert late["lost"].sum() / (late["lost"].sum() + late["received"].sum()) > 0.4


# ----------------------------------------------------------------------------- scenario and workload

def _webrtc5() -> dict:
    import tomllib
    return tomllib.loads((scen.SCENARIO_DIR / "webrtc5.toml").read_text())


def test_the_seed_scenario_loads():
    sc = scen.load("webrtc5")
    (case,) = sc.cases
    assert case.profile.rate_bps == 5e6 and case.profile.delay_ms == 50 and case.buffer == {"packets": 50}
    assert sc.data["webrtc"]["start_kbps"] == 128 and sc.data["users"]["count"] == 5


@pytest.mark.parametrize("bad, says", [
    ({"fps": 0}, "\\[webrtc\\] fps = 0: must be a number in \\[1, 120\\]"),
    ({"start_kbps": "fast"}, "start_kbps = 'fast'"),
    ({"colour": 1}, "\\[webrtc\\] unknown key"),
    ({"max_burst_ms": -1}, "max_burst_ms = -1"),
    ({"min_kbps": 500}, "min_kbps <= start_kbps <= max_kbps"),  # above the default start (128)
    ({"start_kbps": 20_000}, "min_kbps <= start_kbps <= max_kbps"),  # above the default max
])
def test_bad_webrtc_values_are_refused(tmp_path, bad, says):
    data = _webrtc5()
    data["webrtc"] = {**data["webrtc"], **bad}
    with pytest.raises(ConfigError, match=says):
        scen.build(tmp_path / "mine.toml", data)


def test_an_unknown_stack_is_refused(tmp_path):
    data = _webrtc5()
    data["webrtc"] = {**data["webrtc"], "stack": "libwebrtc"}
    with pytest.raises(ConfigError, match="\\[webrtc\\] stack = 'libwebrtc': must be one of 'aiortc', 'pion'"):
        scen.build(tmp_path / "w.toml", data)


def test_pion_needs_its_binary_and_has_no_burst_cap(tmp_path, monkeypatch):
    data = _webrtc5()
    data["webrtc"] = {**data["webrtc"], "stack": "pion"}
    monkeypatch.setattr(scen, "PION_BINARY", tmp_path / "missing" / "pion-rtc")
    with pytest.raises(ConfigError, match="stack = \"pion\" needs .*pion-rtc, which is not built.*make setup"):
        scen.build(tmp_path / "w.toml", data)
    fake = tmp_path / "pion-rtc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setattr(scen, "PION_BINARY", fake)
    real = importlib.util.find_spec  # the Pion stack does not need aiortc
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "aiortc" else real(name, *a))
    assert scen.build(tmp_path / "w.toml", data).data["webrtc"]["stack"] == "pion"
    data["webrtc"]["max_burst_ms"] = 100
    with pytest.raises(ConfigError, match="max_burst_ms is the aiortc receiver's"):
        scen.build(tmp_path / "w.toml", data)
    data["webrtc"] = {**data["webrtc"], "stack": "aiortc"}  # aiortc's own key, and its own requirement
    with pytest.raises(ConfigError, match="needs aiortc"):
        scen.build(tmp_path / "w.toml", data)


def test_webrtc_and_rtc_cannot_share_a_scenario(tmp_path):
    data = _webrtc5()
    data["rtc"] = {"start_kbps": 128}
    with pytest.raises(ConfigError, match="\\[rtc\\] and \\[webrtc\\]"):
        scen.build(tmp_path / "both.toml", data)


def test_a_missing_aiortc_is_said_before_a_run(tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "aiortc" else real(name, *a))
    with pytest.raises(ConfigError, match="needs aiortc"):
        scen.build(tmp_path / "w.toml", _webrtc5())


def test_the_workload_starts_a_receiver_on_the_phone_and_a_sender_on_the_server(tmp_path):
    log: list = []
    t0 = 1_800_000_000_000_000_000
    lab = Lab(FakeNet(log), tmp_path, t0, 120.0, 1.0, "cubic", V4.server, V4.client)
    loads = workloads_for(scen.load("webrtc5").cases[0].spec, 5)
    (w,) = [x for x in loads if isinstance(x, WebRtc)]
    w.start(lab)
    for p in lab.procs:
        p.wait()
    (rx_host, rx), (tx_host, tx) = [(h, a[a.index("-m") + 1:]) for h, a in log]
    assert rx_host == "cli" and rx[:2] == ["accessnet.webrtc", "recv"]
    assert tx_host == "srv" and tx[:2] == ["accessnet.webrtc", "send"]
    opt = dict(zip(tx[2::2], tx[3::2]))
    assert opt["--start-kbps"] == "128.0" and opt["--max-kbps"] == "10000.0" and opt["--fps"] == "30.0"
    assert int(opt["--start-at"]) == t0 + 2_000_000_000 and float(opt["--duration"]) == 120 - 2 - 1
    ropt = dict(zip(rx[2::2], rx[3::2]))
    assert opt["--log"].endswith("rtc_tx.csv") and ropt["--log"].endswith("rtc_rx.csv")
    assert ropt["--max-burst-ms"] == "100.0" and ropt["--local-ip"] != opt["--local-ip"]
    assert w.ends_run() and w.done()
    assert Path(ropt["--trace"]).name == "webrtc_rx_trace.csv"
    assert "--diag-arrival" not in ropt and "--diag-rtt-ms" not in ropt  # diagnostics off by default


def test_the_receivers_diagnostics_pass_from_the_scenario_and_not_to_pion(tmp_path):
    """[webrtc] diag_arrival / diag_rtt_ms (issue 35) reach the aiortc receiver's command line; with stack =
    "pion" they are refused (they are aiortc's estimator's)."""
    log: list = []
    spec = scen.load("webrtc5").cases[0].spec
    spec = {**spec, "webrtc": {**spec["webrtc"], "diag_arrival": "us", "diag_rtt_ms": 100}}
    lab = Lab(FakeNet(log), tmp_path, 1_800_000_000_000_000_000, 120.0, 1.0, "cubic", V4.server, V4.client)
    (w,) = [x for x in workloads_for(spec, 5) if isinstance(x, WebRtc)]
    w.start(lab)
    for p in lab.procs:
        p.wait()
    rx = log[0][1][log[0][1].index("-m") + 1:]
    ropt = dict(zip(rx[2::2], rx[3::2]))
    assert ropt["--diag-arrival"] == "us" and ropt["--diag-rtt-ms"] == "100.0"
    data = _webrtc5()
    data["webrtc"] = {**data["webrtc"], "stack": "pion", "diag_arrival": "us"}
    with pytest.raises(ConfigError, match="diag_arrival: diagnostics of the aiortc receiver"):
        scen.build(tmp_path / "w.toml", data)
    data["webrtc"] = {**_webrtc5()["webrtc"], "diag_arrival": "ns"}
    with pytest.raises(ConfigError, match="diag_arrival = 'ns'"):
        scen.build(tmp_path / "w.toml", data)


def test_the_pion_stack_starts_its_binary_with_the_same_command_line(tmp_path):
    """stack = "pion": the same receiver and sender arguments, to build/pion-rtc instead of python -m
    accessnet.webrtc; meta.json's plan records the stack (aiortc when the key is absent)."""
    t0 = 1_800_000_000_000_000_000
    spec = scen.load("webrtc5").cases[0].spec
    runs = {}
    for stack in ("aiortc", "pion"):
        log: list = []
        lab = Lab(FakeNet(log), tmp_path, t0, 120.0, 1.0, "cubic", V4.server, V4.client)
        cfg = {**spec, "webrtc": {**spec["webrtc"], "stack": stack}} if stack == "pion" else spec
        (w,) = [x for x in workloads_for(cfg, 5) if isinstance(x, WebRtc)]
        assert w.plan == {"stack": stack}
        w.start(lab)
        for p in lab.procs:
            p.wait()
        runs[stack] = log
    for (h_a, a), (h_p, p) in zip(runs["aiortc"], runs["pion"]):
        assert h_a == h_p
        prog_a = a[a.index("-m") + 1:]
        if "--trace" in prog_a:  # the aiortc receiver's estimator trace: Pion's estimator is at the sender
            i = prog_a.index("--trace")
            assert Path(prog_a[i + 1]).name == "webrtc_rx_trace.csv"
            prog_a = prog_a[:i] + prog_a[i + 2:]
        assert prog_a[0] == "accessnet.webrtc" and p[p.index(str(webrtc.PION_BINARY)) + 1:] == prog_a[1:]
    assert [a[a.index(str(webrtc.PION_BINARY)) + 1] for _, a in runs["pion"]] == ["recv", "send"]


def test_two_flows_each_get_a_signalling_port_and_their_own_logs(tmp_path):
    """webrtc10 (seed 002's second case): two receivers on the phone, two senders on the server, flow 1's
    port one above flow 0's and its logs suffixed _1, so the metrics find both (metrics.rtc_suffixes)."""
    log: list = []
    lab = Lab(FakeNet(log), tmp_path, 1_800_000_000_000_000_000, 120.0, 1.0, "cubic", V4.server, V4.client)
    (w,) = [x for x in workloads_for(scen.load("webrtc10").cases[0].spec, 5) if isinstance(x, WebRtc)]
    w.start(lab)
    for p in lab.procs:
        p.wait()
    runs = [(h, dict(zip(a[a.index("-m") + 3::2], a[a.index("-m") + 4::2]))) for h, a in log]
    assert [h for h, _ in runs] == ["cli", "srv", "cli", "srv"]
    assert [o["--signal-port"] for _, o in runs] == ["5008", "5008", "5009", "5009"]
    assert [Path(o["--log"]).name for _, o in runs] == ["rtc_rx.csv", "rtc_tx.csv", "rtc_rx_1.csv", "rtc_tx_1.csv"]
    assert len(w.senders) == 2 and w.ends_run()


# ----------------------------------------------------------------------------- both ends on the loopback

def _env() -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "mininet"), str(ROOT),
                                                         os.environ.get("PYTHONPATH", "")])}


@needs_aiortc
@pytest.mark.parametrize("loopback", ["127.0.0.1", "::1"], ids=["ip4", "ip6"])
def test_both_ends_on_the_loopback_write_the_logs_the_metrics_read(tmp_path, loopback):
    """Three seconds of media between two processes over 127.0.0.1 or ::1 (ICE host candidate of either
    family, DTLS-SRTP): the per-packet logs carry the [rtc] columns and rtc_metrics reads them; the stats hold
    a row a second."""
    if loopback == "::1" and ipv6_missing():
        pytest.skip(ipv6_missing())
    port = 15_000 + os.getpid() % 1000 + (loopback == "::1")
    rx = subprocess.Popen([sys.executable, "-m", "accessnet.webrtc", "recv", "--local-ip", loopback,
                           "--signal-port", str(port), "--duration", "40", "--log", str(tmp_path / "rtc_rx.csv"),
                           "--stats", str(tmp_path / "rx_stats.csv"), "--trace", str(tmp_path / "webrtc_rx_trace.csv"),
                           *(["--diag-arrival", "us"] if loopback == "::1" else [])], env=_env(), cwd=ROOT,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        tx = subprocess.run([sys.executable, "-m", "accessnet.webrtc", "send", "--dst", loopback, "--local-ip",
                             loopback, "--signal-port", str(port), "--duration", "3",
                             "--start-at", str(time.time_ns() + 5_000_000_000), "--log", str(tmp_path / "rtc_tx.csv"),
                             "--stats", str(tmp_path / "tx_stats.csv")], env=_env(), cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    finally:
        rx.terminate()
        out = rx.communicate(timeout=30)[0]
    assert tx.returncode == 0, tx.stdout + tx.stderr
    print(tx.stdout)
    assert "connected -" in tx.stdout, f"not connected before the start time: {tx.stdout}"
    assert rx.returncode == 0, out
    txl, rxl = pd.read_csv(tmp_path / "rtc_tx.csv"), pd.read_csv(tmp_path / "rtc_rx.csv")
    assert list(txl.columns) == [*RTC_TX_COLUMNS, "frame"] and list(rxl.columns) == [*RTC_RX_COLUMNS, "frame"]
    skipped = int(tx.stdout.split(" frames skipped")[0].rsplit(" ", 1)[1])  # a loaded machine may starve it
    assert 85 <= len(txl) + skipped <= 95 and len(rxl) == len(txl)  # 30 frames/s x 3 s, 1 packet each at 128k
    assert (txl["frame"] == range(len(txl))).all()
    assert (txl["rate_bps"][:60] == 128_000).all()  # no REMB before the estimator's first 3 s
    assert (rxl["send_ns"] == txl["send_ns"]).all() and (rxl["recv_ns"] > rxl["send_ns"]).all()
    m = rtc_metrics(tmp_path, None, 1)
    assert m["loss_rate"] == 0 and m["owd_median_s"] < 0.05
    assert m["goodput_bps"] == pytest.approx(128_000 * 557 / 533, rel=0.1)  # + 24 B of RTP header a packet
    st = pd.read_csv(tmp_path / "tx_stats.csv")
    assert list(st.columns) == list(webrtc.TX_STATS) and 2 <= len(st) <= 5
    assert list(pd.read_csv(tmp_path / "rx_stats.csv").columns) == list(webrtc.RX_STATS)
    tr = pd.read_csv(tmp_path / "webrtc_rx_trace.csv")  # the estimator's input and state, a row per media packet
    assert list(tr.columns) == list(webrtc.RX_TRACE) and len(tr) == len(rxl)
    assert (tr["recv_ns"] == rxl["recv_ns"]).all() and (tr["rtp_seq"].diff().dropna() % 65536 == 1).all()
    assert tr["t_delta_ms"].notna().sum() >= 80  # a frame is a group: ~one delta per frame
    assert set(tr["usage"]) <= {"normal", "overusing", "underusing"} and (tr["threshold_ms"] >= 6).all()
    frac = (tr["arrival_ms"] % 1 != 0).mean()  # aiortc's integer ms, or the diagnostic's fractional ms
    assert frac > 0.9 if loopback == "::1" else frac == 0
    from experiments.aiortc_overuse import analyse  # the issue-35 analysis replays the trace through aiortc
    res, _ = analyse(tmp_path, quiet=True)
    assert res["replay_matches_log"] and res["deltas"] == tr["t_delta_ms"].notna().sum()


@needs_pion
def test_pion_both_ends_on_the_loopback_write_the_logs_the_metrics_read(tmp_path):
    """Three seconds of media between build/pion-rtc's receiver and sender over 127.0.0.1 (no namespaces):
    media flows, the per-packet logs carry the [rtc] columns that rtc_metrics reads, the stats hold a row a
    second in webrtc.PION_TX_STATS / PION_RX_STATS with GCC's state and TWCC feedback in them."""
    port = 16_000 + os.getpid() % 1000
    exe = str(webrtc.PION_BINARY)
    rx = subprocess.Popen([exe, "recv", "--local-ip", "127.0.0.1", "--signal-port", str(port), "--duration", "40",
                           "--log", str(tmp_path / "rtc_rx.csv"), "--stats", str(tmp_path / "rx_stats.csv")],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        tx = subprocess.run([exe, "send", "--dst", "127.0.0.1", "--local-ip", "127.0.0.1", "--signal-port", str(port),
                             "--duration", "3", "--start-at", str(time.time_ns() + 3_000_000_000),
                             "--log", str(tmp_path / "rtc_tx.csv"), "--stats", str(tmp_path / "tx_stats.csv")],
                            capture_output=True, text=True, timeout=60)
    finally:
        rx.terminate()
        out = rx.communicate(timeout=30)[0]
    print(tx.stdout, tx.stderr, out)
    assert tx.returncode == 0, tx.stdout + tx.stderr
    assert "connected -" in tx.stdout, f"not connected before the start time: {tx.stdout}"
    assert rx.returncode == 0, out
    txl, rxl = pd.read_csv(tmp_path / "rtc_tx.csv"), pd.read_csv(tmp_path / "rtc_rx.csv")
    assert list(txl.columns) == [*RTC_TX_COLUMNS, "frame"] and list(rxl.columns) == [*RTC_RX_COLUMNS, "frame"]
    skipped = int(tx.stdout.split(" frames skipped")[0].rsplit(" ", 1)[1])
    assert 85 <= txl["frame"].nunique() + skipped <= 95  # 30 frames/s x 3 s
    assert len(rxl) == len(txl) and (rxl["seq"] == txl["seq"]).all()
    assert (rxl["send_ns"] == txl["send_ns"]).all() and (rxl["recv_ns"] > rxl["send_ns"]).all()
    assert txl["rate_bps"].iloc[0] == 128_000  # the start rate, then GCC's
    m = rtc_metrics(tmp_path, None, 1)
    assert m["loss_rate"] == 0 and m["owd_median_s"] < 0.05 and m["received"] == len(txl)
    st = pd.read_csv(tmp_path / "tx_stats.csv")
    assert list(st.columns) == list(webrtc.PION_TX_STATS) and 2 <= len(st) <= 5
    assert st["twcc_reports"].sum() > 0 and st["delay_bps"].notna().all() and st["usage"].notna().all()
    assert (st["sent_packets"] > 0).all() and st["rtt_s"].dropna().lt(0.05).all()
    rst = pd.read_csv(tmp_path / "rx_stats.csv")
    assert list(rst.columns) == list(webrtc.PION_RX_STATS) and rst["twcc_reports"].sum() > 0
    assert 55 <= rst["received"].sum() <= len(rxl)  # whole seconds only: the part-second before the stop has no row


# ----------------------------------------------------------------------------- acceptance (issue 14)

def _lab_missing(stack: str = "aiortc") -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if importlib.util.find_spec("mininet") is None or shutil.which("mn") is None:
        return "needs Mininet (make setup installs it)"
    if stack == "aiortc" and not HAVE_AIORTC:
        return "aiortc is not installed (make setup installs it)"
    if stack == "pion" and not HAVE_PION:
        return f"{webrtc.PION_BINARY} is not built (make setup builds it with Go)"
    return None


ACCEPT_CHANGE_S, ACCEPT_START_S = 22.0, 1.0
ACCEPT = f"""
description = "issue 14 acceptance: {{stack}} alone on 5 Mbit/s, 50 ms, 50 packets; the link halves at {ACCEPT_CHANGE_S:g} s"
[run]
profile = "rtc50"
buffer = "50p"
aqms = ["fifo"]
iws = [10]
reps = 1
seed = 1
duration_s = 32
tail_s = 1
switch = "model"
rate_changes = [[{ACCEPT_CHANGE_S:g}, 2500000]]
[audio]
interval_ms = 20
payload = 40
[webrtc]
start_kbps = 1000
start_s = {ACCEPT_START_S:g}
stack = "{{stack}}"
"""


@pytest.mark.root
@pytest.mark.parametrize("stack", [
    pytest.param("aiortc", marks=pytest.mark.skipif(_lab_missing() is not None, reason=str(_lab_missing()))),
    pytest.param("pion", marks=[
        pytest.mark.skipif(_lab_missing("pion") is not None, reason=str(_lab_missing("pion"))),
        # issue 35: the upstream arrival-group accumulator never closed a group behind the halved link's
        # standing queue (packets 3.84 ms apart), freezing GCC at 3.8 Mbit/s with 40 % loss; build/pion-rtc
        # is built with the fix (tools/pion-rtc/patches), and the run's limit counts from t0 (it ended at 24 s)
    ]),
])
def test_acceptance_the_rate_rises_on_an_idle_link_and_falls_when_it_halves(tmp_path, stack):
    """Issue 14's acceptance (issue 35 for Pion): in the emulated network (reference-model switch, 5 Mbit/s,
    50 ms), the rate rises from its start on the idle link, and within 5 s of the link rate halving
    (``rate_changes``) it is below the new link rate; aiortc's driven by REMB, Pion's by its send-side GCC on
    TWCC feedback. Starts at 1000 kbit/s, not the seed's 128: at aiortc's +8 %/s the climb from 128 kbit/s
    above 2.5 Mbit/s alone takes about 40 s. A climb cut by a fall on the idle link while the hypervisor took
    CPU time from the VM (meta.json's ``host_steal_ms``) is an xfail, with numbers, as the single-bottleneck
    check's: the stall reads as queueing delay to the estimator."""
    (tmp_path / "webrtc_accept.toml").write_text(ACCEPT.format(stack=stack))
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", str(tmp_path / "webrtc_accept.toml"),
                        "--out", str(tmp_path / "out")], cwd=ROOT, env=_env(), capture_output=True, text=True,
                       timeout=240)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0, r.stderr[-2000:]
    (rep,) = sorted((tmp_path / "out").glob("*/*/rep0"))
    import json
    t0 = json.loads((rep / "meta.json").read_text())["audio_start_ns"]
    st = pd.read_csv(rep / "webrtc_tx_stats.csv")
    columns = list(st.columns)
    st["t_s"] = (st["t_ns"] - t0) / 1e9
    print(st.to_string())
    before = st[st["t_s"] <= ACCEPT_CHANGE_S]
    after = st[(st["t_s"] > ACCEPT_CHANGE_S) & (st["t_s"] <= ACCEPT_CHANGE_S + 5)]
    peak = before["target_bps"].max()
    assert json.loads((rep / "meta.json").read_text())["plan"]["workloads"]["webrtc"]["stack"] == stack
    if stack == "pion":
        assert columns == list(webrtc.PION_TX_STATS)
        assert before["twcc_reports"].sum() > 0, "no TWCC feedback reached the sender"
    else:
        assert before["rembs"].sum() > 0, "no REMB reached the sender"
    rose = peak >= 2 * 1_000_000 and peak > 2_500_000
    steal = json.loads((rep / "meta.json").read_text()).get("host_steal_ms") or 0
    fell_idle = (before["target_bps"].diff() < 0).any()   # overuse on the idle link: the host's delay, not the link's
    if not rose and fell_idle and steal > 0:
        pytest.xfail(f"the rate fell on the idle link (peak {peak}) while the hypervisor took {steal:.0f} ms of CPU "
                     "time from this VM: a stall reads as queueing delay to the estimator")
    assert rose, f"the rate did not rise on the idle link (peak {peak})"
    assert after["target_bps"].min() < 2_500_000, \
        f"the rate did not fall below the halved link within 5 s: {after['target_bps'].tolist()}"
    m = rtc_metrics(rep, None, 1)
    assert m["received"] > 0.9 * m["sent"]
