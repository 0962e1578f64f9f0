"""Retransmission timeouts seen in the captures, the spurious ones told apart (issue 13: IETF79's "RTO counts").

The server's own count (flows.csv ``rtos``: entries into TCP_CA_Loss, sampled by ``accessnet.web``) says how
many timeouts a flow had, not whether the segment it resent had been lost. With a deep queue and a 1 s initial
RTO, the timer can fire while the first copy still waits in the bottleneck: the retransmission is spurious,
and IETF79 asks how often that happens. The two captures tell (``server.pcap``: every segment the server sent
and every segment it received; ``client.pcap``: every segment that reached the client), on each TCP connection
(a 4-tuple and the server's initial sequence number, so a reused client port is a new connection):

* A **timeout** is a retransmission the timer sent: a copy of the segment at the lowest unacknowledged
  sequence number (the SYN-ACK, or data at the highest ACK the server had captured) sent again at least
  ``RTO_MIN_NS`` (200 ms, Linux's minimum RTO) after the last segment the server captured from the client on
  that connection. A fast retransmit follows an incoming (duplicate) ACK within microseconds and is not
  counted; the retransmissions that follow a timeout are clocked by ACKs and are not counted either, so each
  timeout counts once, by its first retransmission, and every expiry of a backed-off timer counts (the server's
  own count, entries into TCP_CA_Loss, counts a loss episode's repeated expiries once, and no handshake
  timeout: in a burst6+6 on EDGE with a 50-packet FIFO and a 1 s initial RTO, 9 against 43 here, 29 of them
  SYNs and SYN-ACKs). A tail loss probe that resends a flow's only outstanding
  segment looks the same and is counted (the server's own count leaves it out). The client's SYN, sent again
  when no SYN-ACK came within its initial RTO, is a timeout of the client.
* **Spurious**: a copy sent before the retransmission reached the receiver. Linux numbers the IPv4 packets of a
  connected socket (the IP ID), so where the copies' IDs differ the receiver's capture says exactly which
  arrived. IPv6 has no ID; there a copy is told by its TCP timestamp (TSval, in milliseconds: a timer's
  retransmission leaves at least 200 ms after the copy before it), where the segments carry the option (Linux's
  default). Where the copies' marks are equal (a SYN-ACK: ID 0; IPv6 without timestamps) the order decides,
  since the path keeps it (one FIFO queue
  per direction; an AQM drops, it never reorders): with m copies sent, the retransmission the j-th, and n
  captured at the receiver, at least n - (m - j + 1) copies sent before it arrived; and a copy captured before
  the retransmission was sent was sent before it. Either makes it spurious; no copy arriving makes it
  **needed**; anything else is **unknown** (one copy arrived, and it may be either).

``timeouts(rep)`` counts them in a replication; ``summarize_rep`` puts the counts under ``tcp["timeouts"]``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .base import MetricsError
from .tcpcap import CONNECTION_KEY, TCP_ACK, TCP_SYN, read_tcp_headers, server_synacks
from .tcpcap import connection_segments as _epochs

MS = 1_000_000
RTO_MIN_NS = 200 * MS
SEQ = 2**32
FIELDS = ("timeouts", "handshake", "spurious", "needed", "unknown")


def _fate(sent_ids: list[int], sent_ts: list[int], j: int, got_ids: list[int], got_ts: list[int]) -> str:
    """'spurious', 'needed' or 'unknown' for copy j (0-based, j >= 1) of a segment sent at sent_ts with marks
    (``copy_marks``) sent_ids, of which the receiver captured copies with got_ids at got_ts (module docstring)."""
    if not got_ids:
        return "needed"
    if len(set(sent_ids)) == len(sent_ids):
        return "spurious" if set(sent_ids[:j]) & set(got_ids) else "needed"
    m, n = len(sent_ids), len(got_ids)
    if n - (m - j) >= 1 or min(got_ts) < sent_ts[j]:
        return "spurious"
    return "unknown"


def copy_marks(pk: pd.DataFrame) -> pd.Series:
    """What tells the copies of a segment apart (the module's docstring): the IP ID over IPv4, the TCP
    timestamp over IPv6 (``read_tcp_headers``'s ipver, ip_id, tsval)."""
    return pk["ip_id"].where(pk["ipver"] == 4, pk["tsval"])


def _count(out: dict, sender: pd.DataFrame, receiver: pd.DataFrame, rel: int, j: int) -> None:
    """Judge copy j of the segment at relative sequence number rel (sender's copies in time order)."""
    same = sender[sender["rel"] == rel]
    got = receiver[receiver["rel"] == rel]
    out[_fate(same["mark"].tolist(), same["ts_ns"].tolist(), j, got["mark"].tolist(), got["ts_ns"].tolist())] += 1
    out["timeouts"] += 1


def count_connection(sv: pd.DataFrame, cl: pd.DataFrame) -> dict:
    """The timeouts of one connection from its segments in server.pcap (sv) and client.pcap (cl), both with
    columns ts_ns, down (server to client), flags, seq, ack, mark (``copy_marks``), payload and isn, in time
    order."""
    out = dict.fromkeys(FIELDS, 0)

    def rel(v: pd.Series, isn: pd.Series) -> pd.Series:
        return (v - isn) % SEQ

    # the client's SYN: every copy after the first is its timer's
    syn_c = cl[~cl["down"] & ((cl["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN)].assign(rel=0)
    syn_s = sv[~sv["down"] & ((sv["flags"] & (TCP_SYN | TCP_ACK)) == TCP_SYN)].assign(rel=0)
    for j in range(1, len(syn_c)):
        _count(out, syn_c, syn_s, 0, j)
        out["handshake"] += 1
    # the server's segments: the SYN-ACK at relative 0, data from 1
    first = (sv["down"] & (((sv["flags"] & TCP_SYN) != 0) | (sv["payload"] > 0)))
    sv_rel = rel(sv["seq"], sv["isn"])
    data = sv[first].assign(rel=sv_rel[first])
    arrived = cl[cl["down"] & (((cl["flags"] & TCP_SYN) != 0) | (cl["payload"] > 0))]
    arrived = arrived.assign(rel=lambda d: rel(d["seq"], d["isn"]))
    seen: dict[int, int] = {}
    snd_una, last_rx = 0, None
    up = ~sv["down"]
    for ts, is_up, flags, ack, isn, r in zip(sv["ts_ns"], up, sv["flags"], sv["ack"], sv["isn"],
                                             np.where(first, sv_rel, -1)):
        if is_up:
            last_rx = ts
            if flags & TCP_ACK:
                snd_una = max(snd_una, (ack - isn) % SEQ)
            continue
        if r < 0:
            continue
        k = seen.get(r, 0)
        seen[r] = k + 1
        if k and r == snd_una and last_rx is not None and ts - last_rx >= RTO_MIN_NS:
            _count(out, data, arrived, r, k)
            out["handshake"] += int(r == 0)
    return out


def timeouts(rep: Path) -> dict:
    """The replication's timeouts, summed over its TCP connections: {"timeouts", "handshake", "spurious",
    "needed", "unknown", "not_measured"}; without both captures the counts are None and not_measured says
    why (naming the file)."""
    rep = Path(rep)
    try:
        sv, _ = read_tcp_headers(rep / "server.pcap")
        cl, _ = read_tcp_headers(rep / "client.pcap")
    except MetricsError as e:
        return {**dict.fromkeys(FIELDS), "not_measured": str(e)}
    sv, cl = sv.assign(mark=copy_marks(sv)), cl.assign(mark=copy_marks(cl))
    synacks = server_synacks(sv)
    total = dict.fromkeys(FIELDS, 0)
    if synacks.empty:
        return {**total, "not_measured": None}
    sv_c = dict(tuple(_epochs(sv, synacks).groupby(CONNECTION_KEY, sort=False)))
    cl_c = dict(tuple(_epochs(cl, synacks).groupby(CONNECTION_KEY, sort=False)))
    empty = next(iter(sv_c.values())).iloc[0:0]
    for k, s in sv_c.items():
        for f, v in count_connection(s, cl_c.get(k, empty)).items():
            total[f] += v
    return {**total, "not_measured": None}
