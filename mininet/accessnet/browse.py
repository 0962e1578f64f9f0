"""The web clients' side: one download (``fetch``, a fresh connection: the bursts' flows and the fresh users'
pages), and web users browsing pages separated by think times, as ``python -m accessnet.web users`` runs them.

User k draws from ``random.Random(seed * 1009 + k)``: a start offset Exp(idle_mean_s) / 4, then per page its
size U(min_bytes, max_bytes) and the think time Exp(idle_mean_s) after it. Every mode makes exactly these
draws in this order (a page's objects are an even split of its size, no draw of their own), so a user's k-th
page has the same size and is followed by the same think time under every AQM and in every mode.

How a page travels (``mode``):

* ``fresh``: one new connection per page, closed after it (the seeds' rtc+web users; the row is
  ``web.fetch``'s, exactly as before the modes existed);
* ``keepalive``: HTTP/1.1 as a browser does it per origin: a pool of at most ``connections`` persistent
  connections per user, one request at a time on each; the page's ``objects`` are fetched over the pool (an
  idle connection is reused, a new one opened while fewer than ``connections`` exist), and the connections stay
  open across pages, so a page after a think time starts on connections that were idle (Linux then restarts
  slow start when the idle exceeded the RTO: ``net.ipv4.tcp_slow_start_after_idle``, 1 by default in every
  namespace). A connection idle for ``keepalive_timeout_s`` is closed by the client, as a browser closes idle
  ones after minutes, and reopened on demand;
* ``h2``: one persistent connection per user; a page's objects are requested at once over it and the server
  answers them back to back (from TCP's view, one response of the page's bytes after idle).

Logs: one row per page (``PAGE_COLUMNS``: ``burst`` is the user, ``flow`` the page's number in the run) and, in
the persistent modes, one row per object (``OBJECT_COLUMNS``: its connection's client port and the request's
index on that connection, which name the server's row for it). docs/data-formats.md has both.
"""

from __future__ import annotations

import csv
import random
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

CHUNK = 65536  # bytes per send() and recv()
MODES = ("fresh", "keepalive", "h2")
# [users]'s defaults (mininet/scenarios/README.md): the seeds' 002 users, a browser's 6 connections per origin.
DEFAULTS = {"count": 5, "min_bytes": 100_000, "max_bytes": 1_500_000, "idle_mean_s": 10.0, "start_s": 2.0,
            "mode": "fresh", "objects": 6, "connections": 6}
OBJECT_COLUMNS = ["flow", "burst", "object", "lport", "request", "start_ns", "end_ns", "bytes", "completed"]


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


def write_client_log(log_path: str, rows: list[dict]) -> None:
    with open(log_path, "w", newline="") as f:
        w = csv.DictWriter(f, ["flow", "burst", "start_ns", "end_ns", "bytes", "completed", "lport"],
                           extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


@dataclass(frozen=True)
class Browser:
    """How the users fetch a page (module docstring); ``keepalive_timeout_s`` None: never closed for idling."""

    mode: str = DEFAULTS["mode"]
    objects: int = DEFAULTS["objects"]
    connections: int = DEFAULTS["connections"]
    keepalive_timeout_s: float | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r}: allowed {', '.join(MODES)}")
        if self.objects < 1 or self.connections < 1:
            raise ValueError("objects and connections must be >= 1")

    @property
    def pool_size(self) -> int:
        return 1 if self.mode == "h2" else self.connections


def split(nbytes: int, objects: int) -> list[int]:
    """A page's objects: its bytes split as evenly as possible (the first ones a byte larger), never empty."""
    n = max(1, min(objects, nbytes))
    q, r = divmod(nbytes, n)
    return [q + (i < r) for i in range(n)]


class Conn:
    """One persistent connection of a user. ``get`` sends a list of requests at once and reads the answers in
    order (one request: HTTP/1.1 keep-alive; a page's: HTTP/2-like)."""

    def __init__(self, dst: str, port: int, timeout: float) -> None:
        self.opened_ns = time.time_ns()  # connect() called
        self.sock = socket.create_connection((dst, port), timeout=timeout)
        self.lport = self.sock.getsockname()[1]
        self.requests = 0
        self.fresh = True  # no request sent yet: its objects' start is the connect()
        self.last_used = time.monotonic()

    def get(self, sizes: list[int], rows: list[dict], timeout: float) -> bool:
        """Request ``sizes`` at once and read each answer in turn into its row (lport, request, start_ns,
        end_ns: its last byte, bytes, completed). True when every answer arrived whole."""
        self.sock.settimeout(timeout)
        sent_ns = time.time_ns()
        for row in rows:
            row.update(lport=self.lport, request=self.requests, start_ns=self.opened_ns if self.fresh else sent_ns)
            self.requests += 1
        self.fresh = False
        self.sock.sendall("".join(f"GET {n}\n" for n in sizes).encode())
        for n, row in zip(sizes, rows):
            got = 0
            while got < n:
                chunk = self.sock.recv(min(CHUNK, n - got))
                if not chunk:
                    break
                got += len(chunk)
                row["end_ns"] = time.time_ns()
            row["bytes"], row["completed"] = got, int(got >= n)
            if got < n:
                return False
        self.last_used = time.monotonic()
        return True

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Pool:
    """A user's persistent connections: at most ``size`` at a time, idle ones reused (the most recently used
    first), each closed once idle for ``timeout_s`` (None: kept until the session ends)."""

    def __init__(self, size: int, timeout_s: float | None) -> None:
        self.size, self.timeout_s = size, timeout_s
        self.idle: list[Conn] = []
        self.busy = 0
        self.lock = threading.Lock()

    def take(self) -> tuple[Conn | None, bool]:
        """An idle connection, or (None, True) when the caller may open one, or (None, False) when the pool is
        full."""
        with self.lock:
            if self.idle:
                self.busy += 1
                return self.idle.pop(), False
            if self.busy < self.size:
                self.busy += 1
                return None, True
            return None, False

    def give(self, conn: Conn | None) -> None:
        """Back to the pool after use (None, or a broken connection closed by the caller: the slot is free)."""
        with self.lock:
            self.busy -= 1
            if conn is not None:
                self.idle.append(conn)

    def expire(self) -> float | None:
        """Close the connections idle for the timeout; when the next one will be (monotonic), None if never."""
        if self.timeout_s is None:
            return None
        now = time.monotonic()
        with self.lock:
            old = [c for c in self.idle if now - c.last_used >= self.timeout_s]
            self.idle = [c for c in self.idle if c not in old]
            nxt = min((c.last_used + self.timeout_s for c in self.idle), default=None)
        for c in old:
            c.close()
        return nxt

    def think(self, seconds: float) -> None:
        """The user's think time, closing connections as their idle time reaches the timeout meanwhile."""
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0:
            nxt = self.expire()
            time.sleep(left if nxt is None else max(0.0, min(left, nxt - time.monotonic())) or 0.001)

    def close(self) -> None:
        with self.lock:
            idle, self.idle = self.idle, []
        for c in idle:
            c.close()


def _worker(pool: Pool, dst: str, port: int, queue: list[tuple[int, dict]], lock: threading.Lock,
            timeout: float) -> None:
    """Keep-alive: one connection of the pool fetching the page's objects one at a time until none is left."""
    conn, may_open = pool.take()
    if conn is None and not may_open:
        return
    try:
        while True:
            with lock:
                if not queue:
                    break
                size, row = queue.pop(0)
            if conn is None:
                row["start_ns"] = time.time_ns()
                conn = Conn(dst, port, timeout)
            if not conn.get([size], [row], timeout):
                conn.close()
                conn = None
                break
    except OSError as e:
        row["error"] = str(e)
        if conn is not None:
            conn.close()
        conn = None
    finally:
        pool.give(conn)


def fetch_page(b: Browser, pool: Pool, dst: str, port: int, sizes: list[int], rows: list[dict],
               timeout: float) -> None:
    """One page's objects over the pool: keep-alive, a worker per connection it may use; h2, all at once on
    the user's one connection."""
    if b.mode == "h2":
        conn, may_open = pool.take()
        try:
            conn = conn or Conn(dst, port, timeout)
            if not conn.get(sizes, rows, timeout):
                conn.close()
                conn = None
        except OSError as e:
            rows[0]["error"] = str(e)
            conn = None
        finally:
            pool.give(conn)
        return
    queue, lock = list(zip(sizes, rows)), threading.Lock()
    workers = [threading.Thread(target=_worker, args=(pool, dst, port, queue, lock, timeout), daemon=True)
               for _ in range(min(len(sizes), pool.size))]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout + 1)


def page_row(page: dict, objects: list[dict]) -> None:
    """A page's row from its objects': start at the first object's start (its connection's connect() when it
    opened one for the page, else the request), end at the last byte of the page, completed when all were."""
    starts = [o["start_ns"] for o in objects if o["start_ns"]]
    if starts:
        page["start_ns"] = min(starts)
    page["bytes"] = sum(o["bytes"] for o in objects)
    page["completed"] = int(all(o["completed"] for o in objects))
    page["end_ns"] = max(o["end_ns"] for o in objects) if page["completed"] else ""
    page["lport"] = objects[0]["lport"]


class Session:
    """The users of one run: their rows (pages and objects) under one lock, written on the way out."""

    def __init__(self, b: Browser, dst: str, port: int, end: float) -> None:
        self.b, self.dst, self.port, self.end = b, dst, port, end
        self.pages: list[dict] = []
        self.objects: list[dict] = []
        self.lock = threading.Lock()

    def new_page(self, k: int, nbytes: int) -> tuple[dict, list[dict]]:
        page = {"flow": 0, "burst": k, "start_ns": time.time_ns(), "end_ns": "", "bytes": 0, "completed": 0,
                "lport": 0}
        n = 1 if self.b.mode == "fresh" else len(split(nbytes, self.b.objects))
        objs = [{"flow": 0, "burst": k, "object": i, "lport": 0, "request": "", "start_ns": 0, "end_ns": "",
                 "bytes": 0, "completed": 0} for i in range(n)]
        with self.lock:
            page["flow"] = len(self.pages)
            for o in objs:
                o["flow"] = page["flow"]
            self.pages.append(page)
            if self.b.mode != "fresh":
                self.objects.extend(objs)
        return page, objs

    def user(self, k: int, seed: int, min_bytes: int, max_bytes: int, idle_mean_s: float) -> None:
        """User k: the draws of the module docstring, pages until the session's end."""
        rng = random.Random(seed * 1009 + k)
        time.sleep(rng.expovariate(1 / idle_mean_s) / 4)  # users do not all start at once
        pool = Pool(self.b.pool_size, self.b.keepalive_timeout_s)
        try:
            while time.monotonic() < self.end:
                nbytes = rng.randint(min_bytes, max_bytes)
                page, objs = self.new_page(k, nbytes)
                timeout = max(1.0, self.end - time.monotonic())
                if self.b.mode == "fresh":
                    fetch(self.dst, self.port, nbytes, timeout, page)
                else:
                    fetch_page(self.b, pool, self.dst, self.port, split(nbytes, self.b.objects), objs, timeout)
                    page_row(page, objs)
                pool.think(rng.expovariate(1 / idle_mean_s))
        finally:
            pool.close()

    def write(self, log_path: str) -> None:
        """The pages to ``log_path``; in the persistent modes the objects beside it (client_requests_*.csv)."""
        with self.lock:
            pages, objects = list(self.pages), list(self.objects)
        write_client_log(log_path, pages)
        if self.b.mode != "fresh":
            with open(requests_log(Path(log_path)), "w", newline="") as f:
                w = csv.DictWriter(f, OBJECT_COLUMNS, extrasaction="ignore")
                w.writeheader()
                w.writerows(objects)


def requests_log(client_log: Path) -> Path | None:
    """The per-object log beside a web client's page log: client_flows_X.csv -> client_requests_X.csv (None for
    another client's log, e.g. a QUIC client's)."""
    if not client_log.name.startswith("client_flows_"):
        return None
    return client_log.with_name(client_log.name.replace("client_flows_", "client_requests_", 1))


def users(dst: str, port: int, n_users: int, min_bytes: int, max_bytes: int, idle_mean_s: float, start_at: int,
          duration: float, seed: int, log_path: str, browser: Browser = Browser()) -> int:
    """The web users: each a sequence of pages separated by think times, from ``start_at`` (ns, absolute) for
    ``duration`` s. Reproducible from ``seed``."""
    while (wait := start_at - time.time_ns()) > 0:
        time.sleep(min(wait, 5_000_000) / 1e9)
    s = Session(browser, dst, port, time.monotonic() + duration)
    threads = [threading.Thread(target=s.user, args=(k, seed, min_bytes, max_bytes, idle_mean_s), daemon=True)
               for k in range(n_users)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join(timeout=max(0.0, s.end - time.monotonic()) + 1)
    finally:
        s.write(log_path)
    return 0
