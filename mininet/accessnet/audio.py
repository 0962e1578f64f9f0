"""CBR interactive audio: ``python -m accessnet.audio send|recv ...``.

One UDP packet every ``interval`` ms: a 12-byte RTP header (V=2, PT=0,
sequence number, 8 kHz media timestamp, SSRC) and the codec payload, whose
first 8 bytes carry the send time (ns, big-endian, CLOCK_REALTIME) and next
4 the full sequence number. Send times follow absolute deadlines, so the
stream does not drift. The sender logs ``seq,send_ns``; the receiver
``seq,send_ns,recv_ns`` with the kernel's receive timestamp (SO_TIMESTAMPNS).
Both flush their logs on exit, also on SIGTERM. The sender talks in its destination's family (marking the
packets EF in the IPv4 TOS or the IPv6 traffic class); the receiver listens on both families.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import socket
import struct
import sys
import time

from .addresses import bind_any, family

RTP = struct.Struct("!BBHII")
STAMP = struct.Struct("!QI")
SSRC = 0x1F0A0D10
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)


STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class Stop(Exception):
    """Raised in the main loop by SIGTERM/SIGINT (see ``stop_on_signals``): the log is then flushed."""


def _stop(*_):
    raise Stop()


def stop_on_signals() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)


@contextlib.contextmanager
def uninterrupted():
    """Hold SIGTERM/SIGINT while one packet is sent and logged: a stop between the two left a packet on
    the wire that the send log did not have (seen once in web6: 'seq 779 was never sent')."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def packet(seq: int, send_ns: int, payload: int) -> bytes:
    head = RTP.pack(0x80, 0, seq & 0xFFFF, (seq * 160) & 0xFFFFFFFF, SSRC)
    body = STAMP.pack(send_ns, seq & 0xFFFFFFFF)
    return head + body + b"\x00" * max(0, payload - len(body))


def parse(data: bytes) -> tuple[int, int]:
    """(seq, send_ns) of a received packet."""
    send_ns, seq = STAMP.unpack_from(data, RTP.size)
    return seq, send_ns


def send(dst: str, port: int, interval_ms: float, payload: int, duration: float, log: str,
         start_at: int | None) -> int:
    s = udp_sender(dst)
    start = start_at or time.time_ns()
    step = int(interval_ms * 1_000_000)
    n = int(duration * 1e9 // step)
    with open(log, "w") as f:
        f.write("seq,send_ns\n")
        try:
            for seq in range(n):
                due = start + seq * step
                while (wait := due - time.time_ns()) > 0:
                    time.sleep(min(wait, 2_000_000) / 1e9)
                with uninterrupted():
                    t = time.time_ns()
                    s.sendto(packet(seq, t, payload), (dst, port))
                    f.write(f"{seq},{t}\n")
        except Stop:
            pass
    return 0


EF = 0xB8  # DSCP EF, as a VoIP stack marks its packets (ECN bits 0)


def udp_sender(dst: str) -> socket.socket:
    """A UDP socket in ``dst``'s family, its packets marked EF (IPv4 TOS or IPv6 traffic class)."""
    fam = family(dst)
    s = socket.socket(fam, socket.SOCK_DGRAM)
    if fam == socket.AF_INET6:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_TCLASS, EF)
    else:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, EF)
    return s


def rx_time_ns(anc: list) -> int:
    """The kernel's receive timestamp (SO_TIMESTAMPNS) from recvmsg's ancillary data, else now."""
    for level, kind, value in anc:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", value[:16])
            return sec * 1_000_000_000 + nsec
    return time.time_ns()


def recv(port: int, log: str, duration: float) -> int:
    s = bind_any(socket.SOCK_DGRAM, port)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(0.5)
    end = time.monotonic() + duration
    with open(log, "w") as f:
        f.write("seq,send_ns,recv_ns\n")
        try:
            while time.monotonic() < end:
                try:
                    data, anc, _, _ = s.recvmsg(2048, 64)
                except TimeoutError:
                    continue
                t = rx_time_ns(anc)
                if len(data) < RTP.size + STAMP.size:
                    continue
                seq, send_ns = parse(data)
                f.write(f"{seq},{send_ns},{t}\n")
        except Stop:
            pass
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m accessnet.audio", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("--dst", required=True)
    p.add_argument("--port", type=int, default=5004)
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--payload", type=int, default=40)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--start-at", type=int, help="absolute start time, ns (CLOCK_REALTIME)")
    p.add_argument("--log", required=True)
    p = sub.add_parser("recv")
    p.add_argument("--port", type=int, default=5004)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--log", required=True)
    a = ap.parse_args(argv)
    stop_on_signals()
    if a.cmd == "send":
        return send(a.dst, a.port, a.interval_ms, a.payload, a.duration, a.log, a.start_at)
    return recv(a.port, a.log, a.duration)


if __name__ == "__main__":
    sys.exit(main())
