"""Short web-like TCP transfers: ``python -m accessnet.web server|client|users ...``.

* ``server``: for each connection, reads ``GET <nbytes>\\n`` requests and answers each with that many
  bytes, in order, until the client closes (one request for a fresh connection; many for a kept-alive one
  or an HTTP/2-like one, whose requests may come at once and are answered back to back). A sampler reads
  TCP_INFO every millisecond while a response is in flight and counts retransmission timeouts (entries
  into the ``TCP_CA_Loss`` state) and retransmitted segments, each for the oldest response not yet
  acknowledged; one JSON line per response goes to the log (docs/data-formats.md, server_flows.jsonl). The
  initial window is the route's ``initcwnd`` (set by the lab), the congestion control ``--cc``. It listens
  on both families (``::`` with IPV6_V6ONLY off), so one server serves an IPv4 run and an IPv6 run alike;
  the clients connect to ``--dst`` in its family. Nagle's algorithm stays on, as for any socket, unless
  ``--nodelay`` (TCP_NODELAY: Apache's and Go's servers always, nginx on kept-alive connections): under a
  window shaper Linux splits segments at the window's edge, and Nagle then holds the response's last short
  segment until the split is acknowledged (docs/iwa-results.md, "Nagle's hold").
* ``client``: at an absolute time opens N connections in parallel, each fetching B bytes, and logs per
  flow: start (connect called), end (last byte received), bytes, completed, and its local port.
* ``users``: web users browsing pages with think times between them (``accessnet.browse``: a fresh
  connection per page, a browser's pool of kept-alive connections, or one HTTP/2-like connection).

``merge_flows`` joins the logs into ``flows.csv`` (docs/data-formats.md).
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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from .addresses import bind_any
from .browse import CHUNK, DEFAULTS, MODES, Browser, fetch, requests_log, users, write_client_log

WEB_PORT = 8080  # the lab's web server (experiments.metrics tells its connections in the captures by it)
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)
TCP_CA_LOSS = 4
# The listen queue: a page of 50 connections opens them within a millisecond (web50); the kernel caps it at
# net.core.somaxconn (4096 by default since Linux 5.4).
LISTEN_BACKLOG = 1024


TCP_INFO_LEN = 128  # through tcpi_bytes_acked (Linux >= 4.1)


def tcp_info(sock: socket.socket) -> dict:
    raw = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, TCP_INFO_LEN)
    ca_state, retransmits = raw[1], raw[2]
    unacked, = struct.unpack_from("I", raw, 24)
    total_retrans, = struct.unpack_from("I", raw, 100)
    bytes_acked, = struct.unpack_from("Q", raw, 120)
    return {"ca_state": ca_state, "retransmits": retransmits, "unacked": unacked, "total_retrans": total_retrans,
            "bytes_acked": bytes_acked}


@dataclass
class Response:
    """One answer on a connection: its request's index on the connection, its size, where its last byte sits in
    the connection's byte stream (``end_off``), and the retransmissions and RTOs attributed to it."""

    request: int
    nbytes: int
    start_ns: int
    end_off: int
    sent: int = 0
    retrans: int = 0
    rtos: int = 0


class Connection:
    """The server's side of one connection: responses in order, and a sampler of TCP_INFO.

    The sampler reads TCP_INFO every millisecond while a response is not yet fully acknowledged, and sleeps
    while none is (a kept-alive connection idles for minutes: polling it would cost a core). A retransmission
    or an entry into ``TCP_CA_Loss`` (an RTO) is the oldest unacknowledged response's: a timeout resends the
    segment at snd_una, which belongs to it. Events with no response open (the handshake's SYN-ACK resent)
    go to the next response, so the first response of a connection carries its handshake's, as a one-response
    connection always did, and the responses' counts sum to the connection's. A response ends when the
    client has acknowledged its last byte (``tcpi_bytes_acked``); then its JSON line is written."""

    def __init__(self, conn: socket.socket, port: int, log, lock: threading.Lock) -> None:
        self.conn, self.port, self.log, self.lock = conn, port, log, lock
        self.open: list[Response] = []
        self.cond = threading.Condition()
        self.closing = False
        info = tcp_info(conn)
        self.acked0 = info["bytes_acked"]  # the handshake's, already counted when accept() returns
        self.in_loss = info["ca_state"] == TCP_CA_LOSS
        self.seen_retrans = info["total_retrans"]
        self.pending_retrans, self.pending_rtos = info["total_retrans"], 0
        self.offset = 0
        self.requests = 0
        self.sampler = threading.Thread(target=self.sample, daemon=True)

    def start(self) -> "Connection":
        self.sampler.start()
        return self

    def begin(self, nbytes: int) -> Response:
        """A response starts: the request was read."""
        r = Response(self.requests, nbytes, time.time_ns(), self.offset + nbytes)
        self.requests += 1
        self.offset += nbytes
        with self.cond:
            r.retrans, r.rtos = self.pending_retrans, self.pending_rtos
            self.pending_retrans = self.pending_rtos = 0
            self.open.append(r)
            self.cond.notify()
        return r

    def sample(self) -> None:
        while True:
            with self.cond:
                while not self.open and not self.closing:
                    self.cond.wait()
                if not self.open:
                    return
            try:
                info = tcp_info(self.conn)
            except OSError:
                return
            self.account(info)
            time.sleep(0.001)

    def account(self, info: dict) -> None:
        """One sample: new retransmissions and a new entry into TCP_CA_Loss to the oldest open response;
        responses whose last byte the client acknowledged are logged."""
        now = time.time_ns()
        loss = info["ca_state"] == TCP_CA_LOSS
        new_rto = int(loss and not self.in_loss)
        self.in_loss = loss
        new_retrans = info["total_retrans"] - self.seen_retrans
        self.seen_retrans = info["total_retrans"]
        done = []
        with self.cond:
            if self.open:
                self.open[0].retrans += new_retrans
                self.open[0].rtos += new_rto
            else:
                self.pending_retrans += new_retrans
                self.pending_rtos += new_rto
            acked = info["bytes_acked"] - self.acked0
            while self.open and acked >= self.open[0].end_off:
                done.append(self.open.pop(0))
        for r in done:
            self.write(r, now, r.nbytes)  # all acknowledged, so all sent (send() may not have returned yet)

    def write(self, r: Response, end_ns: int, nbytes: int) -> None:
        with self.lock:
            self.log.write(json.dumps({"client_port": self.port, "request": r.request, "bytes": nbytes,
                                       "retrans": r.retrans, "rtos": r.rtos, "start_ns": r.start_ns,
                                       "end_ns": end_ns}) + "\n")
            self.log.flush()

    def close(self) -> None:
        """The client closed (or the connection broke): wait up to 60 s for the open responses' last ACKs,
        log what is still open as it stands, close."""
        with self.cond:
            self.closing = True
            self.cond.notify()
        if self.sampler.is_alive():
            self.sampler.join(timeout=60)
        with self.cond:
            left, self.open = self.open, []
        for r in left:
            self.write(r, time.time_ns(), r.sent)
        self.conn.close()


def requests(conn: socket.socket) -> Iterator[int]:
    """The sizes a client asks for on one connection (``GET <n>\\n`` lines, any number per segment), until it
    closes or sends something else."""
    buf = b""
    while True:
        while b"\n" not in buf:
            if len(buf) > 64:
                return
            try:
                chunk = conn.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        try:
            verb, n = line.split()
            nbytes = int(n)
        except ValueError:
            return
        if verb != b"GET" or nbytes < 0:
            return
        yield nbytes


def serve_conn(conn: socket.socket, peer, log, lock: threading.Lock, nodelay: bool = False) -> None:
    """Answer a connection's requests in order, each with its bytes, until the client closes."""
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))
    c = Connection(conn, peer[1], log, lock).start()
    block = b"\x00" * CHUNK
    try:
        for nbytes in requests(conn):
            r = c.begin(nbytes)
            while r.sent < nbytes:
                r.sent += conn.send(block[: min(CHUNK, nbytes - r.sent)])
    except OSError:
        pass
    finally:
        c.close()


def server(port: int, cc: str, log_path: str, nodelay: bool = False) -> int:
    ls = bind_any(socket.SOCK_STREAM, port)
    ls.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, cc.encode())
    ls.listen(LISTEN_BACKLOG)
    lock = threading.Lock()
    with open(log_path, "a") as log:
        try:
            while True:
                conn, peer = ls.accept()
                threading.Thread(target=serve_conn, args=(conn, peer, log, lock, nodelay), daemon=True).start()
        except (KeyboardInterrupt, SystemExit):
            pass
    return 0


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


def read_server_log(path: Path) -> dict[tuple[int, int], list[dict]]:
    """The server's rows by (client port, request index on the connection); a port reused by a later
    connection gives several rows under one key (``server_row`` picks by time). Rows from before requests were
    numbered count as request 0."""
    rows: dict[tuple[int, int], list[dict]] = {}
    if Path(path).exists():
        for line in Path(path).read_text().splitlines():
            if line.strip():
                d = json.loads(line)
                rows.setdefault((int(d["client_port"]), int(d.get("request", 0))), []).append(d)
    return rows


def server_row(srv: dict[tuple[int, int], list[dict]], port: int, request: int, start_ns: int) -> dict | None:
    """The server's row of a request: the one under (port, request) whose start is nearest the client's."""
    rows = srv.get((port, request))
    return min(rows, key=lambda d: abs(int(d["start_ns"]) - start_ns)) if rows else None


def _read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _losses(srv: dict, requests: list[dict]) -> tuple[object, object]:
    """retrans and rtos summed over a flow's requests' server rows; "" (unknown) if any row is missing."""
    found = [server_row(srv, int(r["lport"] or 0), int(r["request"] or 0), int(r["start_ns"] or 0))
             for r in requests]
    if not found or any(d is None for d in found):
        return "", ""
    return sum(int(d["retrans"]) for d in found), sum(int(d["rtos"]) for d in found)


def merge_flows(client_csvs: list[Path], server_jsonl: Path, out: Path) -> int:
    """flows.csv from one server's log (``merge_flow_logs`` with one pair)."""
    return merge_flow_logs([(client_csvs, server_jsonl)], out)


def merge_flow_logs(sources: Sequence[tuple[Sequence[Path], Path]], out: Path) -> int:
    """flows.csv from (client logs, server log) pairs, each client row joined with its own server's rows only
    (TCP's and UDP's ports are two spaces: the web server's and the QUIC server's logs, accessnet.quic), rows
    numbered in the pairs' order: a flow's retransmission and RTO counts by its client port (request 0); a
    page's, when its client kept a per-object log (``browse.requests_log``), summed over its objects' rows
    (client port and request index)."""
    merged = []
    for client_csvs, server_jsonl in sources:
        srv = read_server_log(Path(server_jsonl))
        for path in client_csvs:
            objects: dict[str, list[dict]] = {}
            per_object = requests_log(Path(path))
            if per_object is not None and per_object.exists():
                for o in _read_rows(per_object):
                    objects.setdefault(o["flow"], []).append(o)
            for r in _read_rows(path):
                reqs = objects.get(r["flow"]) if objects else [{**r, "request": 0}]
                merged.append((r, *_losses(srv, reqs or [])))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["flow", "burst", "start_ns", "end_ns", "bytes", "retrans", "rtos", "completed"])
        for i, (r, retrans, rtos) in enumerate(merged):
            w.writerow([i, r["burst"], r["start_ns"], r["end_ns"], r["bytes"], retrans, rtos, r["completed"]])
    return len(merged)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.web", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("server")
    p.add_argument("--port", type=int, default=WEB_PORT)
    p.add_argument("--cc", default="cubic")
    p.add_argument("--log", required=True)
    p.add_argument("--nodelay", action="store_true", help="TCP_NODELAY on every connection (Nagle's algorithm off)")
    p = sub.add_parser("client")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=WEB_PORT)
    p.add_argument("--flows", type=int, default=1)
    p.add_argument("--bytes", type=int, required=True)
    p.add_argument("--start-at", type=int, default=0, help="absolute start, ns (CLOCK_REALTIME)")
    p.add_argument("--burst", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--log", required=True)
    p = sub.add_parser("users", help="web users: page downloads separated by exponential idle periods")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=WEB_PORT)
    p.add_argument("--users", type=int, default=DEFAULTS["count"])
    p.add_argument("--min-bytes", type=int, default=DEFAULTS["min_bytes"])
    p.add_argument("--max-bytes", type=int, default=DEFAULTS["max_bytes"])
    p.add_argument("--idle-mean-s", type=float, default=DEFAULTS["idle_mean_s"])
    p.add_argument("--start-at", type=int, default=0)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--log", required=True)
    p.add_argument("--mode", choices=MODES, default=DEFAULTS["mode"],
                   help="a new connection per page, a pool of kept-alive ones, or one HTTP/2-like connection")
    p.add_argument("--objects", type=int, default=DEFAULTS["objects"], help="objects per page (keepalive, h2)")
    p.add_argument("--connections", type=int, default=DEFAULTS["connections"],
                   help="the pool's size per user (keepalive)")
    p.add_argument("--keepalive-timeout-s", type=float, default=None,
                   help="close a connection idle this long (default: never)")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if a.cmd == "server":
        return server(a.port, a.cc, a.log, a.nodelay)
    if a.cmd == "users":
        return users(a.dst, a.port, a.users, a.min_bytes, a.max_bytes, a.idle_mean_s, a.start_at, a.duration,
                     a.seed, a.log, Browser(a.mode, a.objects, a.connections, a.keepalive_timeout_s))
    return client(a.dst, a.port, a.flows, a.bytes, a.start_at, a.burst, a.timeout, a.log)


if __name__ == "__main__":
    sys.exit(main())
