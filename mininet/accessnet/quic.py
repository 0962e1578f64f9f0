"""QUIC page loads (HTTP/3's transport) with a real QUIC stack: ``python -m accessnet.quic server|client ...``.

Browsers load many pages over HTTP/3: QUIC over UDP, with its own congestion control and an initial window of
10 packets, and flow control the switch cannot rewrite (it is encrypted). This is such a page load in the lab,
built on aioquic's asyncio API (``aioquic.asyncio.serve`` / ``connect``, ``QuicConfiguration``); aioquic is
pinned in requirements.txt and imported only by this module.

* The protocol: ALPN ``iwlab-page`` (a private one: the requests are not HTTP/3's nor hq-interop's). On every
  bidirectional stream the client sends ``GET <nbytes>\\n`` and ends its side; the server answers with that
  many bytes and ends the stream. A request it cannot read, or of more than ``MAX_STREAM_BYTES``, gets the
  stream reset. The page's objects are the streams.
* ``server``: listens on ``--host``/``--port`` (an IPv4 or IPv6 address) with a self-signed certificate it
  makes at start-up with ``cryptography`` (an ECDSA P-256 key, in a temporary directory removed as soon as
  aioquic has loaded it: a new one per server, i.e. per replication). One JSON line per connection goes to
  ``--log`` when the connection ends (closed by the client, idle timeout) or when the server is stopped
  (SIGTERM: the connections still open are written, ``closed`` = "stopped").
* ``client``: at an absolute time (``--start-at``, ns, CLOCK_REALTIME, as ``accessnet.web``'s client) opens
  ``--connections`` C connections in parallel, each with ``--streams`` S streams opened at once as soon as
  its handshake is done; the page's ``--bytes`` are split evenly over the C x S streams (``split_bytes``).
  Two logs: per connection (``--log``) and per stream (``--streams-log``), written when every stream has
  ended, at ``--timeout``, or on SIGTERM (what was measured up to then). Its sockets get Chromium's 1 MiB
  receive buffer (``RCVBUF``), so that a datagram is lost in the network, not at a slow Python receiver.

Congestion control is aioquic's own, untouched: its default algorithm (``QuicConfiguration``'s
``congestion_control_algorithm``, "reno" in aioquic 1.7) with its initial window of ``K_INITIAL_WINDOW`` (10)
datagrams of ``max_datagram_size`` (1200 B of UDP payload by default; aioquic does no path MTU discovery),
which slow start has grown by the handshake's acknowledged bytes when the first request arrives, and its pacer:
with an RTT sample (after the handshake) aioquic sends at about cwnd / smoothed RTT after a small burst
allowance. Measured in the lab (quic1, HSPA, model switch): the first flight after the handshake, about
12.5 kB, left the server as 7 datagrams back to back and then pairs 16.5 ms apart (srtt / 10 per datagram),
queued at the 2 Mbit/s bottleneck and reached the phone back to back at the link's rate. The server records
what each connection ran with: ``cc``, ``max_datagram_size``, ``initial_cwnd_bytes`` (the recovery object's
window before the first packet).

Loss and recovery statistics come from aioquic's recovery object (``QuicConnection._loss``, a
``QuicPacketRecovery``; aioquic has no public statistics API, so ``RecoveryStats`` wraps three of that one
object's methods, in this process only; the pin in requirements.txt keeps them what this reads):

* ``lost``: packets aioquic's loss detection declared lost (RFC 9002 6.1, packet or time threshold), i.e.
  calls of ``_on_packets_lost`` with a congestion event;
* ``rescheduled``: packets whose data a probe timeout (or a client's repeated Initial, to speed up the
  handshake) scheduled to be sent again: aioquic declares those lost too, without a congestion event;
* ``pto``: probe timeout expiries (RFC 9002 6.2), the increments of ``_pto_count`` in
  ``on_loss_detection_timeout`` (the only place aioquic counts them);
* ``packets_sent``: packets handed to the recovery (``on_packet_sent``), every packet the connection sent.

For ``flows.csv`` (docs/data-formats.md) a connection is a flow, ``retrans`` = lost + rescheduled (the packets
aioquic gave up on, whose frames but ACKs it sends again, as Linux's ``tcpi_total_retrans`` counts segments
resent for any reason), ``rtos`` = pto; ``accessnet.web.merge_flow_logs`` joins the client's and the server's
lines on the client's UDP port.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import datetime
import functools
import json
import re
import signal
import socket
import ssl
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TextIO

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.asyncio.server import QuicServer
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import NetworkAddress, QuicConnection
from aioquic.quic.events import (ConnectionTerminated, HandshakeCompleted, QuicEvent, StreamDataReceived,
                                 StreamReset)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

ALPN = "iwlab-page"
QUIC_PORT = 4433
MAX_REQUEST = 64  # bytes of a request line
MAX_STREAM_BYTES = 10**8  # a response is one bytes object in aioquic's send buffer: keep it bounded
REQUEST = re.compile(rb"GET (\d{1,12})\n")
BAD_REQUEST = 0x101  # application error code of a reset stream (H3_GENERAL_PROTOCOL_ERROR's value)
CLOSE_GRACE_S = 5.0  # how long a stopped client waits for its connections' closing handshakes
# The client's UDP receive buffer, as Chromium sets it for QUIC (1 MiB): the kernel's default (about 200 kB)
# overflows behind a Python receiver on fast links or loopback, and a datagram dropped at the socket would
# count as the bottleneck's loss. SO_RCVBUFFORCE (root, as in the lab), else SO_RCVBUF up to rmem_max.
RCVBUF = 1 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)


def now_ns() -> int:
    return time.time_ns()


def split_bytes(total: int, parts: int) -> list[int]:
    """``total`` bytes over ``parts`` streams as evenly as integers allow: the first ``total % parts`` streams
    carry one byte more, so the page is exactly ``total`` bytes."""
    if parts < 1 or total < 0:
        raise ValueError(f"cannot split {total} bytes over {parts} streams")
    q, r = divmod(total, parts)
    return [q + 1] * r + [q] * (parts - r)


# ----------------------------------------------------------------------------- TLS


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate and its key (ECDSA P-256, valid from a day ago for a week) as PEM files in
    ``directory``: the lab's server has no name a CA could vouch for, and its client does not verify."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "iwlab")])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=8)).sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def server_configuration() -> QuicConfiguration:
    """aioquic's defaults (congestion control, datagram size, flow control) with our ALPN and a fresh
    certificate; the files live only until aioquic has read them."""
    config = QuicConfiguration(is_client=False, alpn_protocols=[ALPN])
    with tempfile.TemporaryDirectory(prefix="iwlab-quic-") as d:
        config.load_cert_chain(*make_certificate(Path(d)))
    return config


def client_configuration() -> QuicConfiguration:
    """aioquic's defaults, our ALPN, and no certificate verification (the lab's server is self-signed)."""
    return QuicConfiguration(is_client=True, alpn_protocols=[ALPN], verify_mode=ssl.CERT_NONE)


# ----------------------------------------------------------------------------- recovery statistics


@dataclass
class RecoveryStats:
    """Counters read off one connection's recovery object (module docstring: what each one is)."""

    cc: str
    max_datagram_size: int
    initial_cwnd_bytes: int
    packets_sent: int = 0
    lost: int = 0
    rescheduled: int = 0
    pto: int = 0

    @classmethod
    def attach(cls, quic: QuicConnection) -> RecoveryStats:
        """Wrap the recovery object's methods that see every sent packet, every packet declared lost and every
        loss-detection timeout; call before the connection sends anything."""
        rec, config = quic._loss, quic.configuration
        stats = cls(config.congestion_control_algorithm, config.max_datagram_size, rec.congestion_window)
        on_sent, on_lost, on_timeout = rec.on_packet_sent, rec._on_packets_lost, rec.on_loss_detection_timeout

        def packet_sent(**kw: Any) -> None:
            stats.packets_sent += 1
            on_sent(**kw)

        def packets_lost(*, packets: Any, congestion_event: bool = True, **kw: Any) -> None:
            packets = list(packets)
            if congestion_event:
                stats.lost += len(packets)
            else:
                stats.rescheduled += len(packets)
            on_lost(packets=packets, congestion_event=congestion_event, **kw)

        def loss_timeout(**kw: Any) -> None:
            before = rec._pto_count
            on_timeout(**kw)
            stats.pto += max(0, rec._pto_count - before)

        rec.on_packet_sent, rec.on_loss_detection_timeout = packet_sent, loss_timeout
        rec._on_packets_lost = packets_lost
        return stats


# ----------------------------------------------------------------------------- server


class ServerLog:
    """The server's JSON lines, one per connection, flushed as written (a stopped server loses none)."""

    def __init__(self, f: TextIO) -> None:
        self.f = f
        self.open: set[PageServer] = set()

    def write(self, record: dict) -> None:
        self.f.write(json.dumps(record) + "\n")
        self.f.flush()


class PageServer(QuicConnectionProtocol):
    """One server connection: answers each stream's request, counts what it served and what aioquic's
    recovery did, and writes its log line once, when the connection ends or the server stops."""

    def __init__(self, quic: QuicConnection, stream_handler: Callable | None = None, *, log: ServerLog) -> None:
        super().__init__(quic, stream_handler)
        self.log = log
        self.stats = RecoveryStats.attach(quic)
        self.peer: NetworkAddress | None = None
        self.start_ns = now_ns()
        self.handshake_ns: int | None = None
        self.requests: dict[int, bytes] = {}
        self.served: dict[int, int] = {}
        self.bad_requests = 0
        self.logged = False
        log.open.add(self)

    def datagram_received(self, data: bytes | str, addr: NetworkAddress) -> None:
        if self.peer is None:
            self.peer = addr
        super().datagram_received(data, addr)

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, HandshakeCompleted):
            self.handshake_ns = now_ns()
        elif isinstance(event, StreamDataReceived):
            self.on_request_data(event.stream_id, event.data, event.end_stream)
        elif isinstance(event, ConnectionTerminated):
            self.write_log(f"terminated: {event.reason_phrase or 'closed by the peer'} (0x{event.error_code:x})")

    def on_request_data(self, stream_id: int, data: bytes, end_stream: bool) -> None:
        if stream_id in self.served:
            return  # answered already; anything after the request line is ignored
        buf = self.requests.get(stream_id, b"") + data
        m = REQUEST.fullmatch(buf) if buf.endswith(b"\n") else None
        if m and int(m.group(1)) <= MAX_STREAM_BYTES:
            self.requests.pop(stream_id, None)
            nbytes = int(m.group(1))
            self.served[stream_id] = nbytes
            self._quic.send_stream_data(stream_id, bytes(nbytes), end_stream=True)
            self.transmit()
        elif m or end_stream or len(buf) >= MAX_REQUEST or b"\n" in buf:
            self.requests.pop(stream_id, None)
            self.served[stream_id] = 0
            self.bad_requests += 1
            self._quic.reset_stream(stream_id, BAD_REQUEST)
            self.transmit()
        else:
            self.requests[stream_id] = buf

    def record(self, closed: str) -> dict:
        peer = self.peer or ("", 0)
        return {"client_addr": peer[0], "client_port": peer[1], "start_ns": self.start_ns,
                "handshake_ns": self.handshake_ns, "end_ns": now_ns(), "streams": len(self.served),
                "bytes": sum(self.served.values()), "bad_requests": self.bad_requests,
                "retrans": self.stats.lost + self.stats.rescheduled, "rtos": self.stats.pto, **asdict(self.stats),
                "closed": closed}

    def write_log(self, closed: str) -> None:
        if not self.logged:
            self.logged = True
            self.log.open.discard(self)
            self.log.write(self.record(closed))


async def serve_pages(host: str, port: int, log_path: Path, config: QuicConfiguration, stop: asyncio.Event) -> int:
    """Serve until ``stop`` is set; then log the connections still open and close them."""
    with open(log_path, "a") as f:
        log = ServerLog(f)
        server: QuicServer = await serve(host, port, configuration=config,
                                         create_protocol=functools.partial(PageServer, log=log))
        print(f"listening on [{host}]:{port} (udp), ALPN {ALPN}, congestion control "
              f"{config.congestion_control_algorithm}, max datagram {config.max_datagram_size} B", flush=True)
        await stop.wait()
        for conn in list(log.open):
            conn.write_log("stopped")
        server.close()
        await asyncio.sleep(0.05)  # the CONNECTION_CLOSE datagrams leave
    return 0


# ----------------------------------------------------------------------------- client


@dataclass
class StreamRow:
    """One object of the page: a stream's request and what came back."""

    burst: int
    connection: int
    stream_id: int = -1
    requested: int = 0
    start_ns: int = 0  # the request was handed to aioquic
    end_ns: int | str = ""  # the last byte arrived
    bytes: int = 0
    completed: int = 0  # every requested byte arrived and the server ended the stream


@dataclass
class ConnectionRow:
    """One connection (a flow in flows.csv): the columns of web.py's client log, then QUIC's own."""

    flow: int
    burst: int
    start_ns: int = 0  # connect() called (the client's first Initial)
    end_ns: int | str = ""  # the last byte of any of its streams arrived
    bytes: int = 0
    completed: int = 0  # all its streams completed
    lport: int = 0  # the client's UDP port: the server's log names the connection by it
    handshake_ns: int | str = ""
    rcvbuf: int = 0  # the socket's receive buffer as the kernel reports it (twice what was asked for)
    streams: int = 0
    error: str = ""


class PageClient(QuicConnectionProtocol):
    """One client connection: opens its streams at once and follows them to their ends."""

    def __init__(self, quic: QuicConnection, stream_handler: Callable | None = None, *,
                 rcvbuf: int = RCVBUF) -> None:
        super().__init__(quic, stream_handler)
        self.rows: dict[int, StreamRow] = {}
        self.ended: dict[int, asyncio.Future[None]] = {}
        self.local_port = 0
        self.want_rcvbuf = rcvbuf
        self.rcvbuf = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.local_port = int(transport.get_extra_info("sockname")[1])
        self.rcvbuf = set_rcvbuf(transport.get_extra_info("socket"), self.want_rcvbuf)

    async def fetch(self, rows: list[StreamRow]) -> None:
        """Request every row's bytes on a stream of its own, all at once; return when all have ended."""
        for row in rows:
            row.stream_id = self._quic.get_next_available_stream_id()
            self.rows[row.stream_id] = row
            self.ended[row.stream_id] = self._loop.create_future()
            row.start_ns = now_ns()
            self._quic.send_stream_data(row.stream_id, f"GET {row.requested}\n".encode(), end_stream=True)
        self.transmit()
        await asyncio.gather(*self.ended.values())

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamDataReceived) and event.stream_id in self.rows:
            row = self.rows[event.stream_id]
            if event.data:
                row.bytes += len(event.data)
                row.end_ns = now_ns()
            if event.end_stream:
                row.completed = int(row.bytes == row.requested)
                self._end(event.stream_id)
        elif isinstance(event, StreamReset):
            self._end(event.stream_id)
        elif isinstance(event, ConnectionTerminated):
            for sid in self.ended:
                self._end(sid)

    def _end(self, stream_id: int) -> None:
        fut = self.ended.get(stream_id)
        if fut is not None and not fut.done():
            fut.set_result(None)


def set_rcvbuf(sock: Any, nbytes: int) -> int:
    """Ask for an ``nbytes`` receive buffer (``RCVBUF``: why); returns what the kernel granted."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, nbytes)
    except OSError:  # not root: capped at net.core.rmem_max
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, nbytes)
    return int(sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF))


async def load_connection(conn: ConnectionRow, streams: list[StreamRow], dst: str, port: int,
                          rcvbuf: int = RCVBUF) -> None:
    """One connection of the page: handshake, then its streams; fills ``conn`` and ``streams`` as it goes.
    Returns after aioquic's closing handshake (about 3 PTOs: the ends were taken at the last bytes)."""
    conn.start_ns = now_ns()
    conn.streams = len(streams)
    try:
        async with connect(dst, port, configuration=client_configuration(),
                           create_protocol=functools.partial(PageClient, rcvbuf=rcvbuf)) as proto:
            assert isinstance(proto, PageClient)
            conn.handshake_ns, conn.lport, conn.rcvbuf = now_ns(), proto.local_port, proto.rcvbuf
            await proto.fetch(streams)
    except OSError as e:  # ConnectionError among them: the handshake failed, or the connection ended early
        conn.error = f"{type(e).__name__}: {e}".rstrip(": ")
    finally:
        sum_up(conn, streams)


def sum_up(conn: ConnectionRow, streams: list[StreamRow]) -> None:
    """A connection's bytes, end and completion from its streams'."""
    conn.bytes = sum(s.bytes for s in streams)
    ends = [s.end_ns for s in streams if s.end_ns != ""]
    conn.end_ns = max(ends) if ends else ""
    conn.completed = int(bool(streams) and all(s.completed for s in streams))


def plan_page(connections: int, streams: int, total: int, burst: int) -> tuple[list[ConnectionRow],
                                                                             list[list[StreamRow]]]:
    """The page's rows before anything is sent: connection i carries streams i*S .. i*S + S - 1 of the even
    split."""
    sizes = split_bytes(total, connections * streams)
    conns = [ConnectionRow(flow=i, burst=burst) for i in range(connections)]
    per = [[StreamRow(burst, i, requested=sizes[i * streams + j]) for j in range(streams)]
           for i in range(connections)]
    return conns, per


async def sleep_until(t_ns: int) -> None:
    """Until CLOCK_REALTIME reaches ``t_ns`` (re-read every half second: the loop's clock is monotonic)."""
    while (wait := t_ns - now_ns()) > 0:
        await asyncio.sleep(min(wait / 1e9, 0.5))


async def load_page(dst: str, port: int, conns: list[ConnectionRow], per: list[list[StreamRow]],
                    start_at: int, timeout: float, stop: asyncio.Event,
                    rcvbuf: int = RCVBUF) -> tuple[str, list[asyncio.Task]]:
    """The page load from ``start_at`` until every connection is done, ``timeout`` s after the start, or
    ``stop``; returns why it ended ("done", "timeout", "stopped") and the connections' tasks, which the caller
    closes (``close_all``) after it wrote the logs: what the logs hold is what was measured when it ended."""
    stopped = asyncio.create_task(stop.wait())
    started = asyncio.create_task(sleep_until(start_at))
    await asyncio.wait({stopped, started}, return_when=asyncio.FIRST_COMPLETED)
    page: list[asyncio.Task] = []
    if not stop.is_set():
        page = [asyncio.create_task(load_connection(c, s, dst, port, rcvbuf)) for c, s in zip(conns, per)]
        everything = asyncio.gather(*page, return_exceptions=True)
        await asyncio.wait({everything, stopped}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    for t in (stopped, started):
        t.cancel()
    why = "done" if page and all(t.done() for t in page) else "stopped" if stop.is_set() else "timeout"
    for c, s, t in zip(conns, per, page):
        sum_up(c, s)
        if t.done() and not t.cancelled() and t.exception() is not None:
            c.error = f"{type(t.exception()).__name__}: {t.exception()}"
        elif not c.completed and not c.error:
            c.error = why if why != "done" else "incomplete"
    return why, page


async def close_all(tasks: list[asyncio.Task]) -> None:
    """Cancel the connections still running (their context managers close them) and give aioquic's closing
    handshakes ``CLOSE_GRACE_S``."""
    running = [t for t in tasks if not t.done()]
    for t in running:
        t.cancel()
    if running:
        await asyncio.wait(running, timeout=CLOSE_GRACE_S)


def write_rows(path: Path, rows: list) -> None:
    """A csv of dataclass rows, columns in field order."""
    cls = type(rows[0]) if rows else None
    with open(path, "w", newline="") as f:
        if cls is None:
            return
        w = csv.DictWriter(f, [fl.name for fl in fields(cls)])
        w.writeheader()
        w.writerows(asdict(r) for r in rows)


async def client(a: argparse.Namespace, stop: asyncio.Event) -> int:
    conns, per = plan_page(a.connections, a.streams, a.bytes, a.burst)
    why, page = "failed", []
    try:
        why, page = await load_page(a.dst, a.port, conns, per, a.start_at, a.timeout, stop, a.rcvbuf)
    finally:  # what was measured is written, also when stopped or on an error
        write_rows(Path(a.log), conns)
        write_rows(Path(a.streams_log), [s for row in per for s in row])
        print(f"page {why}: {sum(c.completed for c in conns)} of {len(conns)} connections completed, "
              f"{sum(c.bytes for c in conns)} of {a.bytes} bytes", flush=True)
    await close_all(page)
    return 0 if all(c.completed for c in conns) else 1


# ----------------------------------------------------------------------------- command line


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m accessnet.quic", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("server", help="serve GET <nbytes> on every stream")
    p.add_argument("--host", required=True, help="address to listen on (IPv4 or IPv6 literal)")
    p.add_argument("--port", type=int, default=QUIC_PORT)
    p.add_argument("--log", required=True, help="one JSON line per connection")
    p = sub.add_parser("client", help="one page load: C connections x S streams")
    p.add_argument("--dst", required=True, help="the server's address (IPv4 or IPv6 literal), taken as given")
    p.add_argument("--port", type=int, default=QUIC_PORT)
    p.add_argument("--connections", type=int, default=1)
    p.add_argument("--streams", type=int, default=6, help="streams per connection, opened at once")
    p.add_argument("--bytes", type=int, required=True, help="the page's bytes, split evenly over all streams")
    p.add_argument("--start-at", type=int, default=0, help="absolute start, ns (CLOCK_REALTIME)")
    p.add_argument("--burst", type=int, default=0, help="the burst number in flows.csv")
    p.add_argument("--timeout", type=float, default=60.0, help="s from the start until the page is given up")
    p.add_argument("--rcvbuf", type=int, default=RCVBUF, help="the UDP socket's receive buffer, bytes (RCVBUF)")
    p.add_argument("--log", required=True, help="per connection (csv)")
    p.add_argument("--streams-log", required=True, help="per stream (csv)")
    return ap


def check_args(ap: argparse.ArgumentParser, a: argparse.Namespace) -> None:
    if a.cmd == "client":
        if not 1 <= a.connections <= 1000 or not 1 <= a.streams <= 100:
            ap.error("need 1 <= --connections <= 1000 and 1 <= --streams <= 100 (aioquic's default stream limit "
                     "is 128 per connection)")
        if not 0 <= a.bytes <= MAX_STREAM_BYTES * a.connections * a.streams or a.timeout <= 0:
            ap.error(f"need 0 <= --bytes <= {MAX_STREAM_BYTES} per stream and --timeout > 0")


async def run(a: argparse.Namespace, config: QuicConfiguration | None = None) -> int:
    """The command under a stop event that SIGTERM and SIGINT set (the event loop's own signal handling);
    the server's ``config`` is made before the loop runs (its key and certificate files are blocking work)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if a.cmd == "server":
        assert config is not None
        return await serve_pages(a.host, a.port, Path(a.log), config, stop)
    return await client(a, stop)


def main(argv: list[str] | None = None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    check_args(ap, a)
    return asyncio.run(run(a, server_configuration() if a.cmd == "server" else None))


if __name__ == "__main__":
    sys.exit(main())
