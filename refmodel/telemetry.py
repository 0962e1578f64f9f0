"""The per-packet telemetry record (twin of ``p4src/include/telemetry.p4``).

Every frame that meets the bottleneck yields one record, cloned by the switch
to its monitor port as an Ethernet frame of ethertype 0x88B5 carrying this
64-byte header (network byte order). Layout and field meanings are documented
in ``docs/telemetry.md``; ``decode_frame`` reads one from a captured frame.
``link`` (the access link, 16 bits) and ``ipver`` (6 for an IPv6 packet) sit in
what was padding: a record of the single-link pipeline's IPv4 packets (link 0)
is byte for byte what it was before. An IPv6 packet's ``src`` and ``dst`` are
its addresses' low 32 bits.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from .constants import TELEMETRY_ETHERTYPE, TELEMETRY_VERSION

FORMAT = "!BBBBBBHIIQIIIIHHBBHQQ"
SIZE = struct.calcsize(FORMAT)
assert SIZE == 64
ETH_HEADER = 14


class TelemetryError(ValueError):
    pass


@dataclass(frozen=True)
class Record:
    aqm: int
    decision: int
    reason: int
    cls: int
    tflags: int
    length: int
    seq: int
    rand: int
    ts_ns: int
    sojourn_ns: int
    backlog_ns: int
    src: int
    dst: int
    sport: int
    dport: int
    proto: int
    s1: int
    s2: int
    version: int = TELEMETRY_VERSION
    link: int = 0  # the access link (link_of), 0 in a single-link pipeline
    ipver: int = 0  # 6 for an IPv6 packet (src, dst: its addresses' low 32 bits), else 0

    def encode(self) -> bytes:
        return struct.pack(
            FORMAT, self.version, self.aqm, self.decision, self.reason, self.cls, self.tflags, self.length,
            self.seq, self.rand, self.ts_ns, min(self.sojourn_ns, 0xFFFFFFFF), min(self.backlog_ns, 0xFFFFFFFF),
            self.src, self.dst, self.sport, self.dport, self.proto, self.ipver, self.link, self.s1 & (2**64 - 1),
            self.s2 & (2**64 - 1),
        )

    @classmethod
    def decode(cls, data: bytes) -> "Record":
        if len(data) < SIZE:
            raise TelemetryError(f"telemetry record needs {SIZE} bytes, got {len(data)}")
        (version, aqm, decision, reason, klass, tflags, length, seq, rand, ts, soj, backlog, src, dst, sport,
         dport, proto, ipver, link, s1, s2) = struct.unpack_from(FORMAT, data)
        if version != TELEMETRY_VERSION:
            raise TelemetryError(f"telemetry version {version}, expected {TELEMETRY_VERSION}")
        return cls(aqm, decision, reason, klass, tflags, length, seq, rand, ts, soj, backlog, src, dst, sport,
                   dport, proto, s1, s2, version, link, ipver)


def encode_frame(rec: Record, dst_mac: bytes = b"\xff" * 6, src_mac: bytes = b"\x02\x00\x00\x00\x00\x99") -> bytes:
    return dst_mac + src_mac + struct.pack("!H", TELEMETRY_ETHERTYPE) + rec.encode()


def decode_frame(frame: bytes) -> Record:
    if len(frame) < ETH_HEADER or struct.unpack_from("!H", frame, 12)[0] != TELEMETRY_ETHERTYPE:
        raise TelemetryError("not a telemetry frame")
    return Record.decode(frame[ETH_HEADER:])
