"""End to end: the main job on a short scenario (a few seconds of audio + one web flow),
with real Linux TCP in namespaces, asserting on the measured data.

Runs once with the reference model as the switch and once with BMv2 when the
toolchain is present. Also the single-bottleneck proof: each audio packet's
delay beyond the base delay equals the switch's predicted sojourn within 1 ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import pytest

from accessnet.bmv2_veth import missing_toolchain
from experiments.bottleneck_check import sojourn_errors_ns
from experiments.metrics import read_audio, read_flows, summarize_rep
from experiments.telemetry_reader import read_telemetry

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
PROPAGATION_MS = 70 + 11  # HSPA access link + server side, one way


def run_smoke(tmp: Path, switch: str) -> Path:
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", "smoke", "--switch", switch,
                        "--out", str(tmp)], cwd=ROOT, capture_output=True, text=True, timeout=180)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0, r.stderr[-2000:]
    reps = sorted(tmp.glob("*/*/rep0"))
    assert len(reps) == 1, reps
    return reps[0]


@pytest.fixture(scope="module", params=["model", "bmv2"])
def rep(request, tmp_path_factory):
    if request.param == "bmv2":
        why = missing_toolchain()
        if why:
            pytest.skip(why)
        subprocess.run(["make", "-s", "build"], cwd=ROOT, check=True)
    return run_smoke(tmp_path_factory.mktemp(f"smoke-{request.param}"), request.param)


def test_raw_files_exist_and_parse(rep):
    for name in ("meta.json", "audio_tx.csv", "audio_rx.csv", "flows.csv", "telemetry.pcap", "server.pcap",
                 "client.pcap", "switch.json", "switch.log"):
        assert (rep / name).stat().st_size > 0, name
    tel, _ = read_telemetry(rep / "telemetry.pcap")
    assert len(tel) > 100 and tel["seq"].is_monotonic_increasing
    s = summarize_rep(rep)
    assert s["audio"]["sent"] > 0


def test_audio_arrives_with_the_configured_delay(rep):
    """Before the web flow starts the queue is empty: OWD = propagation (+ <0.4 ms of audio serialisation)
    within 1 ms at the median, unless the host stalled during the run (see ``host_stalled``)."""
    a = read_audio(rep).df
    assert a["recv_ns"].notna().mean() > 0.99
    owd_ms = (a["recv_ns"] - a["send_ns"]).dropna() / 1e6
    off = abs(np.median(owd_ms[:100]) - PROPAGATION_MS)
    print(f"median OWD of the first 100 audio packets: {np.median(owd_ms[:100]):.3f} ms, {off:.3f} ms off")
    stalled = host_stalled(rep)
    if off >= 1.0 and stalled:
        pytest.xfail(f"{stalled}; the idle median OWD was {off:.2f} ms off")
    assert off < 1.0


def test_the_closed_loop_ran_on_the_switch_telemetry(rep):
    import pandas as pd
    from controller.tuner import COLUMNS
    t = pd.read_csv(rep / "tuning.csv")
    assert list(t.columns) == COLUMNS
    dt = t["t_ns"].diff().dropna() / 1e6
    assert len(t) > 50 and dt.median() == pytest.approx(100, abs=5)  # one row per 100 ms period
    assert t["audio_pkts"].sum() > 100  # the telemetry reached the controller
    assert t["new_flows"].sum() >= 1  # the web flow's SYN-ACK was seen
    if (rep / "controller.log").exists():  # BMv2: the P4Runtime controller installed, tuned, restored
        log = (rep / "controller.log").read_text()
        assert "applied pipeline and state" in log and "leaving the switch with the configured parameters" in log


def test_web_flow_completes(rep):
    flows = read_flows(rep)
    assert flows["completed"].tolist() == [1] and flows["bytes"].tolist() == [100000]


WIRE_STALL_MS = 1.0


def host_stalled(rep: Path) -> str | None:
    """Why no delay measured in this run can judge the switch, or None: the delay lines (the wire, at the
    highest real-time priority) report a frame more than 1 ms late, or the hypervisor took CPU time from the VM
    during the run (meta.json's ``host_steal_ms``)."""
    from experiments.bottleneck_check import wire_lateness_ms
    late = wire_lateness_ms(rep)
    if late > WIRE_STALL_MS:
        return f"host stalled: the delay line ran {late:.1f} ms late during this run"
    steal = json.loads((rep / "meta.json").read_text()).get("host_steal_ms") or 0
    if steal > 0:
        return f"the hypervisor took {steal:.0f} ms of CPU time from this VM during the run"
    return None


def within_1ms(part: dict) -> bool:
    """The 99th percentile's statement for a sample of any size: at most 1 % of the packets more than 1 ms off,
    and one may always be (the queued part of a smoke run has about 20 packets, so its p99 is its maximum). A
    switch process that is not real-time (BMv2, the model) loses the CPU for a few milliseconds now and then on
    a 2-core host and delays the packet in hand; a second queue on the path delays every later packet of a
    burst, never just one."""
    return part["over_1ms"] <= max(1, part["packets"] // 100)


def test_switch_is_the_only_bottleneck(rep):
    """Idle queue: OWD = base delay (propagation + transmission) within 1 ms for 99 % of the audio packets.
    Queue: the extra delay = the switch's predicted sojourn within 1 ms for 99 % of them (``within_1ms``). If the
    delay lines (the wire, at the highest real-time priority) themselves report a frame more than 1 ms late, or
    the hypervisor took CPU time from the VM during the run (``host_steal_ms``), the host stalled and the
    measurement cannot judge the switch: reported as xfail, with numbers."""
    from experiments.bottleneck_check import summary
    s = summary(rep)
    print(f"single-bottleneck proof ({s['switch']}): {s}")
    tel, _ = read_telemetry(rep / "telemetry.pcap")
    assert (tel["sojourn_ns"] > 5_000_000).any(), "the web flow should have built a queue"
    ok = within_1ms(s["idle"]) and s["queued"]["packets"] > 0 and within_1ms(s["queued"])
    stalled = host_stalled(rep)
    if not ok and stalled:
        pytest.xfail(stalled)
    assert within_1ms(s["idle"]), s["idle"]
    assert s["queued"]["packets"] > 0 and within_1ms(s["queued"]), s["queued"]


def test_within_1ms_forgives_one_stall_not_a_second_queue():
    assert within_1ms({"packets": 21, "over_1ms": 1})
    assert not within_1ms({"packets": 21, "over_1ms": 2})  # two late packets of 21: more than 1 %
    assert within_1ms({"packets": 400, "over_1ms": 4})
    assert not within_1ms({"packets": 400, "over_1ms": 5})
