"""Read the switch's telemetry capture (telemetry.pcap) fast, with dpkt.

``read_telemetry(path)`` returns a pandas DataFrame with one row per record
(the columns of ``refmodel.telemetry.Record``). Frames of other ethertypes are
skipped and counted. A truncated or corrupt capture raises ``MetricsError``
naming the file. ``read_telemetry_scapy`` is the slow reference (Scapy's
rdpcap), kept for the benchmark.
"""

from __future__ import annotations

import struct
from dataclasses import fields
from pathlib import Path

import dpkt
import pandas as pd

from refmodel.constants import TELEMETRY_ETHERTYPE, TELEMETRY_VERSION
from refmodel.telemetry import FORMAT, SIZE, Record

from .metrics import MetricsError

COLUMNS = [f.name for f in fields(Record)]
_REC = struct.Struct(FORMAT)
_ORDER = ["version", "aqm", "decision", "reason", "cls", "tflags", "length", "seq", "rand", "ts_ns", "sojourn_ns",
          "backlog_ns", "src", "dst", "sport", "dport", "proto", "s1", "s2"]


def check_complete(path: Path) -> None:
    """dpkt yields a partial last record without a word: walk the record headers to catch it."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            raise MetricsError(f"{path}: truncated capture (no pcap header)")
        endian = "<" if head[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        pos = 24
        while pos < size:
            f.seek(pos)
            rh = f.read(16)
            if len(rh) < 16:
                raise MetricsError(f"{path}: truncated capture (partial record header at byte {pos})")
            caplen = struct.unpack(endian + "IIII", rh)[2]
            pos += 16 + caplen
        if pos != size:
            raise MetricsError(f"{path}: truncated capture (last record cut by {pos - size} bytes)")


def read_telemetry(path: Path) -> tuple[pd.DataFrame, int]:
    """(records, number of skipped non-telemetry frames)."""
    path = Path(path)
    rows = []
    skipped = 0
    try:
        check_complete(path)
        with open(path, "rb") as f:
            for _ts, buf in dpkt.pcap.Reader(f):
                if len(buf) < 14 + SIZE or int.from_bytes(buf[12:14], "big") != TELEMETRY_ETHERTYPE:
                    skipped += 1
                    continue
                rows.append(_REC.unpack_from(buf, 14))
    except FileNotFoundError:
        raise MetricsError(f"{path}: missing") from None
    except (dpkt.dpkt.NeedData, dpkt.dpkt.UnpackError, ValueError, struct.error) as e:
        raise MetricsError(f"{path}: truncated or corrupt capture ({e})") from None
    df = pd.DataFrame(rows, columns=_ORDER)
    if len(df) and (df["version"] != TELEMETRY_VERSION).any():
        raise MetricsError(f"{path}: telemetry version other than {TELEMETRY_VERSION}")
    return df, skipped


def read_telemetry_scapy(path: Path) -> pd.DataFrame:
    from scapy.all import rdpcap
    rows = []
    for pkt in rdpcap(str(path)):
        buf = bytes(pkt)
        if len(buf) >= 14 + SIZE and int.from_bytes(buf[12:14], "big") == TELEMETRY_ETHERTYPE:
            rows.append(_REC.unpack_from(buf, 14))
    return pd.DataFrame(rows, columns=_ORDER)
