"""Short web-like TCP transfers: ``python -m accessnet.web server|client ...``.

* ``server``: for each connection, reads ``GET <nbytes>\\n`` and sends that
  many bytes, then closes. A sampler reads TCP_INFO every millisecond while
  the transfer is in flight and counts retransmission timeouts (entries into
  the ``TCP_CA_Loss`` state) and retransmitted segments; one JSON line per
  connection goes to the log. The initial window is the route's ``initcwnd``
  (set by the lab), the congestion control ``--cc``. It listens on both
  families (``::`` with IPV6_V6ONLY off), so one server serves an IPv4 run
  and an IPv6 run alike; the clients connect to ``--dst`` in its family.
* ``client``: at an absolute time opens N connections in parallel, each
  fetching B bytes, and logs per flow: start (connect called), end (last byte
  received), bytes, completed, and its local port.

``merge_flows`` joins both logs into ``flows.csv`` (docs/data-formats.md).
"""

from __future__ import annotations

import argparse
import csv
import json
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from .addresses import bind_any

TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CA_LOSS = 4
CHUNK = 65536


def tcp_info(sock: socket.socket) -> dict:
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 104)
    ca_state, retransmits = raw[1], raw[2]
    unacked, = struct.unpack_from("I", raw, 24)
    total_retrans, = struct.unpack_from("I", raw, 100)
    return {"ca_state": ca_state, "retransmits": retransmits, "unacked": unacked, "total_retrans": total_retrans}


def serve_one(conn: socket.socket, peer, log, lock: threading.Lock) -> None:
    start = time.time_ns()
    req = b""
    while not req.endswith(b"\n") and len(req) < 64:
        chunk = conn.recv(64)
        if not chunk:
            conn.close()
            return
        req += chunk
    try:
        nbytes = int(req.split()[1])
    except (IndexError, ValueError):
        conn.close()
        return
    rtos = 0
    state = {"done": False}
    info = tcp_info(conn)

    def sample():
        nonlocal rtos, info
        last = info["ca_state"]
        while True:
            try:
                info = tcp_info(conn)
            except OSError:
                return
            if info["ca_state"] == TCP_CA_LOSS and last != TCP_CA_LOSS:
                rtos += 1
            last = info["ca_state"]
            if state["done"] and info["unacked"] == 0:
                return
            time.sleep(0.001)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    sent = 0
    block = b"\x00" * CHUNK
    try:
        while sent < nbytes:
            sent += conn.send(block[: min(CHUNK, nbytes - sent)])
    except OSError:
        pass
    state["done"] = True
    sampler.join(timeout=60)
    end = time.time_ns()
    with lock:
        log.write(json.dumps({"client_port": peer[1], "bytes": sent, "retrans": info["total_retrans"],
                              "rtos": rtos, "start_ns": start, "end_ns": end}) + "\n")
        log.flush()
    conn.close()


def server(port: int, cc: str, log_path: str) -> int:
    ls = bind_any(socket.SOCK_STREAM, port)
    ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
    ls.listen(128)
    lock = threading.Lock()
    with open(log_path, "a") as log:
        try:
            while True:
                conn, peer = ls.accept()
                threading.Thread(target=serve_one, args=(conn, peer, log, lock), daemon=True).start()
        except (KeyboardInterrupt, SystemExit):
            pass
    return 0


def fetch(dst: str, port: int, nbytes: int, timeout: float, row: dict) -> None:
    row["start_ns"] = time.time_ns()
    try:
        s = socket.create_connection((dst, port), timeout=timeout)
        row["lport"] = s.getsockname()[1]
        s.sendall(f"GET {nbytes}\n".encode())
        got = 0
        while got < nbytes:
            chunk = s.recv(CHUNK)
            if not chunk:
                break
            got += len(chunk)
            row["end_ns"] = time.time_ns()
        row["bytes"] = got
        row["completed"] = int(got >= nbytes)
        s.close()
    except OSError as e:
        row["error"] = str(e)


def client(dst: str, port: int, flows: int, nbytes: int, start_at: int, burst: int, timeout: float,
           log_path: str) -> int:
    while (wait := start_at - time.time_ns()) > 0:
        time.sleep(min(wait, 5_000_000) / 1e9)
    rows = [{"flow": i, "burst": burst, "start_ns": 0, "end_ns": "", "bytes": 0, "completed": 0, "lport": 0}
            for i in range(flows)]
    threads = [threading.Thread(target=fetch, args=(dst, port, nbytes, timeout, r), daemon=True) for r in rows]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    try:
        for t in threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
    finally:  # also when stopped (SIGTERM): what was measured is kept
        write_client_log(log_path, rows)
    return 0 if all(r["completed"] for r in rows) else 1


def users(dst: str, port: int, n_users: int, min_bytes: int, max_bytes: int, idle_mean_s: float, start_at: int,
          duration: float, seed: int, log_path: str) -> int:
    """The rtc+web workload's web users: each a sequence of page downloads of U(min, max) bytes separated
    by idle periods ~ Exp(idle_mean_s), from ``start_at`` for ``duration`` s. One row per download; the
    "burst" column holds the user. Reproducible from ``seed``."""
    import random
    while (wait := start_at - time.time_ns()) > 0:
        time.sleep(min(wait, 5_000_000) / 1e9)
    end = time.monotonic() + duration
    rows: list[dict] = []
    lock = threading.Lock()

    def user(k: int) -> None:
        rng = random.Random(seed * 1009 + k)
        time.sleep(rng.expovariate(1 / idle_mean_s) / 4)  # users do not all start at once
        while time.monotonic() < end:
            row = {"flow": 0, "burst": k, "start_ns": 0, "end_ns": "", "bytes": 0, "completed": 0, "lport": 0}
            with lock:
                row["flow"] = len(rows)
                rows.append(row)
            fetch(dst, port, rng.randint(min_bytes, max_bytes), max(1.0, end - time.monotonic()), row)
            time.sleep(rng.expovariate(1 / idle_mean_s))

    threads = [threading.Thread(target=user, args=(k,), daemon=True) for k in range(n_users)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join(timeout=max(0.0, end - time.monotonic()) + 1)
    finally:
        with lock:
            write_client_log(log_path, list(rows))
    return 0


def write_client_log(log_path: str, rows: list[dict]) -> None:
    with open(log_path, "w", newline="") as f:
        w = csv.DictWriter(f, ["flow", "burst", "start_ns", "end_ns", "bytes", "completed", "lport"],
                           extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def merge_flows(client_csvs: list[Path], server_jsonl: Path, out: Path) -> int:
    """flows.csv: client rows joined with the server's retransmission and RTO counts (by client port)."""
    srv = {}
    if Path(server_jsonl).exists():
        for line in Path(server_jsonl).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                srv[d["client_port"]] = d
    rows = []
    for path in client_csvs:
        with open(path, newline="") as f:
            rows.extend(csv.DictReader(f))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["flow", "burst", "start_ns", "end_ns", "bytes", "retrans", "rtos", "completed"])
        for i, r in enumerate(rows):
            s = srv.get(int(r["lport"] or 0), {})
            w.writerow([i, r["burst"], r["start_ns"], r["end_ns"], r["bytes"], s.get("retrans", ""),
                        s.get("rtos", ""), r["completed"]])
    return len(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.web", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("server")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--cc", default="cubic")
    p.add_argument("--log", required=True)
    p = sub.add_parser("client")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--start-at", type=int, default=0, help="absolute start, ns (CLOCK_REALTIME)")
    p.add_argument("--burst", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--log", required=True)
    p = sub.add_parser("users", help="web users: page downloads separated by exponential idle periods")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--users", type=int, default=5)
    p.add_argument("--min-bytes", type=int, default=100_000)
    p.add_argument("--max-bytes", type=int, default=1_500_000)
    p.add_argument("--idle-mean-s", type=float, default=10.0)
    p.add_argument("--start-at", type=int, default=0)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.cmd == "server":
        return server(a.port, a.cc, a.log)
    if a.cmd == "users":
        return users(a.dst, a.port, a.users, a.min_bytes, a.max_bytes, a.idle_mean_s, a.start_at, a.duration,
                     a.seed, a.log)
    return client(a.dst, a.port, a.flows, a.bytes, a.start_at, a.burst, a.timeout, a.log)


if __name__ == "__main__":
    sys.exit(main())
