"""The web server's many requests per connection, and the users' three modes (fresh, keepalive, h2), with real
Linux TCP on the loopback: the server and the users run as the lab runs them (``python -m accessnet.web``), and
every check is against something the code under test does not compute itself: bytes counted here, the
server's own log against the client's, sizes drawn here from the seed's generator."""

from __future__ import annotations

import csv
import json
import random
import socket
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from accessnet import web
from accessnet.browse import split
from accessnet.web import merge_flows

ROOT = Path(__file__).resolve().parent.parent
LO = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LO, 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """The lab's web server on a free port, its log in tmp_path; stopped (by its PID) afterwards."""
    port, log = free_port(), tmp_path / "server_flows.jsonl"
    p = subprocess.Popen([sys.executable, "-m", "accessnet.web", "server", "--port", str(port), "--log", str(log)],
                         cwd=ROOT)
    try:
        for _ in range(100):
            try:
                socket.create_connection((LO, port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield port, log
    finally:
        p.terminate()
        p.wait(timeout=10)


def server_rows(log: Path, n: int | None = None, timeout: float = 5.0) -> list[dict]:
    """The server's rows, waiting (up to ``timeout``) until there are ``n``."""
    end = time.monotonic() + timeout
    while True:
        rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []
        if n is None or len(rows) >= n or time.monotonic() > end:
            return rows
        time.sleep(0.05)


def read_exact(s: socket.socket, n: int) -> int:
    got = 0
    while got < n:
        chunk = s.recv(65536)
        assert chunk, f"connection closed after {got} of {n} bytes"
        got += len(chunk)
    assert got == n, f"{got - n} bytes more than asked for"
    return got


def nothing_more(s: socket.socket) -> bool:
    s.settimeout(0.3)
    try:
        return s.recv(1) == b"x"  # never: any byte, or the server's close (b""), is something more
    except TimeoutError:
        return True
    finally:
        s.settimeout(None)


# ----------------------------------------------------------------------------- the server


def test_server_answers_many_requests_on_one_connection_in_order(server):
    """One connection: two requests one after the other, then three at once (the h2 way); each answered with
    exactly its bytes, nothing more, and one server row per response with its index on the connection."""
    port, log = server
    s = socket.create_connection((LO, port))
    lport = s.getsockname()[1]
    s.sendall(b"GET 1000\n")
    read_exact(s, 1000)
    assert nothing_more(s)
    s.sendall(b"GET 5\n")
    read_exact(s, 5)
    assert nothing_more(s)
    s.sendall(b"GET 70000\nGET 3\nGET 0\n")
    read_exact(s, 70_003)
    assert nothing_more(s)
    s.close()
    rows = server_rows(log, 5)
    assert [(r["client_port"], r["request"], r["bytes"]) for r in rows] == [
        (lport, 0, 1000), (lport, 1, 5), (lport, 2, 70_000), (lport, 3, 3), (lport, 4, 0)]
    assert all(r["start_ns"] <= r["end_ns"] for r in rows)
    assert [r["start_ns"] for r in rows] == sorted(r["start_ns"] for r in rows)
    assert all(r["retrans"] == 0 and r["rtos"] == 0 for r in rows)  # the loopback loses nothing


def test_server_sets_tcp_nodelay_only_when_asked(tmp_path):
    """``serve_conn`` leaves Nagle's algorithm on (the socket's default) unless ``nodelay`` ([run] nodelay, the
    server's --nodelay), read back from the connection's own socket while it serves a request."""
    import threading
    for nodelay in (False, True):
        with socket.create_server((LO, 0)) as ls:
            c = socket.create_connection(ls.getsockname())
            conn, peer = ls.accept()
            with open(tmp_path / "log.jsonl", "a") as log:
                t = threading.Thread(target=web.serve_conn, args=(conn, peer, log, threading.Lock(), nodelay))
                t.start()
                c.sendall(b"GET 10\n")
                read_exact(c, 10)
                assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == int(nodelay)
                c.close()
                t.join(timeout=10)
                assert not t.is_alive()


def test_server_closes_on_a_bad_request(server):
    port, _ = server
    s = socket.create_connection((LO, port))
    s.sendall(b"GET 10\nPUT 5\n")
    read_exact(s, 10)
    s.settimeout(5)
    assert s.recv(1) == b""  # closed, not answered
    s.close()


class ScriptedInfo:
    """TCP_INFO samples given in order (ca_state, total_retrans, bytes_acked), for Connection.account."""

    def __init__(self, samples: list[tuple[int, int, int]]) -> None:
        self.samples = list(samples)

    def __call__(self, _sock) -> dict:
        ca, retrans, acked = self.samples.pop(0)
        return {"ca_state": ca, "retransmits": 0, "unacked": 0, "total_retrans": retrans, "bytes_acked": acked}


def test_losses_go_to_the_oldest_unacknowledged_response(monkeypatch, tmp_path):
    """Retransmissions and RTOs (entries into TCP_CA_Loss) are counted for the oldest response not yet
    acknowledged; the handshake's (1 SYN-ACK resent before the first request) for the first response; the
    responses' counts sum to the connection's (4 retransmissions, 2 RTOs). bytes_acked starts at 1 (the SYN)."""
    loss, ok = web.TCP_CA_LOSS, 0
    monkeypatch.setattr(web, "tcp_info", ScriptedInfo([
        (ok, 1, 1),  # accept(): the SYN-ACK was sent twice
        (loss, 2, 1),  # response 0 open: an RTO and a retransmission
        (ok, 2, 101),  # response 0 (100 B) acknowledged
        (loss, 3, 101),  # responses 1 and 2 open: an RTO, for response 1 (the oldest)
        (ok, 4, 151),  # response 1 (50 B) acknowledged; a retransmission in the same sample is still its
        (ok, 4, 181),  # response 2 (30 B) acknowledged
    ]))
    path = tmp_path / "log.jsonl"
    with open(path, "w") as log:
        c = web.Connection(None, 40000, log, __import__("threading").Lock())  # sampler not started: driven here
        c.begin(100)
        for _ in range(2):
            c.account(web.tcp_info(None))
        c.begin(50)
        c.begin(30)
        for _ in range(3):
            c.account(web.tcp_info(None))
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(r["request"], r["bytes"], r["retrans"], r["rtos"]) for r in rows] == [
        (0, 100, 2, 1), (1, 50, 2, 1), (2, 30, 0, 0)]


# ----------------------------------------------------------------------------- the users

SEED, LO_B, HI_B = 11, 40_000, 160_000


def run_users(tmp_path: Path, port: int, mode: str, duration: float, idle: float, *extra: str,
              users: int = 2) -> Path:
    log = tmp_path / "client_flows_users.csv"
    args = [sys.executable, "-m", "accessnet.web", "users", "--dst", LO, "--port", str(port), "--users", str(users),
            "--min-bytes", str(LO_B), "--max-bytes", str(HI_B), "--idle-mean-s", str(idle), "--duration",
            str(duration), "--seed", str(SEED), "--log", str(log), "--mode", mode, *extra]
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=duration + 30)
    assert r.returncode == 0, r.stderr
    return log


def read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def drawn_sizes(k: int, n: int, idle: float) -> list[int]:
    """User k's first n page sizes, drawn here as the module docstring says: Exp/4 first, then per page
    U(min, max) and Exp."""
    rng = random.Random(SEED * 1009 + k)
    rng.expovariate(1 / idle)
    out = []
    for _ in range(n):
        out.append(rng.randint(LO_B, HI_B))
        rng.expovariate(1 / idle)
    return out


def pages_by_user(log: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = defaultdict(list)
    for r in sorted(read(log), key=lambda r: int(r["start_ns"])):
        out[int(r["burst"])].append(r)
    return out


def check_sizes(log: Path, idle: float) -> None:
    """Every completed page has the size the seed draws for it (the page's place in its user's sequence)."""
    for k, pages in pages_by_user(log).items():
        done = [int(p["bytes"]) for p in pages if p["completed"] == "1"]
        assert len(done) >= len(pages) - 1  # only the session's last page may be cut off
        assert done == drawn_sizes(k, len(pages), idle)[:len(done)], k


def gaps_by_port(rows: list[dict]) -> dict[int, list[float]]:
    """Per client port, the idle times (s) between one response's end and the next one's start, from the
    server's log."""
    by: dict[int, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["client_port"]].append(r)
    return {p: [(b["start_ns"] - a["end_ns"]) / 1e9 for a, b in zip(rs, rs[1:])]
            for p, rs in ((p, sorted(rs, key=lambda r: r["request"])) for p, rs in by.items())}


def test_keepalive_users_reuse_their_pool_across_pages(server, tmp_path):
    """Two users, pools of 3, pages of 4 objects: the server saw at most 3 connections per user over the whole
    session (the users' ports, from the client's log, and no other), many more responses than connections,
    and requests on old connections after more than 0.3 s of idle; bytes as drawn from the seed; flows.csv one
    row per page."""
    port, slog = server
    idle = 0.4
    log = run_users(tmp_path, port, "keepalive", 4.0, idle, "--objects", "4", "--connections", "3")
    objs = read(tmp_path / "client_requests_users.csv")
    pages = read(log)
    rows = server_rows(slog, len([o for o in objs if o["completed"] == "1"]))
    user_of = {int(o["lport"]): int(o["burst"]) for o in objs if o["lport"] != "0"}
    assert {r["client_port"] for r in rows} <= set(user_of)  # every connection the server saw is a user's
    for k in (0, 1):
        assert 1 <= sum(1 for u in user_of.values() if u == k) <= 3
    assert len(pages) >= 6 and len(rows) > 4 * len(set(user_of))  # connections carried many responses
    assert max(g for gs in gaps_by_port(rows).values() for g in gs) > 0.3  # a request after idle, old connection
    check_sizes(log, idle)
    assert sum(r["bytes"] for r in rows) == sum(int(o["bytes"]) for o in objs if o["completed"] == "1")
    for p in pages:  # a page's objects: the split of its size, over at most 3 connections
        mine = [o for o in objs if o["flow"] == p["flow"]]
        if p["completed"] == "1":
            assert [int(o["bytes"]) for o in mine] == split(int(p["bytes"]), 4)
            assert len({o["lport"] for o in mine}) <= 3
            assert int(p["end_ns"]) == max(int(o["end_ns"]) for o in mine)
    assert merge_flows([log], slog, tmp_path / "flows.csv") == len(pages)
    flows = read(tmp_path / "flows.csv")
    assert [(f["burst"], f["bytes"], f["completed"]) for f in flows] == [
        (p["burst"], p["bytes"], p["completed"]) for p in pages]
    assert all(f["retrans"] == "0" and f["rtos"] == "0" for f in flows if f["completed"] == "1")


def test_keepalive_timeout_closes_idle_connections(server, tmp_path):
    """With a 0.2 s keep-alive timeout and think times of 0.6 s on average, no connection carries a request
    after more than 0.2 s (+ 0.15 s of slack) of idle, and closed ones are reopened: more connections than the
    pool holds at once."""
    port, slog = server
    run_users(tmp_path, port, "keepalive", 4.0, 0.6, "--objects", "2", "--connections", "2",
              "--keepalive-timeout-s", "0.2", users=1)
    objs = read(tmp_path / "client_requests_users.csv")
    rows = server_rows(slog, len([o for o in objs if o["completed"] == "1"]))
    gaps = [g for gs in gaps_by_port(rows).values() for g in gs]
    assert all(g < 0.35 for g in gaps), max(gaps)
    assert len({r["client_port"] for r in rows}) > 2


def test_h2_users_have_one_connection_each(server, tmp_path):
    """h2: the server saw exactly one connection per user for the whole session; a page's objects are its
    consecutive requests on it, all sent at once."""
    port, slog = server
    idle = 0.4
    log = run_users(tmp_path, port, "h2", 3.0, idle, "--objects", "5")
    objs = read(tmp_path / "client_requests_users.csv")
    rows = server_rows(slog, len([o for o in objs if o["completed"] == "1"]))
    assert len({r["client_port"] for r in rows}) == 2
    assert len({(o["burst"], o["lport"]) for o in objs}) == 2
    for page in {o["flow"] for o in objs}:
        mine = [o for o in objs if o["flow"] == page]
        assert len({o["lport"] for o in mine}) == 1 and len({o["start_ns"] for o in mine}) == 1
        req = [int(o["request"]) for o in mine]
        assert req == list(range(req[0], req[0] + len(mine)))
    check_sizes(log, idle)


def test_fresh_users_open_a_connection_per_page_as_before(server, tmp_path):
    """fresh (the default): one connection per page, one server row each (request 0), no per-object log;
    sizes as drawn."""
    port, slog = server
    idle = 0.3
    log = run_users(tmp_path, port, "fresh", 2.5, idle)
    pages = read(log)
    assert list(pages[0]) == ["flow", "burst", "start_ns", "end_ns", "bytes", "completed", "lport"]
    rows = server_rows(slog, sum(p["completed"] == "1" for p in pages))
    assert all(r["request"] == 0 for r in rows) and len({r["client_port"] for r in rows}) == len(rows)
    assert {int(p["lport"]) for p in pages if p["completed"] == "1"} <= {r["client_port"] for r in rows}
    assert not (tmp_path / "client_requests_users.csv").exists()
    check_sizes(log, idle)
