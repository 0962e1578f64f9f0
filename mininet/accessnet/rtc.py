"""An adaptive real-time media flow (the seeds' rtc+web workload): ``python -m accessnet.rtc send|recv ...``.

The seeds (002) run RRTCC, the receiver-side delay-based rate control of
early WebRTC. This is a compact controller in the same spirit, not RRTCC
itself:

* the sender paces ``size``-byte UDP packets at rate ``r``, starting at
  128 kbit/s; each carries its sequence number and send time;
* every 100 ms the receiver reports the rate it received over the last
  500 ms, the loss fraction in that window and the queuing delay (the
  lowest one-way delay of the last 100 ms minus the lowest ever seen);
* over-use (queuing delay above 50 ms, or loss above 10 %) sets
  ``r = 0.85 x receive rate``; under-use (queuing delay below 25 ms and loss
  below 2 %) raises ``r`` by 5 % per report; otherwise ``r`` holds. ``r``
  stays within [64 kbit/s, max].

Logs (CLOCK_REALTIME ns): sender ``seq,send_ns,size,rate_bps``; receiver
``seq,send_ns,recv_ns,size`` (kernel receive timestamps). The sender talks in
its destination's family; the receiver listens on both.
"""

from __future__ import annotations

import argparse
import collections
import socket
import struct
import sys
import time

from .addresses import bind_any, family, wildcard
from .audio import SO_TIMESTAMPNS, Stop, rx_time_ns, stop_on_signals, uninterrupted

HEAD = struct.Struct("!IQ")  # seq, send_ns
REPORT = struct.Struct("!QdQ")  # receive rate bit/s, loss fraction, queuing delay ns
MIN_RATE = 64_000
OVERUSE_NS, UNDERUSE_NS = 50_000_000, 25_000_000
REPORT_NS, WINDOW_NS = 100_000_000, 500_000_000


def next_rate(rate: float, recv_rate: float, loss: float, qdelay_ns: int, max_rate: float) -> float:
    """The sender's reaction to one receiver report (pure, unit-tested)."""
    if qdelay_ns > OVERUSE_NS or loss > 0.10:
        rate = 0.85 * recv_rate
    elif qdelay_ns < UNDERUSE_NS and loss < 0.02:
        rate = rate * 1.05
    return min(max_rate, max(MIN_RATE, rate))


def send(dst: str, port: int, size: int, start_bps: float, max_bps: float, duration: float, log: str,
         start_at: int | None) -> int:
    fam = family(dst)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.bind((wildcard(fam), port + 1))  # reports come back here
    s.setblocking(False)
    start = start_at or time.time_ns()
    while (wait := start - time.time_ns()) > 0:
        time.sleep(min(wait, 5_000_000) / 1e9)
    rate, seq, due = float(start_bps), 0, start
    end = start + int(duration * 1e9)
    pad = b"\x00" * max(0, size - HEAD.size)
    with open(log, "w") as f:
        f.write("seq,send_ns,size,rate_bps\n")
        try:
            while (now := time.time_ns()) < end:
                try:
                    while True:
                        rep = s.recv(64)
                        if len(rep) >= REPORT.size:
                            recv_rate, loss, qdelay = REPORT.unpack_from(rep)
                            rate = next_rate(rate, recv_rate, loss, qdelay, max_bps)
                except BlockingIOError:
                    pass
                if now < due:
                    time.sleep(min(due - now, 2_000_000) / 1e9)
                    continue
                with uninterrupted():
                    s.sendto(HEAD.pack(seq, now) + pad, (dst, port))
                    f.write(f"{seq},{now},{size},{int(rate)}\n")
                seq += 1
                due += int(size * 8 * 1e9 / rate)
                due = max(due, now - 50_000_000)  # after a stall, do not burst out more than 50 ms of media
        except Stop:
            pass
    return 0


def recv(port: int, log: str, duration: float) -> int:
    s = bind_any(socket.SOCK_DGRAM, port)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(0.02)
    end = time.monotonic() + duration
    window: collections.deque = collections.deque()  # (recv_ns, seq, size, owd)
    base_owd = None
    sender = None
    next_report = time.time_ns() + REPORT_NS
    with open(log, "w") as f:
        f.write("seq,send_ns,recv_ns,size\n")
        try:
            while time.monotonic() < end:
                try:
                    data, anc, _, addr = s.recvmsg(2048, 64)
                    t = rx_time_ns(anc)
                    if len(data) >= HEAD.size:
                        seq, send_ns = HEAD.unpack_from(data)
                        f.write(f"{seq},{send_ns},{t},{len(data)}\n")
                        owd = t - send_ns
                        base_owd = owd if base_owd is None else min(base_owd, owd)
                        window.append((t, seq, len(data), owd))
                        sender = addr  # a v4-mapped address on the dual-stack socket for an IPv4 sender
                except TimeoutError:
                    pass
                now = time.time_ns()
                while window and window[0][0] < now - WINDOW_NS:
                    window.popleft()
                if now >= next_report and sender is not None and window:
                    next_report = now + REPORT_NS
                    span = max(now - window[0][0], REPORT_NS)
                    rate = sum(w[2] for w in window) * 8 * 1e9 / span
                    seqs = [w[1] for w in window]
                    expected = max(seqs) - min(seqs) + 1
                    loss = max(0.0, 1 - len(set(seqs)) / expected)
                    recent = [w[3] for w in window if w[0] >= now - REPORT_NS]
                    qdelay = (min(recent) - base_owd) if recent else 0
                    s.sendto(REPORT.pack(int(rate), loss, max(0, qdelay)), sender)
        except Stop:
            pass
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.rtc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--size", type=int, default=1200, help="UDP payload bytes per packet")
    p.add_argument("--start-kbps", type=float, default=128.0)
    p.add_argument("--max-kbps", type=float, default=2500.0)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--start-at", type=int, help="absolute start time, ns (CLOCK_REALTIME)")
    p.add_argument("--log", required=True)
    p = sub.add_parser("recv")
    p.add_argument("--port", type=int, default=5006)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    stop_on_signals()
    if a.cmd == "send":
        return send(a.dst, a.port, a.size, a.start_kbps * 1e3, a.max_kbps * 1e3, a.duration, a.log, a.start_at)
    return recv(a.port, a.log, a.duration)


if __name__ == "__main__":
    sys.exit(main())
