"""How a web server's responses end, read from its own capture: the evidence a switch has to retract an idle
connection's window before its next request (docs/iwa-results.md, "Restarts").

server.pcap is taken at the server and holds both directions there, so the window edge the server had when it
sent a segment is exact: ``ACK + (window << scale)`` of the client's ACKs captured before it, taken as Linux
takes a window (from an ACK of new data even when it shrinks: a switch's retraction). The switch sees the same
segments one server RTT apart and holds a later edge when the data arrives; rules for it can be judged here
against what the server really had, on real Linux senders, without a BMv2 run.

Per connection (``response_ends``), every *burst tail*: a new-data segment after which the server sent nothing
for ``gap_ns``. A tail is an *end* when the server sent nothing more before the client's next request (a segment
with payload), or nothing more at all: it had sent all it had, and the connection idles. For each tail:

* ``left``: the window the server had beyond the tail's end when it sent it (bytes, never negative);
* ``left_late``: the same against the edge the server had ``late_ns`` later: with the server RTT, the edge a
  switch beside the server's path holds when the tail reaches it (the ACKs that passed it meanwhile moved it);
* ``short``: the tail is shorter than the connection's MSS (its largest segment);
* for an end, ``leftover``: the window the server is left with once the client acknowledged everything (the
  edge after the ACK of the tail's end, less that end): what an idle restart may send at once;
* for an end, ``notice_ns``: how long before that ACK of everything the server had both sent the end and an MSS
  of window beyond it (the later of the tail and the first ACK that gave it that window). A switch can tell from
  the data missing that the server had nothing more only if its answer would have arrived by then, i.e.
  ``notice_ns`` of at least the server RTT; the ACK of everything is the last one that can retract the window
  before the next request.

``summarize`` counts ends, ends whose leftover is at least ``harm_segments`` MSS (a burst on the next request),
those of them a switch cannot notice in time (``notice_ns`` below the server RTT), and for the rule "a short
tail with at least one MSS of its window left ends a response" the ends it catches and the tails that were not
ends it takes for ends, judged against the server's edge and against the later one.

    python -m experiments.response_ends RUN_CASE_OR_REP_DIR... [--server-rtt-ms MS] [--min-left BYTES]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from .base import MetricsError
from .tcpcap import CONNECTION_KEY, TCP_ACK, TCP_SYN, connection_segments, read_tcp_headers, server_synacks

MS = 1_000_000
GAP_NS = 3 * MS  # a server sends a burst's segments back to back: this much silence ends the burst
HARM_SEGMENTS = 2  # a leftover window of this many MSS or more is a burst on the next request
WEB_PORT = 8080  # the lab's web server (accessnet.web)
U32 = 1 << 32


@dataclass(frozen=True)
class Tail:
    """The last new-data segment of a burst (module docstring)."""

    client_port: int
    ts_ns: int
    payload: int
    left: int
    short: bool
    end: bool
    leftover: int | None  # an end's window once all it sent was acknowledged (None: not an end, or never acked)
    notice_ns: int | None = None  # an end's: from sent with an MSS of window beyond it to the ACK of everything
    left_late: int = 0
    retracts: bool = False  # not an end, and its ACK of everything reaches the switch before more data does


def _offset(value: int, isn: int) -> int:
    """A sequence number as bytes after the server's ISN (responses are far below 2 GB)."""
    return (int(value) - isn) % U32


def connection_tails(seg: pd.DataFrame, gap_ns: int = GAP_NS, late_ns: int = 0) -> tuple[list[Tail], int]:
    """The burst tails of one connection's segments ``seg`` (``tcpcap.connection_segments``' rows of one
    connection, both directions, in capture order: ``down`` marks the server's, ``isn`` is the server's ISN) and
    the connection's MSS (its largest segment; 0 without data). The server's SYN-ACK starts the connection; the
    client's last SYN before it gives the scale, by which the client's windows are scaled when both SYNs carried
    the option (RFC 7323)."""
    down = seg["down"].to_numpy(dtype=bool)
    is_synack = down & ((seg["flags"] & (TCP_SYN | TCP_ACK)) == (TCP_SYN | TCP_ACK)).to_numpy()
    if not is_synack.any():
        return [], 0
    first = int(is_synack.argmax())
    synack, before = seg.iloc[first], seg.iloc[:first]
    syn = before[~down[:first] & ((before["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN).to_numpy()]
    isn = int(synack["isn"])
    scale = int(syn["wscale"].iloc[-1]) if not syn.empty and int(synack["wscale"]) >= 0 else 0
    seg, down = seg.iloc[first:], down[first:]
    data = seg[down & (seg["payload"] > 0).to_numpy()]
    if data.empty:
        return [], 0
    mss = int(data["payload"].max())
    edge, hi, una = None, 0, 0
    sent: list[tuple[int, int, int, int, int]] = []  # new data: (ts, payload, end, edge when sent, index in down_ts)
    down_ts: list[int] = []  # every data segment's time, in capture order (retransmissions too)
    acks: list[tuple[int, int, int]] = []  # the client's ACKs: (ts, ack offset, edge offset after it)
    requests: list[int] = []  # when the client's segments with payload (requests) were captured
    for ts, is_down, flags, sq, ak, payload, window in seg[["ts_ns", "down", "flags", "seq", "ack", "payload",
                                                           "window"]].itertuples(index=False):
        if not is_down:
            if flags & TCP_ACK and not flags & TCP_SYN:
                a = _offset(ak, isn)
                e = a + (int(window) << scale)
                # the server takes the window as Linux's tcp_may_update_window does: from an ACK of new data
                # even when it shrinks (a switch's retraction), from one of nothing new only when it opens
                if edge is None or a > una:
                    edge, una = e, a
                elif a == una:
                    edge = max(edge, e)
                acks.append((int(ts), a, edge))
            if payload > 0:
                requests.append(int(ts))
        elif payload > 0:
            end = _offset(sq, isn) + int(payload)
            if end > hi:  # new data (a retransmission ends at or before what was sent)
                hi = end
                sent.append((int(ts), int(payload), end, edge if edge is not None else end, len(down_ts)))
            down_ts.append(int(ts))
    tails = []
    asked = np.array(requests, dtype=np.int64)
    ack_ts = np.array([ta for ta, _, _ in acks], dtype=np.int64)
    ack_hi = np.maximum.accumulate(np.array([a for _, a, _ in acks], dtype=np.int64)) if acks else ack_ts
    edges = np.array([ea for _, _, ea in acks], dtype=np.int64)  # the server's edge after each ACK
    widest = np.maximum.accumulate(edges) if acks else edges  # the farthest it had been given so far
    for ts, payload, end, e, i in sent:
        nxt = down_ts[i + 1] if i + 1 < len(down_ts) else None
        if nxt is not None and nxt - ts < gap_ns:
            continue
        r = int(np.searchsorted(asked, ts, side="right"))  # the first request after the tail
        is_end = nxt is None or (r < len(asked) and asked[r] < nxt)
        # the ACK of everything: the first after the tail that acknowledges its end
        k = max(int(np.searchsorted(ack_ts, ts, side="right")), int(np.searchsorted(ack_hi, end)))
        fin = (int(ack_ts[k]), int(edges[k])) if k < len(acks) else None
        leftover = notice = None
        if is_end and fin is not None:
            leftover = max(fin[1] - end, 0)
            m = int(np.searchsorted(widest, end + mss))  # the first ACK giving an MSS beyond the end
            notice = fin[0] - max(int(ack_ts[m]) if m < len(acks) else fin[0], ts)
        # not an end, but its ACK of everything reaches a switch one server RTT (late_ns) from the server before
        # the server's next data does: a rule that takes it for an end retracts a server that had more
        retracts = not is_end and fin is not None and nxt is not None and fin[0] < nxt + late_ns
        j = int(np.searchsorted(ack_ts, ts + late_ns, side="right"))  # the ACKs captured by then
        late = int(edges[j - 1]) if j and late_ns else e
        tails.append(Tail(0, ts, payload, max(e - end, 0), payload < mss, is_end, leftover, notice,
                          max(late - end, 0), retracts))
    return tails, mss


def response_ends(pcap: Path, server_port: int = WEB_PORT, gap_ns: int = GAP_NS,
                  late_ns: int = 0) -> tuple[list[Tail], int]:
    """Every burst tail of every connection of the server at ``server_port`` in ``pcap`` (a connection:
    ``tcpcap.connection_segments``', a 4-tuple and the server's ISN, so a reused client port is a new one;
    ``connection_tails``), and the largest MSS among them."""
    pk, _ = read_tcp_headers(pcap)
    synacks = server_synacks(pk, server_port)
    if synacks.empty:
        return [], 0
    tails: list[Tail] = []
    mss = 0
    for _, conn in connection_segments(pk, synacks).groupby(CONNECTION_KEY, sort=False):
        got, m = connection_tails(conn, gap_ns, late_ns)
        mss = max(mss, m)
        tails += [replace(t, client_port=int(conn["c_port"].iloc[0])) for t in got]
    return tails, mss


def summarize(tails: list[Tail], mss: int, server_rtt_ns: int, harm_segments: int = HARM_SEGMENTS,
              min_left: int | None = None) -> dict:
    """Counts over ``tails`` (module docstring): ``tails``, ``ends``, ``harmful`` (ends left ``harm_segments``
    MSS or more), ``unnoticed`` (harmful ends whose ``notice_ns`` is below ``server_rtt_ns``), ``caught`` and
    ``caught_harmful`` (ends the short-tail rule catches), ``false`` (tails the rule takes for ends that were
    not, where that costs: their ACK of everything reaches the switch before the server's next data), the
    leftover segments of the harmful ends it misses (``missed_segments``), and the rule against the later edge
    (``left_late``): ``caught_late``, ``false_late``. ``min_left`` (bytes) replaces the rule's one MSS."""
    need = mss if min_left is None else max(min_left, 1)  # the window a short tail must leave: an MSS by default
    rule = [t.short and t.left >= need for t in tails]
    late = [t.short and t.left_late >= need for t in tails]
    harmful = [t.end and t.leftover is not None and t.leftover >= harm_segments * mss for t in tails]
    return {
        "tails": len(tails),
        "ends": sum(t.end for t in tails),
        "harmful": sum(harmful),
        "unnoticed": sum(h and t.notice_ns is not None and t.notice_ns < server_rtt_ns
                         for h, t in zip(harmful, tails)),
        "caught": sum(r and t.end for r, t in zip(rule, tails)),
        "caught_harmful": sum(r and h for r, h in zip(rule, harmful)),
        "false": sum(r and t.retracts for r, t in zip(rule, tails)),
        "missed_segments": sum(t.leftover // mss for r, h, t in zip(rule, harmful, tails) if h and not r),
        "caught_late": sum(r and t.end for r, t in zip(late, tails)),
        "false_late": sum(r and t.retracts for r, t in zip(late, tails)),
    }


def server_rtt_ms(rep: Path, given: float | None) -> float:
    """The server RTT at the switch: ``given``, else twice the replication's profile's server delay (0 if its
    meta.json does not say)."""
    if given is not None:
        return given
    try:
        return 2 * float(json.loads((rep / "meta.json").read_text())["profile"]["server_delay_ms"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _captures(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        out += ([p / "server.pcap"] if (p / "server.pcap").exists()
                else sorted(p.glob("rep*/server.pcap")) or sorted(p.glob("*/rep*/server.pcap")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", type=Path, help="replication or run directories")
    ap.add_argument("--port", type=int, default=WEB_PORT, help="the web server's port")
    ap.add_argument("--server-rtt-ms", type=float, default=None,
                    help="the server RTT at the switch (default: twice meta.json's profile.server_delay_ms)")
    ap.add_argument("--min-left", type=int, default=None,
                    help="bytes of window a short tail must leave to count as an end (default: one MSS)")
    a = ap.parse_args(argv)
    caps = _captures(a.paths)
    if not caps:
        print("no server.pcap under " + ", ".join(map(str, a.paths)), file=sys.stderr)
        return 2
    cols = ["tails", "ends", "harmful", "unnoticed", "caught", "caught_harmful", "false", "missed_segments",
            "caught_late", "false_late"]
    print("| capture | MSS | " + " | ".join(cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    total = dict.fromkeys(cols, 0)
    read = 0
    for cap in caps:
        rtt_ns = round(server_rtt_ms(cap.parent, a.server_rtt_ms) * MS)
        try:
            tails, mss = response_ends(cap, a.port, late_ns=rtt_ns)
        except MetricsError as e:  # a broken capture is named and skipped; the others still count
            print(f"{cap}: {e}", file=sys.stderr)
            continue
        s = summarize(tails, max(mss, 1), rtt_ns, min_left=a.min_left)
        read += 1
        total = {c: total[c] + s[c] for c in cols}
        print(f"| {cap.parent} | {mss} | " + " | ".join(str(s[c]) for c in cols) + " |", flush=True)
    if read > 1:
        print(f"| all {read} | | " + " | ".join(str(total[c]) for c in cols) + " |")
    return 0 if read else 1


if __name__ == "__main__":
    sys.exit(main())
