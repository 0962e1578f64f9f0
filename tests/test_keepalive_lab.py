"""Keep-alive web users in the lab: two users on HSPA for about 20 s, the reference model as the switch, real
Linux TCP between the lab's namespaces (the main job, ``accessnet.run``, on a scenario of the test's own; the run
leases its own lab slot and cleans it up). Checked against the captures and the seed, not only the tools' logs:
connections reused after more than 1 s of idle, at most ``connections`` per user, flows.csv one row per page of
the size the seed draws."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from experiments.metrics import TCP_ACK, TCP_SYN, read_flows, read_tcp_headers, summarize_rep

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)")
WEB = 8080
SCENARIO = """description = "test: 2 keep-alive users, 20 s"

[run]
profile = "hspa"
buffer = "2bdp"
aqms = ["fifo"]
iws = [10]
reps = 1
duration_s = 24
tail_s = 1

[audio]
interval_ms = 20
payload = 40

[users]
count = 2
min_bytes = 50000
max_bytes = 200000
idle_mean_s = 1.5
start_s = 2
mode = "keepalive"
objects = 4
connections = 3
"""


@pytest.fixture(scope="module")
def rep(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("keepalive")
    (tmp / "ka2.toml").write_text(SCENARIO)
    r = subprocess.run([sys.executable, "-m", "accessnet.run", "--scenario", str(tmp / "ka2.toml"), "--switch",
                        "model", "--out", str(tmp / "results")], cwd=ROOT, capture_output=True, text=True,
                       timeout=240)
    print(r.stdout[-3000:], r.stderr[-3000:])
    assert r.returncode == 0, r.stderr[-2000:]
    (found,) = sorted((tmp / "results").glob("*/*/rep0"))
    meta = json.loads((found / "meta.json").read_text())
    assert meta["status"] == "ok", meta.get("error")
    return found


def server_log(rep: Path) -> list[dict]:
    return [json.loads(x) for x in (rep / "server_flows.jsonl").read_text().splitlines() if x.strip()]


def test_flows_csv_has_the_pages_as_the_seed_draws_them(rep):
    """One flows.csv row per page (burst = user), in the order of the users' page log; the completed pages of
    each user have the sizes its generator draws from meta.json's seed, in order."""
    flows = read_flows(rep)
    meta = json.loads((rep / "meta.json").read_text())
    plan = meta["plan"]["workloads"]["users"]
    assert plan["mode"] == "keepalive" and plan["connections"] == 3
    assert set(flows["burst"]) == {0, 1}
    for k in (0, 1):
        mine = flows[flows["burst"] == k].sort_values("start_ns")
        done = mine[mine["completed"] == 1]
        assert len(done) >= 2, f"user {k}: {len(done)} pages completed"
        rng = random.Random(plan["seed"] * 1009 + k)
        rng.expovariate(1 / 1.5)
        drawn = []
        for _ in range(len(mine)):
            drawn.append(rng.randint(50_000, 200_000))
            rng.expovariate(1 / 1.5)
        assert done["bytes"].tolist() == drawn[:len(done)]
    s = summarize_rep(rep)
    assert s["tcp"]["flows"] == len(flows) and s["frozen"]["not_measured"] is None


def test_connections_are_reused_after_idle(rep):
    """In server.pcap: at most 3 connections per user (6 SYNs to the web server at most, one per port), and some
    connection carried a response more than 1 s after the data of its previous one, that response asked for by a
    request on the same connection; the server's log says the same per response."""
    pk, _ = read_tcp_headers(rep / "server.pcap")
    syn = pk[((pk["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN) & (pk["dport"] == WEB)]
    assert 2 <= syn["sport"].nunique() <= 6 and len(syn) == syn["sport"].nunique()
    data = pk[(pk["sport"] == WEB) & (pk["payload"] > 0)]
    reqs = pk[(pk["dport"] == WEB) & (pk["payload"] > 0)]
    reused = []
    for port, seg in data.groupby("dport"):
        t = seg["ts_ns"].to_numpy()
        for before, after in zip(t[:-1], t[1:]):
            asked = reqs[(reqs["sport"] == port) & (reqs["ts_ns"] > before) & (reqs["ts_ns"] <= after)]
            if after - before > 1e9 and len(asked):
                reused.append((port, (after - before) / 1e9))
    assert reused, "no connection carried a response after more than 1 s of idle"
    by_port = defaultdict(list)
    for r in server_log(rep):
        by_port[r["client_port"]].append(r)
    gaps = [(b["start_ns"] - a["end_ns"]) / 1e9 for rs in by_port.values()
            for a, b in zip(sorted(rs, key=lambda r: r["request"]), sorted(rs, key=lambda r: r["request"])[1:])]
    assert max(gaps) > 1.0 and set(by_port) <= set(syn["sport"])
    users = defaultdict(set)
    for line in (rep / "client_requests_users.csv").read_text().splitlines()[1:]:
        flow, burst, _obj, lport, *_ = line.split(",")
        if lport != "0":
            users[burst].add(int(lport))
    assert all(len(p) <= 3 for p in users.values()) and set().union(*users.values()) == set(syn["sport"])
