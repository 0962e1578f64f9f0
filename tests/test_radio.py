"""A radio profile in a real replication (profiles ``rate_min_bps``, ``slot_s``, ``client_window_bytes``): the
link's rate is drawn every slot from the replication's seed and the controller writes each one to the switch;
a tc classifier on the client's interface (``bpf/rwnd.bpf.c``) clamps the window its segments advertise. Real
Linux TCP in namespaces, the reference model and BMv2 (skipped with the reason where the P4 toolchain is
missing) as the switch; asserted on the replication's record, the controller's log and the packet captures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd
import pytest

from accessnet.bmv2_veth import missing_toolchain
from accessnet.profiles import profile
from experiments.iplayer import PROTO_TCP, ip_layer

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
WINDOW = 14_600  # ten 1460 B segments: IW10 leaves whole, then the window bounds the flight
RADIO = {"name": "radiotest", "rate_bps": 2e6, "delay_ms": 10.0, "rate_min_bps": 5e5, "slot_s": 0.5,
         "client_window_bytes": WINDOW}
SCENARIO = f"""description = "test: one web flow over a radio link whose rate changes every 0.5 s"
[run]
profile = {{ name = "radiotest", rate_bps = 2e6, delay_ms = 10.0, rate_min_bps = 5e5, slot_s = 0.5, \
client_window_bytes = {WINDOW} }}
buffer = "256p"
aqms = ["fifo"]
iws = [10]
reps = 1
seed = 5
duration_s = 10
tail_s = 1
[audio]
interval_ms = 20
payload = 40
[web]
flows = 1
total_bytes = 300000
start_s = [2, 2.5]
"""


@pytest.fixture(scope="module", params=["model", "bmv2"])
def rep(request, tmp_path_factory) -> Path:
    if request.param == "bmv2":
        why = missing_toolchain()
        if why:
            pytest.skip(why)
        subprocess.run(["make", "-s", "build"], cwd=ROOT, check=True)
    tmp = tmp_path_factory.mktemp(f"radio-{request.param}")
    (tmp / "radio.toml").write_text(SCENARIO)
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", str(tmp / "radio.toml"), "--switch",
                        request.param, "--out", str(tmp / "out")], cwd=ROOT, capture_output=True, text=True,
                       timeout=240)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0, r.stderr[-2000:]
    reps = sorted((tmp / "out").glob("*/*/rep0"))
    assert len(reps) == 1, reps
    return reps[0]


def tcp_segments(pcap: Path):
    """(source address, tcp, payload length) of every TCP segment of a capture, IPv4 or IPv6 (the length from
    the IP header: the lab captures 128 B of each frame)."""
    with open(pcap, "rb") as f:
        for _, buf in dpkt.pcap.Reader(f):
            ip = ip_layer(buf)
            if ip is not None and ip.proto == PROTO_TCP and not ip.later_fragment:
                tcp = dpkt.tcp.TCP(bytes(buf[ip.l4:]))
                yield ip.src, tcp, ip.l4_len - 4 * tcp.off


def test_the_rates_are_the_seeds_draws_and_the_controller_applied_each(rep):
    meta = json.loads((rep / "meta.json").read_text())
    prof = profile(RADIO)
    assert meta["profile"]["rate_min_bps"] == 5e5 and meta["profile"]["client_window_bytes"] == WINDOW
    want = prof.rate_schedule(meta["seed"], 60.0)[:len(meta["rate_changes"])]
    assert [tuple(x) for x in meta["rate_changes"]] == list(want) and len(want) >= 2 * 10
    tuning = pd.read_csv(rep / "tuning.csv")  # one row per 100 ms period: the rate the controller set then
    t = (tuning["t_ns"].to_numpy() - meta["audio_start_ns"]) / 1e9
    rate = tuning["rate_bps"].to_numpy(dtype=float)
    slots = [(at, r) for at, r in want if at + prof.slot_s <= t[-1]]
    assert len(slots) >= 5
    for at, r in slots:  # each slot's rate set within one controller period of the slot's start (the log: 6 digits)
        k = int(np.searchsorted(t, at))
        assert t[k] - at < 0.15 and rate[k] == pytest.approx(r, rel=1e-5), (at, r, t[k], rate[k])


def test_the_client_window_bounds_the_servers_flight(rep):
    """The client's windows, as the server receives them, never exceed the phone's window; the window is
    reached (the transfer is window-bound); the server's flight stays within it; IW10 goes out whole."""
    cli_syns = [t for _, t, _ in tcp_segments(rep / "client.pcap") if t.flags & dpkt.tcp.TH_SYN
                and not t.flags & dpkt.tcp.TH_ACK]
    assert cli_syns and all(t.win <= WINDOW for t in cli_syns)
    # the phone's namespace runs without window scaling: the field is bytes (bpf/rwnd.bpf.c)
    assert not any(o == dpkt.tcp.TCP_OPT_WSCALE for t in cli_syns for o, _ in dpkt.tcp.parse_opts(t.opts))
    srv = list(tcp_segments(rep / "server.pcap"))
    server_ip = next(src for src, t, _ in srv if t.flags & dpkt.tcp.TH_SYN and t.flags & dpkt.tcp.TH_ACK)
    assert max(t.win for src, t, _ in srv if src != server_ip) == WINDOW
    acked, flight_max, sent = None, 0, 0
    for src, t, n in srv:
        if src == server_ip:  # SYN and FIN take a sequence number each
            sent = max(sent, (t.seq + n + bool(t.flags & (dpkt.tcp.TH_SYN | dpkt.tcp.TH_FIN))) & 0xFFFFFFFF)
        elif t.flags & dpkt.tcp.TH_ACK:
            acked = t.ack
        if acked is not None and sent:
            flight_max = max(flight_max, (sent - acked) & 0xFFFFFFFF)
    assert 10 * 1448 <= flight_max <= WINDOW  # IW10 went out whole, and never more than the window in flight


def test_the_drain_follows_the_rates(rep):
    """The drain (the access link's delay line) takes each rate the controller sets, after the switch takes it
    (controller.tuner): the audio's delay beyond the base is the switch's predicted sojourn while the rate
    changes every 0.5 s between 0.5 and 2 Mbit/s. A drain that lags the switch queues behind its model for the
    rest of a slot (the drain changed before BMv2's P4Runtime writes: 40 ms for a whole slot), one that does
    not follow by hundreds of ms. The model switch changes both at once: within 1 ms for 99 % of the audio.
    BMv2 delivers the first frame of a busy period to the drain a few ms after its ingress stamp (README,
    "Known limits"), and the whole busy period keeps that offset (here about 2 ms, 10 ms at an IW10 burst's
    start): the median within 5 ms, every packet within 15 ms."""
    from experiments.bottleneck_check import summary
    from test_e2e_smoke import host_stalled, within_1ms
    s = summary(rep)
    print(f"single-bottleneck proof on the radio ({s['switch']}): {s}")
    assert s["queued"]["packets"] > 0, "the web flow should have built a queue"
    if s["switch"] == "bmv2":
        ok = all(s[k]["median_ms"] <= 5 and s[k]["max_ms"] <= 15 for k in ("queued", "idle"))
    else:
        ok = within_1ms(s["queued"]) and within_1ms(s["idle"])
    stalled = host_stalled(rep)
    if not ok and stalled:
        pytest.xfail(stalled)
    assert ok, s
