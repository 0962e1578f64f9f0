"""QUIC page loads (accessnet.quic, the [quic] workload). Pure pieces anywhere; the real server and client
(aioquic) over the loopback of a network namespace of the test's own (root): there the kernel's UDP counters
count this test's datagrams alone, and they are the witness, independent of aioquic and of the module, of
what the server's recovery counters say."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from accessnet import quic
from accessnet import scenario as scen
from accessnet.profiles import profile
from accessnet.web import merge_flow_logs
from accessnet.workloads import Lab, Quic, run_limit_s, wait_for_line, workloads_for
from refmodel.params import ConfigError

PORT = 14433
AIOQUIC_IW = 10  # RFC 9002's initial window (kInitialWindow), aioquic's K_INITIAL_WINDOW
AIOQUIC_DATAGRAM = 1200  # aioquic's default max_datagram_size: QUIC's smallest allowed (RFC 9000 14)


# ----------------------------------------------------------------------------- pure pieces


@pytest.mark.parametrize("total, parts", [(372_000, 6), (372_001, 6), (1_000_000, 20), (5, 10), (0, 3)])
def test_a_page_splits_exactly_and_evenly(total, parts):
    sizes = quic.split_bytes(total, parts)
    assert len(sizes) == parts and sum(sizes) == total
    assert max(sizes) - min(sizes) <= (1 if total % parts else 0)
    assert sizes == sorted(sizes, reverse=True)  # the remainder's bytes go to the first streams


def test_a_split_over_no_stream_is_refused():
    with pytest.raises(ValueError):
        quic.split_bytes(10, 0)


def test_the_page_plan_gives_each_connection_its_streams():
    conns, per = quic.plan_page(2, 3, 601, burst=4)
    assert [c.flow for c in conns] == [0, 1] and {c.burst for c in conns} == {4}
    assert [[s.connection for s in row] for row in per] == [[0, 0, 0], [1, 1, 1]]
    assert [s.requested for row in per for s in row] == [101, 100, 100, 100, 100, 100]


def test_the_aioquic_defaults_are_what_the_docs_say():
    """The pin's congestion control and initial window: what the scenario README and docstrings state."""
    from aioquic.quic.congestion.base import K_INITIAL_WINDOW
    cfg = quic.client_configuration()
    assert (K_INITIAL_WINDOW, cfg.max_datagram_size, cfg.congestion_control_algorithm) == (
        AIOQUIC_IW, AIOQUIC_DATAGRAM, "reno")
    assert scen.QUIC_IW == AIOQUIC_IW


def test_recovery_counters_follow_a_handshake_that_gets_no_answer():
    """Without the pinned aioquic's recovery methods the counters cannot work (the hooks RecoveryStats wraps),
    and without a network: a client's Initial that nobody answers. Before any RTT sample aioquic's PTO is twice
    its initial RTT (100 ms), doubled at each expiry (RFC 9002 6.2.1, A.8): expiries at 0.2, 0.6, 1.4 and 3.0 s,
    each resending the Initial (a probe, not a loss)."""
    from aioquic.quic.connection import QuicConnection
    conn = QuicConnection(configuration=quic.client_configuration())
    stats = quic.RecoveryStats.attach(conn)
    conn.connect(("127.0.0.1", 1), now=0.0)
    assert len(conn.datagrams_to_send(now=0.0)) == 1 and stats.packets_sent == 1
    expiries = []
    for _ in range(4):
        expiries.append(conn.get_timer())
        conn.handle_timer(now=expiries[-1])
        conn.datagrams_to_send(now=expiries[-1])
    assert expiries == pytest.approx([0.2, 0.6, 1.4, 3.0])
    assert (stats.pto, stats.rescheduled, stats.lost, stats.packets_sent) == (4, 4, 0, 5)
    assert stats.initial_cwnd_bytes == AIOQUIC_IW * AIOQUIC_DATAGRAM


# ----------------------------------------------------------------------------- the workload and its keys


def quic_data(**quic_keys) -> dict:
    data = tomllib.loads((scen.SCENARIO_DIR / "quic1.toml").read_text())
    data["quic"] = {**data["quic"], **quic_keys}
    return data


def test_the_plan_is_drawn_from_the_replications_seed():
    spec = quic_data(start_s=[10, 12])
    plans = [Quic(spec["quic"], seed).plan for seed in (7, 7, 8)]
    assert plans[0] == plans[1] and plans[0] != plans[2]
    for p in plans:
        (b,) = p["bursts"]
        assert 10 <= b["start_s"] <= 12 and b["quic"] and (b["flows"], b["streams"]) == (1, 6)
        assert p["total_bytes"] == 372_000
    # the draw is the [quic] section's own: another workload beside it does not move it
    both = workloads_for({"web": {"flows": 2}, "quic": spec["quic"]}, 7)
    assert both[-1].plan["bursts"][0]["start_s"] == plans[0]["bursts"][0]["start_s"]


def test_every_aqm_of_a_replication_sees_the_same_page():
    sc = scen.load("quic1")
    seeds = {c.aqm: c.rep_seed(sc.seed, 3) for c in sc.cases}
    assert len(set(seeds.values())) == 1
    plans = [workloads_for(c.spec, seeds[c.aqm])[-1].plan for c in sc.cases]
    assert all(p == plans[0] for p in plans)


def test_the_page_counts_for_the_time_limit_and_ends_the_run():
    loads = workloads_for({"quic": quic_data()["quic"]}, 5)
    start = loads[-1].plan["bursts"][0]["start_s"]
    assert loads[-1].ends_run() and loads[-1].tcp and loads[-1].n_flows() == 1
    assert loads[-1].tcp_start_s() == start
    edge = run_limit_s(40, loads, profile("edge").rate_bps)
    assert edge == pytest.approx(start + 4 * 372_000 * 8 / 160_000 + 5, abs=1)  # 372 kB at 160 kbit/s
    assert run_limit_s(40, loads, profile("hspa").rate_bps) == 40


class FakeNode:
    def __init__(self, name: str, log: list) -> None:
        self.name, self.log = name, log

    def popen(self, argv, **kw):
        self.log.append((self.name, list(argv)))
        return subprocess.Popen(["true"])


class FakeNet:
    def __init__(self, log: list) -> None:
        self.srv, self.cli = FakeNode("srv", log), FakeNode("cli", log)
        self.registry = type("R", (), {"process": lambda *a: None})()


def test_the_server_runs_on_srv_and_the_client_on_cli(tmp_path, monkeypatch):
    from accessnet import workloads
    from accessnet.addresses import V4
    monkeypatch.setattr(workloads, "wait_for_line", lambda *a: None)
    log: list = []
    w = Quic(quic_data(connections=6, streams=1)["quic"], 9)
    w.plan["bursts"][0]["burst"] = 0
    lab = Lab(FakeNet(log), tmp_path, 10**18, 40.0, 2.0, "cubic", V4.server, V4.client)
    w.start(lab)
    for p in lab.procs:
        p.wait()
    (srv_host, srv), (cli_host, cli) = log
    assert srv_host == "srv" and srv[srv.index("-m") + 1:srv.index("-m") + 3] == ["accessnet.quic", "server"]
    assert srv[srv.index("--host") + 1] == V4.server
    assert cli_host == "cli" and cli[cli.index("--dst") + 1] == V4.server
    arg = {k: cli[cli.index(k) + 1] for k in ("--connections", "--streams", "--bytes", "--start-at", "--port")}
    assert arg == {"--connections": "6", "--streams": "1", "--bytes": "372000", "--port": srv[srv.index("--port") + 1],
                   "--start-at": str(10**18 + int(w.plan["bursts"][0]["start_s"] * 1e9))}
    assert w.done()


def test_waiting_for_a_server_names_one_that_died(tmp_path):
    out = tmp_path / "quic_server.out"
    out.write_text("Traceback: boom\n")
    p = subprocess.Popen(["false"])
    p.wait()
    with pytest.raises(RuntimeError, match="quic_server exited .*boom"):
        wait_for_line(out, "listening on", p, 5)
    alive = subprocess.Popen(["sleep", "5"])
    try:
        out.write_text("starting\n")
        with pytest.raises(RuntimeError, match="not ready after 0.3 s"):
            wait_for_line(out, "listening on", alive, 0.3)
        out.write_text("listening on [::1]:1\n")
        wait_for_line(out, "listening on", alive, 1)
    finally:
        alive.kill()
        alive.wait()


@pytest.mark.parametrize("bad, says", [
    ({"connections": 0}, r"\[quic\] connections = 0: must be an integer in \[1, 100\]"),
    ({"streams": 101}, r"\[quic\] streams = 101"),
    ({"streams": 2.5}, r"\[quic\] streams = 2.5"),
    ({"total_bytes": 0}, r"\[quic\] total_bytes = 0"),
    ({"total_bytes": 10**9}, r"\[quic\] total_bytes = 1000000000"),
    ({"start_s": [12, 10]}, r"\[quic\] start_s = \[12, 10\]"),
    ({"start_s": 10}, r"\[quic\] start_s = 10"),
    ({"colour": 1}, r"\[quic\] unknown key"),
    ({"connections": 10, "streams": 10, "total_bytes": 50}, r"\[quic\] total_bytes = 50 is below connections x streams"),
])
def test_bad_quic_keys_are_refused_naming_the_key(tmp_path, bad, says):
    with pytest.raises(ConfigError, match=says):
        scen.build(tmp_path / "mine.toml", quic_data(**bad))


def test_an_iw_that_quic_does_not_run_is_refused(tmp_path):
    data = quic_data()
    data["run"]["iws"] = [3, 10]
    with pytest.raises(ConfigError, match=r"\[run\] iws = \[3, 10\] with \[quic\] alone"):
        scen.build(tmp_path / "mine.toml", data)
    data["web"] = {"flows": 1, "total_bytes": 1000}  # a TCP workload beside it: its IW is varied
    assert len(scen.build(tmp_path / "mine.toml", data).cases) == 6


def test_flows_csv_joins_each_kind_with_its_own_server(tmp_path):
    """A TCP flow and a QUIC connection on the same client port number: each is joined with its own
    server's line, never the other's."""
    cols = ["flow", "burst", "start_ns", "end_ns", "bytes", "completed", "lport"]
    for name, row in (("client_flows_0.csv", [0, 0, 100, 200, 10, 1, 40000]),
                      ("client_quic_1.csv", [0, 1, 150, 250, 20, 1, 40000])):
        with open(tmp_path / name, "w", newline="") as f:
            csv.writer(f).writerows([cols, row])
    (tmp_path / "server_flows.jsonl").write_text(json.dumps({"client_port": 40000, "retrans": 1, "rtos": 2, "start_ns": 110}) + "\n")
    (tmp_path / "server_quic.jsonl").write_text(json.dumps({"client_port": 40000, "retrans": 3, "rtos": 4, "start_ns": 160}) + "\n")
    from accessnet.workloads import Web, merge_tcp_logs
    merge_tcp_logs([Web({}, 1), Quic({}, 1)], tmp_path)
    rows = list(csv.DictReader(open(tmp_path / "flows.csv")))
    assert [(r["flow"], r["burst"], r["bytes"], r["retrans"], r["rtos"]) for r in rows] == [
        ("0", "0", "10", "1", "2"), ("1", "1", "20", "3", "4")]


# ----------------------------------------------------------------------------- the real stack, in a namespace

root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace of the test's own)")


def sh(*args: str) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def ns() -> Iterator[str]:
    name = f"iwquic{os.getpid()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    sh("ip", "netns", "add", name)
    try:
        sh("ip", "-n", name, "link", "set", "lo", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def udp_counters(ns: str) -> dict[str, int]:
    """The namespace's UDP counters (IPv4 and IPv6) from /proc/net/snmp and /proc/net/snmp6."""
    out: dict[str, int] = {}
    lines = sh("ip", "netns", "exec", ns, "cat", "/proc/net/snmp").splitlines()
    for head, vals in zip(lines, lines[1:]):
        if head.startswith("Udp:") and vals.startswith("Udp:"):
            out.update({f"Udp{k}": int(v) for k, v in zip(head.split()[1:], vals.split()[1:])})
    for line in sh("ip", "netns", "exec", ns, "cat", "/proc/net/snmp6").splitlines():
        k, v = line.split()
        if k.startswith("Udp6"):
            out[k] = int(v)
    return out


def drops(before: dict[str, int], after: dict[str, int]) -> int:
    """Datagrams the namespace's sockets had no room for."""
    return sum(after[k] - before[k] for k in ("UdpRcvbufErrors", "Udp6RcvbufErrors"))


class Page:
    """One server and the client runs of a test, all in namespace ``ns``; stops what it started."""

    def __init__(self, ns: str, tmp: Path, host: str) -> None:
        self.ns, self.tmp, self.host = ns, tmp, host
        self.procs: list[subprocess.Popen] = []
        self.server = self.spawn(["server", "--host", host, "--port", str(PORT), "--log", str(tmp / "server.jsonl")],
                                 "server")
        wait_for_line(tmp / "server.out", "listening on", self.server, 30)

    def spawn(self, args: list[str], name: str) -> subprocess.Popen:
        with open(self.tmp / f"{name}.out", "wb") as out:
            p = subprocess.Popen(["ip", "netns", "exec", self.ns, sys.executable, "-m", "accessnet.quic", *args],
                                 stdout=out, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def client(self, connections: int, streams: int, nbytes: int, *extra: str, start_at: int = 0,
               name: str = "client") -> subprocess.Popen:
        return self.spawn(["client", "--dst", self.host, "--port", str(PORT), "--connections", str(connections),
                           "--streams", str(streams), "--bytes", str(nbytes), "--start-at", str(start_at),
                           "--log", str(self.tmp / f"{name}.csv"), "--streams-log", str(self.tmp / f"{name}_streams.csv"),
                           *extra], name)

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def server_log(self, lines: int = 1, timeout: float = 20) -> list[dict]:
        """The server's lines once it wrote at least ``lines`` of them (it writes a connection's line when it has
        handled the client's CONNECTION_CLOSE, which on a loaded host can take a while), or as they are then."""
        path, deadline = self.tmp / "server.jsonl", time.monotonic() + timeout
        while True:
            text = path.read_text() if path.exists() else ""
            if len(text.splitlines()) >= lines or time.monotonic() > deadline:
                return [json.loads(x) for x in text.splitlines()]
            time.sleep(0.05)

    def rows(self, name: str) -> list[dict]:
        with open(self.tmp / name, newline="") as f:
            return list(csv.DictReader(f))


def finish(page: Page, p: subprocess.Popen, timeout: float = 60) -> int:
    return p.wait(timeout=timeout)


@root
def test_a_page_over_ipv4_loopback_delivers_every_byte_and_the_logs_add_up(ns, tmp_path):
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        before = udp_counters(ns)
        rc = finish(page, page.client(2, 3, 372_001))
        after = udp_counters(ns)
        srv = page.server_log(2)
    finally:
        page.stop()
    assert rc == 0, (tmp_path / "client.out").read_text()
    streams, conns = page.rows("client_streams.csv"), page.rows("client.csv")
    # every stream carried exactly its share of the page (372001 = 6 x 62000 + 1)
    assert sorted(int(s["requested"]) for s in streams) == [62_000] * 5 + [62_001]
    assert all(s["bytes"] == s["requested"] and s["completed"] == "1" for s in streams)
    assert all(len({s["stream_id"] for s in streams if s["connection"] == c}) == 3 for c in ("0", "1"))
    # each connection: its streams' bytes, its last byte, after its handshake; completed
    for c in conns:
        mine = [s for s in streams if s["connection"] == c["flow"]]
        assert int(c["bytes"]) == sum(int(s["bytes"]) for s in mine) and c["completed"] == "1" and not c["error"]
        assert int(c["end_ns"]) == max(int(s["end_ns"]) for s in mine)
        assert int(c["start_ns"]) < int(c["handshake_ns"]) <= min(int(s["start_ns"]) for s in mine)
    assert sum(int(c["bytes"]) for c in conns) == 372_001
    # the server: one line per connection, named by the client's UDP port, with what it served
    assert sorted(d["client_port"] for d in srv) == sorted(int(c["lport"]) for c in conns)
    by_port = {d["client_port"]: d for d in srv}
    for c in conns:
        d = by_port[int(c["lport"])]
        assert (d["streams"], d["bytes"], d["client_addr"]) == (3, int(c["bytes"]), "127.0.0.1")
        assert d["closed"].startswith("terminated") and d["bad_requests"] == 0
        assert (d["cc"], d["max_datagram_size"], d["initial_cwnd_bytes"]) == ("reno", AIOQUIC_DATAGRAM,
                                                                               AIOQUIC_IW * AIOQUIC_DATAGRAM)
        assert d["packets_sent"] >= -(-d["bytes"] // AIOQUIC_DATAGRAM)  # at most 1200 B per datagram
    # loss-free (the kernel dropped nothing): no packet lost, no PTO
    assert drops(before, after) == 0
    assert [(d["lost"], d["rescheduled"], d["pto"], d["retrans"], d["rtos"]) for d in srv] == [(0, 0, 0, 0, 0)] * 2
    # flows.csv: the analysis reads the page as a burst of two flows
    from experiments.metrics import read_flows, tcp_metrics
    merge_flow_logs([([tmp_path / "client.csv"], tmp_path / "server.jsonl")], tmp_path / "flows.csv")
    t = tcp_metrics(read_flows(tmp_path))
    assert t["flows"] == t["completed"] == 2 and t["rtos"] == 0 and t["retrans"] == 0 and t["rtos_unknown_flows"] == 0
    span = (max(int(c["end_ns"]) for c in conns) - min(int(c["start_ns"]) for c in conns)) / 1e9
    assert t["bursts"][0]["completion_s"] == pytest.approx(span)


@root
def test_a_page_over_ipv6_loopback(ns, tmp_path):
    page = Page(ns, tmp_path, "::1")
    try:
        rc = finish(page, page.client(1, 20, 1_000_000))
        srv = page.server_log()
    finally:
        page.stop()
    assert rc == 0, (tmp_path / "client.out").read_text()
    (conn,) = page.rows("client.csv")
    assert (conn["bytes"], conn["completed"], conn["streams"]) == ("1000000", "1", "20")
    assert all(s["bytes"] == "50000" for s in page.rows("client_streams.csv"))
    (d,) = srv
    assert (d["client_addr"], d["client_port"], d["streams"], d["bytes"]) == ("::1", int(conn["lport"]), 20, 1_000_000)


@root
def test_lost_packets_are_the_datagrams_the_kernel_dropped(ns, tmp_path):
    """A client socket with room for a few datagrams only: the kernel drops, and aioquic declares lost
    about as many packets (an ACK-only packet at the very end may go unnoticed, a late one be declared
    lost spuriously)."""
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        before = udp_counters(ns)
        rc = finish(page, page.client(1, 4, 2_000_000, "--rcvbuf", "8192"))
        after = udp_counters(ns)
        (d,) = page.server_log()
    finally:
        page.stop()
    assert rc == 0, (tmp_path / "client.out").read_text()
    dropped, declared = drops(before, after), d["lost"] + d["rescheduled"]
    print(f"kernel dropped {dropped}, aioquic declared lost {d['lost']} + rescheduled {d['rescheduled']}, "
          f"PTOs {d['pto']}")
    assert dropped > 0, "the small receive buffer should have made the kernel drop datagrams"
    assert declared == d["retrans"] and d["pto"] == d["rtos"]
    assert abs(declared - dropped) <= max(3, dropped // 10)


@root
def test_a_frozen_client_makes_the_server_probe(ns, tmp_path):
    """The client stopped (SIGSTOP) for a second mid-page, nothing dropped: no ACK comes back, so the server's
    probe timeout expires at least once, and each expiry resends one packet's data (RFC 9002 6.2.4). Its
    backoff bounds how often: a PTO is at least the 25 ms max ACK delay + 1 ms granularity and doubles at each
    expiry, so in T seconds it expires at most log2(T / 0.026 + 1) times (+1 for one armed before the freeze).
    (On loopback the server's RTT includes the client's socket backlog, so the PTO is longer: 1 or 2 here.)"""
    import math
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        start = time.time_ns() + 2_000_000_000  # past the client's start-up
        before = udp_counters(ns)
        client = page.client(1, 3, 30_000_000, start_at=start)
        time.sleep(max(0.0, (start - time.time_ns()) / 1e9) + 0.3)
        client.send_signal(signal.SIGSTOP)
        frozen = time.time_ns()
        time.sleep(1.0)
        client.send_signal(signal.SIGCONT)
        thawed = time.time_ns()
        rc = finish(page, client)
        after = udp_counters(ns)
        (d,) = page.server_log()
    finally:
        page.stop()
    assert rc == 0, (tmp_path / "client.out").read_text()
    streams = page.rows("client_streams.csv")
    assert min(int(s["start_ns"]) for s in streams) < frozen and max(int(s["end_ns"]) for s in streams) > thawed, \
        "the client was not frozen mid-page: the test proves nothing"
    print(f"PTOs {d['pto']}, rescheduled {d['rescheduled']}, lost {d['lost']}")
    assert drops(before, after) == 0 and d["lost"] == 0
    most = math.floor(math.log2((thawed - frozen) / 1e9 / 0.026 + 1)) + 1
    assert 1 <= d["pto"] <= most and d["rtos"] == d["pto"]
    assert d["rescheduled"] == d["pto"] == d["retrans"]  # nothing lost: the resends are the probes'


@root
def test_sigterm_writes_what_was_measured(ns, tmp_path):
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        start = time.time_ns() + 1_500_000_000
        client = page.client(2, 2, 60_000_000, "--rcvbuf", "65536", start_at=start)
        time.sleep(max(0.0, (start - time.time_ns()) / 1e9) + 0.5)
        client.send_signal(signal.SIGTERM)
        t = time.monotonic()
        rc = client.wait(timeout=quic.CLOSE_GRACE_S + 5)
        took = time.monotonic() - t
        srv = page.server_log(2)
    finally:
        page.stop()
    assert rc == 1 and took < quic.CLOSE_GRACE_S + 3
    conns, streams = page.rows("client.csv"), page.rows("client_streams.csv")
    assert len(conns) == 2 and len(streams) == 4
    for c in conns:
        mine = [s for s in streams if s["connection"] == c["flow"]]
        assert c["completed"] == "0" and c["error"] == "stopped"
        assert 0 < int(c["bytes"]) == sum(int(s["bytes"]) for s in mine) < 30_000_000
    assert len(srv) == 2 and {d["bytes"] for d in srv} == {30_000_000}  # what each connection was asked for


@root
def test_a_stopped_server_logs_its_open_connections(ns, tmp_path):
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        start = time.time_ns() + 1_500_000_000
        client = page.client(1, 2, 60_000_000, "--rcvbuf", "65536", start_at=start)
        time.sleep(max(0.0, (start - time.time_ns()) / 1e9) + 0.5)
        page.server.send_signal(signal.SIGTERM)
        assert page.server.wait(timeout=10) == 0
        rc = client.wait(timeout=30)
        (d,) = page.server_log()
    finally:
        page.stop()
    (c,) = page.rows("client.csv")
    assert d["closed"] == "stopped" and d["client_port"] == int(c["lport"])
    assert rc == 1 and c["completed"] == "0" and 0 < int(c["bytes"]) < 60_000_000


@root
def test_a_page_without_a_server_times_out(ns, tmp_path):
    page = Page(ns, tmp_path, "127.0.0.1")
    try:
        t = time.monotonic()
        client = page.spawn(["client", "--dst", "127.0.0.1", "--port", str(PORT + 1), "--bytes", "1000",
                             "--timeout", "1", "--log", str(tmp_path / "c.csv"), "--streams-log",
                             str(tmp_path / "s.csv")], "lonely")
        rc = client.wait(timeout=quic.CLOSE_GRACE_S + 10)
        took = time.monotonic() - t
    finally:
        page.stop()
    (c,) = page.rows("c.csv")
    assert rc == 1 and (c["completed"], c["bytes"], c["error"], c["lport"]) == ("0", "0", "timeout", "0")
    assert took < 1 + quic.CLOSE_GRACE_S + 3
