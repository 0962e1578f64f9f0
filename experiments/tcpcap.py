"""The TCP headers of a replication's captures (client.pcap, server.pcap: docs/data-formats.md) and the
server's connections in them: what the bulk throughput, the frozen flows (``experiments.metrics``) and the
timeouts (``experiments.timeouts``) are measured from."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pandas as pd

from .base import NS, MetricsError
from .iplayer import PROTO_TCP, ip_layer

TCP_SYN, TCP_ACK = 0x02, 0x10
TCP_HEADER_COLUMNS = ["ts_ns", "ipver", "src", "dst", "sport", "dport", "seq", "ack", "flags", "ip_id", "tsval",
                      "payload", "window", "wscale"]
TCP_OPT_EOL, TCP_OPT_NOP, TCP_OPT_WSCALE, TCP_OPT_TIMESTAMP = 0, 1, 3, 8
_PCAP_MAGICS = {b"\xd4\xc3\xb2\xa1": ("<", 1000), b"\xa1\xb2\xc3\xd4": (">", 1000),  # us timestamps
                b"\x4d\x3c\xb2\xa1": ("<", 1), b"\xa1\xb2\x3c\x4d": (">", 1)}  # ns timestamps
_DLT_EN10MB = 1


def tcp_tsval(buf: bytes, at: int, end: int) -> int:
    """The TSval of the timestamp option (RFC 7323) among the TCP options in ``buf[at:end]``, 0 without one (or
    where the capture cut it): which transmission a copy of a segment is, where the IP header cannot say."""
    return tcp_options(buf, at, end)[0]


def tcp_options(buf: bytes, at: int, end: int) -> tuple[int, int]:
    """The TSval (``tcp_tsval``) and the window-scale option's shift (RFC 7323; -1 without one, or where the
    capture cut it) among the TCP options in ``buf[at:end]``."""
    tsval, wscale = 0, -1
    while at + 1 < end:
        kind = buf[at]
        if kind == TCP_OPT_EOL:
            break
        if kind == TCP_OPT_NOP:
            at += 1
            continue
        size = buf[at + 1]
        if size < 2:
            break
        if kind == TCP_OPT_TIMESTAMP and size == 10 and at + 6 <= end:
            tsval = int.from_bytes(buf[at + 2:at + 6], "big")
        elif kind == TCP_OPT_WSCALE and size == 3 and at + 3 <= end:
            wscale = buf[at + 2]
        at += size
    return tsval, wscale


def read_tcp_headers(path: Path) -> tuple[pd.DataFrame, int | None]:
    """The TCP headers, over IPv4 or IPv6, of a classic pcap with Ethernet frames (tcpdump's client.pcap,
    server.pcap): one row per segment with ``TCP_HEADER_COLUMNS`` (ts_ns exact from the record's us or ns;
    ipver 4 or 6; addresses as integers, 32 or 128 bits (int64 columns for a capture of IPv4 alone, Python
    integers where IPv6 is in it); seq/ack as unsigned 32-bit values; flags the TCP flag byte; ip_id the IPv4
    identification, 0 over IPv6, which has none; tsval the timestamp option's TSval, 0 without it (``tcp_tsval``);
    payload the TCP payload's length from the IP header's lengths, so a capture's snap length does not matter;
    window the window field as sent, unscaled; wscale the window-scale option's shift, -1 without one, which
    only SYNs carry: ``tcp_options``), and the time of the capture's last frame of any
    kind (None without frames). The IP layer is ``iplayer.ip_layer``'s. Non-first IP fragments and frames too
    short for the TCP header are skipped; a capture cut inside its last record (tcpdump killed) is read up to
    the cut. A missing file, a file without a pcap header or of another link type raises MetricsError naming
    it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise MetricsError(f"{path}: missing") from None
    except OSError as e:
        raise MetricsError(f"{path}: unreadable: {e.strerror or e}") from None
    if len(data) < 24:
        raise MetricsError(f"{path}: truncated capture (no complete pcap header)")
    if data[:4] not in _PCAP_MAGICS:
        raise MetricsError(f"{path}: not a classic pcap file (magic {data[:4].hex()})")
    endian, frac_ns = _PCAP_MAGICS[data[:4]]
    linktype = struct.unpack_from(endian + "I", data, 20)[0] & 0x0FFFFFFF
    if linktype != _DLT_EN10MB:
        raise MetricsError(f"{path}: link type {linktype}, expected Ethernet ({_DLT_EN10MB})")
    rec = struct.Struct(endian + "IIII")
    tcp = struct.Struct("!HHIIBB")
    rows: list[tuple] = []
    last = None
    pos, n = 24, len(data)
    while pos + 16 <= n:
        sec, frac, incl, _orig = rec.unpack_from(data, pos)
        f, pos = pos + 16, pos + 16 + incl
        if pos > n:
            break
        last = sec * NS + frac * frac_ns
        ip = ip_layer(data, f, pos)
        if ip is None or ip.proto != PROTO_TCP or ip.later_fragment or ip.l4 + 14 > pos:
            continue
        sport, dport, seq, ack, doff, flags = tcp.unpack_from(data, ip.l4)
        hdr = (doff >> 4) * 4
        tsval, wscale = tcp_options(data, ip.l4 + 20, min(ip.l4 + hdr, pos)) if hdr > 20 else (0, -1)
        window = int.from_bytes(data[ip.l4 + 14:ip.l4 + 16], "big") if ip.l4 + 16 <= pos else 0
        rows.append((last, ip.version, ip.src, ip.dst, sport, dport, seq, ack, flags, ip.ip_id, tsval,
                     max(ip.l4_len - hdr, 0), window, wscale))
    df = pd.DataFrame(rows, columns=TCP_HEADER_COLUMNS) if rows else pd.DataFrame(
        {c: pd.Series(dtype="int64") for c in TCP_HEADER_COLUMNS})
    wide = (df["ipver"] == 6).any()  # 128-bit addresses do not fit int64: exact Python integers instead
    return df.astype({c: object if wide and c in ("src", "dst") else "int64" for c in TCP_HEADER_COLUMNS}), last


CONNECTION_KEY = ["s_ip", "s_port", "c_ip", "c_port", "isn"]  # connection_segments' columns naming a connection


def server_synacks(pk: pd.DataFrame, port: int | None = None) -> pd.DataFrame:
    """pk's SYN-ACKs (of the server at ``port`` only, if given): what ``connection_segments`` starts
    connections from."""
    synack = (pk["flags"] & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK)
    return pk[synack if port is None else synack & (pk["sport"] == port)]


def connection_segments(pk: pd.DataFrame, synacks: pd.DataFrame) -> pd.DataFrame:
    """pk's segments of the server's connections (a TCP connection: a 4-tuple and the server's initial sequence
    number, so a reused client port is a new connection), in capture order, each with its connection's key
    (client address and port, server address and port), ``down`` (sent by the server) and the server's ISN in
    force when it was captured (the latest SYN-ACK of the 4-tuple in ``synacks`` at or before it; for the
    client's SYN, the one at or after it)."""
    down = pk.rename(columns={"src": "s_ip", "sport": "s_port", "dst": "c_ip", "dport": "c_port"})
    up = pk.rename(columns={"dst": "s_ip", "dport": "s_port", "src": "c_ip", "sport": "c_port"})
    down["down"], up["down"] = True, False
    both = pd.concat([down, up])  # pk's index: the capture's order
    key = CONNECTION_KEY[:-1]
    isn = synacks.rename(columns={"src": "s_ip", "sport": "s_port", "dst": "c_ip", "dport": "c_port",
                                  "seq": "isn", "ts_ns": "isn_ts"})[key + ["isn", "isn_ts"]]
    isn = isn.drop_duplicates(key + ["isn"]).sort_values("isn_ts")
    both = both[both.set_index(key).index.isin(isn.set_index(key).index)]
    # by time, and segments captured at the same time in the capture's order
    both = both.sort_index(kind="stable").sort_values("ts_ns", kind="stable").reset_index(drop=True)
    back = pd.merge_asof(both, isn, left_on="ts_ns", right_on="isn_ts", by=key, direction="backward")
    ahead = pd.merge_asof(both, isn, left_on="ts_ns", right_on="isn_ts", by=key, direction="forward")
    # a client's SYN comes before its connection's SYN-ACK (the first, or the one answering it when sent again);
    # anything else after it
    syn = ((back["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN).to_numpy()
    back["isn"] = np.where(syn, ahead["isn"].fillna(back["isn"]), back["isn"].fillna(ahead["isn"]))
    back = back.dropna(subset=["isn"])
    back["isn"] = back["isn"].astype("int64")
    return back.drop(columns=["isn_ts"])
