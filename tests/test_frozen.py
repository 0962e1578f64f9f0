"""The frozen-flow metric (experiments.metrics.frozen_flows) on server captures built with Scapy, whose
expected numbers are worked out by hand from how each capture is built.

The link: 1 Mbit/s = 125,000 B/s. Every flow streams 1,000 B segments, one every 20 ms (50 kB/s), each
acknowledged by the client 100 ms after it was sent, unless said otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.metrics import frozen_flows, read_tcp_headers, web_connections
from frames import tcp
from servercapture import MS, Flow, at, write_rep


def metric(rep: Path) -> dict:
    return frozen_flows(rep, json.loads((rep / "meta.json").read_text()))


def test_a_flow_stalled_for_3_s_while_another_gets_the_link_is_frozen(tmp_path):
    """A streams 1.00-3.98 s (last ACK 4.08 s); its segment of 4.00 s is acknowledged only at 7.10 s (lost, sent
    again by a timeout: no delivery for 3.02 s), then it streams again from 7.12 s (ACKs from 7.22 s). B streams all
    along and gets twice the rate during the stall (4-7 s). Both have data from 1.00 s to 9.08 s (A's pause at
    7.10-7.12 s, everything acknowledged but no new request, is TCP's, not the end of A's response), so with the
    audio the fair share is 125,000 / 3 B/s, and half of it over a 2 s window is 41,667 B: 42 ACKs of 1,000 B.
    A's window (t - 2 s, t] holds at most 41 ACKs from t = 5.26 s (ACKs 3.28-4.08 s left) until t = 8.01 s (7.10 s
    and 7.22-8.00 s: 41; the 42nd comes at 8.02 s): 276 points of 10 ms, 2.76 s, longer than 2 s. B is never
    below but for its first round trip."""
    a, b = Flow(40001, 2**32 - 30_000, 0.99), Flow(40002, 777, 0.99)  # A's sequence numbers wrap mid-stream
    a.stream(1.00, 3.98)
    a.send(4.00, 7.10)
    a.stream(7.12, 8.98)
    b.stream(1.00, 3.98)
    b.stream(4.00, 6.99, gap_ns=10 * MS)
    b.stream(7.00, 8.98)
    rep = write_rep(tmp_path / "rep0", [a, b])
    m = metric(rep)
    assert (m["flows"], m["frozen_flows"], m["not_measured"]) == (2, 1, None)
    (f,) = m["frozen"]
    assert f["client_port"] == 40001
    assert f["from_s"] == pytest.approx(5.26, abs=0.002) and f["to_s"] == pytest.approx(8.01, abs=0.002)
    assert f["below_s"] == pytest.approx(2.76, abs=0.002) and m["longest_below_s"] == f["below_s"]
    pk, last = read_tcp_headers(rep / "server.pcap")
    periods = {c.client_port: c.periods for c in web_connections(pk, last)}
    assert periods == {40001: [(at(1.00), at(9.08))], 40002: [(at(1.00), at(9.08))]}


def test_a_stall_under_2_s_is_not_frozen(tmp_path):
    """The same with A's lost segment acknowledged at 5.60 s (no delivery for 1.52 s), A streaming again from 5.62 s
    (ACKs from 5.72 s): below from 5.26 s; until 6.08 s the window keeps 20 ACKs (pre-stall ones leave as new ones
    come), then 5.60 s and 5.72 s + 0.02 k: 41 up to 6.50 s, the 42nd at 6.52 s. Below 5.26-6.51 s: 1.26 s, not
    frozen."""
    a, b = Flow(40001, 1000, 0.99), Flow(40002, 777, 0.99)
    a.stream(1.00, 3.98)
    a.send(4.00, 5.60)
    a.stream(5.62, 8.98)
    b.stream(1.00, 8.98)
    m = metric(write_rep(tmp_path / "rep0", [a, b]))
    assert m["frozen_flows"] == 0 and m["frozen"] == []
    assert m["longest_below_s"] == pytest.approx(1.26, abs=0.002)


def test_finished_and_idle_between_responses_are_not_frozen(tmp_path):
    """C: a kept-alive connection, a response 1.00-1.98 s (last ACK 2.08 s), idle 4 s, the client's next request at
    5.92 s, the response 6.00-6.98 s (last ACK 7.08 s). D: one response 1.00-2.98 s, the server's FIN at 3.10 s
    (acknowledged at 3.20 s), then nothing until the capture ends at 10 s. Neither has data while idle, and neither
    is below half its share but at the start of a response: the longest, C's second (alone on the link: half its
    share is 312.5 B per 10 ms from 6.00 s), has 6 ACKs (6,000 B) at 6.21 s against 6,562.5 B owed and 7 at 6.22
    s against 6,875 B: below 6.01-6.21 s, 0.21 s."""
    c, d = Flow(40003, 5, 0.99), Flow(40004, 2**31, 0.99)
    c.stream(1.00, 1.98)
    c.request(5.92)
    c.stream(6.00, 6.98)
    d.stream(1.00, 2.98)
    d.fin(3.10, 3.20)
    rep = write_rep(tmp_path / "rep0", [c, d])
    pk, last = read_tcp_headers(rep / "server.pcap")
    periods = {x.client_port: x.periods for x in web_connections(pk, last)}
    assert periods == {40003: [(at(1.00), at(2.08)), (at(6.00), at(7.08))], 40004: [(at(1.00), at(3.08))]}
    m = metric(rep)
    assert (m["flows"], m["frozen_flows"], m["frozen"]) == (2, 0, [])
    assert m["longest_below_s"] == pytest.approx(0.21, abs=0.002)


def test_a_flow_that_never_recovers_is_frozen_to_the_capture_end(tmp_path):
    """E streams 1.00-2.98 s, and its segment of 3.00 s is never acknowledged: it has data until the capture's
    last frame (10 s) and is below half its share (62,500 B/s with the audio: 62,500 B in 2 s, 62.5 ACKs) from
    t = 3.84 s, when the window (1.84, 3.84] holds the last 62 ACKs (1.86-3.08 s), to the end."""
    e = Flow(40005, 99, 0.99)
    e.stream(1.00, 2.98)
    e.send(3.00, 99.0)  # its ACK comes after the capture's end: dropped below
    e.frames = [f for f in e.frames if f[0] < at(10.0)]
    m = metric(write_rep(tmp_path / "rep0", [e]))
    (f,) = m["frozen"]
    assert f["from_s"] == pytest.approx(3.84, abs=0.002) and f["to_s"] == pytest.approx(10.0, abs=0.002)


def test_not_measured_without_the_capture_or_the_rate(tmp_path):
    rep = write_rep(tmp_path / "rep0", [])
    assert metric(rep)["frozen_flows"] == 0  # no web connection: nothing frozen
    (rep / "server.pcap").unlink()
    m = metric(rep)
    assert m["frozen_flows"] is None and m["not_measured"].endswith("server.pcap: missing")
    a = Flow(40001, 1, 0.99)
    a.stream(1.0, 2.0)
    rep = write_rep(tmp_path / "rep1", [a])
    m = frozen_flows(rep, {"status": "ok"})
    assert m["frozen_flows"] is None and "no profile rate_bps" in m["not_measured"]


def test_data_periods_ignore_the_handshake_and_the_fin(tmp_path):
    """A connection with no data (handshake and FIN only) has no period."""
    f = Flow(40006, 10, 1.0)
    f.fin(1.5, 1.6)
    pk, last = read_tcp_headers(write_rep(tmp_path / "rep0", [f]) / "server.pcap")
    assert [c.periods for c in web_connections(pk, last)] == [[]]


def test_a_request_with_the_last_ack_starts_a_new_period(tmp_path):
    """Keep-alive with no think time: the client's next request carries its ACK of the whole previous response
    (1.98 s segment, ACK and request at 2.08 s), the next response starts at 2.10 s: two periods. The same pause
    with no request between (TCP's own) is one period (``data_periods``)."""
    f = Flow(40007, 10, 0.99)
    f.stream(1.00, 1.98)
    f.frames[-1] = (f.frames[-1][0], tcp(seq=8, flags="A", ack=f.isn + 1 + f.off, payload=8, **f.up()))
    f.stream(2.10, 2.50)
    g = Flow(40008, 10, 0.99)
    g.stream(1.00, 1.98)
    g.stream(2.10, 2.50)
    pk, last = read_tcp_headers(write_rep(tmp_path / "rep0", [f, g]) / "server.pcap")
    periods = {c.client_port: c.periods for c in web_connections(pk, last)}
    assert periods == {40007: [(at(1.00), at(2.08)), (at(2.10), at(2.60))], 40008: [(at(1.00), at(2.60))]}
