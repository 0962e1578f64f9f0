"""Read the switch's telemetry capture (telemetry.pcap, docs/data-formats.md) into a DataFrame.

``read_telemetry(path)`` is the fast reader: dpkt walks the classic pcap
(Ethernet link type), the 64-byte records of frames with ethertype 0x88B5 are
joined and decoded at once with a numpy structured dtype equivalent to
``refmodel.telemetry.FORMAT``. It returns ``(records, skipped)``: one row per
record with the columns of ``refmodel.telemetry.Record`` (in its field order)
and ``ipver`` (byte 45: 6 for an IPv6 packet, 0 otherwise; docs/telemetry.md),
and the number of frames of other ethertypes, which are skipped. A missing,
truncated or corrupt capture, a telemetry frame too short for a record, or a
record of another telemetry version raises ``MetricsError`` naming the file.

An IPv6 packet's record holds the low 32 bits of its addresses in ``src`` and
``dst``: ``host_mask`` finds the records from or to a host of either family.

``read_telemetry_scapy(path)`` reads the same with Scapy's ``rdpcap`` and
``Record.decode`` per frame: the slow reference for the benchmark.
"""

from __future__ import annotations

import struct
from dataclasses import astuple, fields
from pathlib import Path

import dpkt
import numpy as np
import pandas as pd

from accessnet.addresses import low32
from refmodel.constants import TELEMETRY_ETHERTYPE, TELEMETRY_VERSION
from refmodel.telemetry import ETH_HEADER, SIZE, Record

from .metrics import MetricsError

IPVER_AT = 45  # the record's IP version byte (docs/telemetry.md): 6 for IPv6, else 0
# Record's fields, and ipver where Record does not carry it yet (the byte was padding before IPv6)
COLUMNS = [f.name for f in fields(Record)] + ([] if "ipver" in {f.name for f in fields(Record)} else ["ipver"])
# refmodel.telemetry.FORMAT = "!BBBBBBHIIQIIIIHHBxHQQ", field by field (network byte order).
DTYPE = np.dtype([
    ("version", "u1"), ("aqm", "u1"), ("decision", "u1"), ("reason", "u1"), ("cls", "u1"), ("tflags", "u1"),
    ("length", ">u2"), ("seq", ">u4"), ("rand", ">u4"), ("ts_ns", ">u8"), ("sojourn_ns", ">u4"),
    ("backlog_ns", ">u4"), ("src", ">u4"), ("dst", ">u4"), ("sport", ">u2"), ("dport", ">u2"), ("proto", "u1"),
    ("ipver", "u1"), ("link", ">u2"), ("s1", ">u8"), ("s2", ">u8"),
])
assert DTYPE.fields["ipver"][1] == IPVER_AT
assert DTYPE.itemsize == SIZE and set(COLUMNS) <= set(DTYPE.names or ())
_ETHERTYPE = struct.pack("!H", TELEMETRY_ETHERTYPE)
_MAGICS = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">", b"\xa1\xb2\x3c\x4d": ">"}
_DLT_EN10MB = 1


def check_complete(path: Path) -> None:
    """Classic pcap, Ethernet, and every record whole: dpkt would yield a cut last record without a word."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise MetricsError(f"{path}: truncated capture (no complete pcap header)")
        endian = _MAGICS.get(head[:4])
        if endian is None:
            raise MetricsError(f"{path}: not a classic pcap file (magic {head[:4].hex()})")
        linktype = struct.unpack(endian + "I", head[20:24])[0] & 0x0FFFFFFF
        if linktype != _DLT_EN10MB:
            raise MetricsError(f"{path}: link type {linktype}, expected Ethernet ({_DLT_EN10MB})")
        pos = 24
        while pos < size:
            f.seek(pos)
            rh = f.read(16)
            if len(rh) < 16:
                raise MetricsError(f"{path}: truncated capture (partial record header at byte {pos})")
            pos += 16 + struct.unpack(endian + "IIII", rh)[2]
        if pos != size:
            raise MetricsError(f"{path}: truncated capture (last record cut by {pos - size} bytes)")


def _frame_payload(path: Path, buf: bytes) -> bytes | None:
    """The 64-byte record of a telemetry frame, None for a frame of another ethertype."""
    if buf[12:14] != _ETHERTYPE:
        return None
    if len(buf) < ETH_HEADER + SIZE:
        raise MetricsError(f"{path}: telemetry frame of {len(buf)} bytes, shorter than a record")
    return buf[ETH_HEADER:ETH_HEADER + SIZE]


def _frame(path: Path, records: list) -> pd.DataFrame:
    return pd.DataFrame(records, columns=COLUMNS) if records else pd.DataFrame(
        {c: pd.Series(dtype="int64") for c in COLUMNS})


def read_telemetry(path: Path) -> tuple[pd.DataFrame, int]:
    """(records with the columns of Record, number of skipped non-telemetry frames); see the module doc."""
    path = Path(path)
    if not path.exists():
        raise MetricsError(f"{path}: missing")
    check_complete(path)
    chunks: list[bytes] = []
    skipped = 0
    try:
        with open(path, "rb") as f:
            for _ts, buf in dpkt.pcap.Reader(f):
                rec = _frame_payload(path, buf)
                if rec is None:
                    skipped += 1
                else:
                    chunks.append(rec)
    except (dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError, ValueError, struct.error) as e:
        if isinstance(e, MetricsError):
            raise
        raise MetricsError(f"{path}: truncated or corrupt capture ({e})") from None
    arr = np.frombuffer(b"".join(chunks), dtype=DTYPE)
    if arr.size and (arr["version"] != TELEMETRY_VERSION).any():
        bad = int(arr["version"][arr["version"] != TELEMETRY_VERSION][0])
        raise MetricsError(f"{path}: telemetry version {bad}, expected {TELEMETRY_VERSION}")
    df = pd.DataFrame({c: arr[c].astype(np.uint64 if c in ("s1", "s2") else np.int64) for c in COLUMNS})
    return df, skipped


def read_telemetry_scapy(path: Path) -> pd.DataFrame:
    """The same records read with Scapy's rdpcap and Record.decode (slow reference for the benchmark)."""
    from scapy.all import rdpcap  # scapy: slow to import, and only this reference needs it

    path = Path(path)
    if not path.exists():
        raise MetricsError(f"{path}: missing")
    check_complete(path)
    rows = []
    for pkt in rdpcap(str(path)):
        rec = _frame_payload(path, bytes(pkt))
        if rec is not None:
            try:
                r = Record.decode(rec)
            except ValueError as e:
                raise MetricsError(f"{path}: {e}") from None
            rows.append(astuple(r) + ((rec[IPVER_AT],) if len(COLUMNS) > len(astuple(r)) else ()))
    return _frame(path, rows)


def host_mask(records: pd.DataFrame, addr: str, field: str = "dst") -> pd.Series:
    """The records whose ``field`` (src or dst) is host ``addr``: an IPv4 address's records carry ipver 0 and the
    address whole, an IPv6 address's ipver 6 and its low 32 bits (``accessnet.addresses.low32``)."""
    six = ":" in addr
    return (records["ipver"] == (6 if six else 0)) & (records[field] == low32(addr))
