"""Timeouts told apart in the captures (experiments.timeouts): needed, spurious and unknown retransmissions of a
download, from a server.pcap and a client.pcap written here segment by segment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bulkcapture import write_pcap_us
from frames import CLIENT, SERVER, tcp

from accessnet.addresses import V6
from experiments.timeouts import timeouts

MS = 1_000_000
T0 = 1_700_000_001_000_000_000
ISN, CSEQ, MSS = 2**32 - 3000, 500, 1448  # the server's sequence numbers wrap inside the download
PORT, WEB = 40000, 8080


def up(ack_rel: int, ip_id: int, flags: str = "A", port: int = PORT, isn: int = ISN, seq: int = CSEQ + 1) -> bytes:
    return tcp(seq=seq, payload=0, flags=flags, src=CLIENT, dst=SERVER, sport=port, dport=WEB,
               ack=(isn + ack_rel) if flags != "S" else 0, **marks(ip_id))


def down(seq_rel: int, ip_id: int, payload: int = MSS, flags: str = "A", port: int = PORT, isn: int = ISN) -> bytes:
    return tcp(seq=isn + seq_rel, payload=payload, flags=flags, src=SERVER, dst=CLIENT, sport=WEB, dport=port,
               ack=CSEQ + 1, **marks(ip_id))


TIMESTAMPS = False  # the segments carry the TCP timestamp option, TSval = the IPv4 ID the test gives them


@pytest.fixture(params=[4, 6], ids=["ip4", "ip6"])
def family(request, monkeypatch) -> int:
    """Run a test's download over IPv4 (the frames' addresses) or over IPv6 (the lab's), the IPv6 segments with
    the timestamp option as Linux sends them: IPv6 has no IP ID, and the TSval tells the copies apart instead
    (experiments.timeouts), so every verdict is the IPv4 one."""
    if request.param == 6:
        mod = sys.modules[__name__]
        monkeypatch.setattr(mod, "SERVER", V6.server)
        monkeypatch.setattr(mod, "CLIENT", V6.client)
        monkeypatch.setattr(mod, "TIMESTAMPS", True)
    return request.param


def marks(ip_id: int) -> dict:
    """The frame's copy mark: the IPv4 ID, and with TIMESTAMPS the same value as the TSval."""
    return {"id": ip_id, "options": [("Timestamp", (ip_id, 0))] if TIMESTAMPS else None}


def seg(k: int) -> int:
    """Relative sequence number of data segment k (1-based)."""
    return 1 + (k - 1) * MSS


class Link:
    """Both captures of one replication: what the server sent and received, what reached the client."""

    def __init__(self) -> None:
        self.server: list[tuple[int, bytes]] = []
        self.client: list[tuple[int, bytes]] = []

    def send(self, t_ms: float, frame: bytes, arrives_ms: float | None) -> None:
        """The server sends frame at t_ms; it reaches the client at arrives_ms (None: dropped)."""
        self.server.append((T0 + round(t_ms * MS), frame))
        if arrives_ms is not None:
            self.client.append((T0 + round(arrives_ms * MS), frame))

    def reply(self, t_ms: float, frame: bytes, arrives_ms: float | None) -> None:
        """The client sends frame at t_ms; it reaches the server at arrives_ms (None: lost)."""
        self.client.append((T0 + round(t_ms * MS), frame))
        if arrives_ms is not None:
            self.server.append((T0 + round(arrives_ms * MS), frame))

    def write(self, rep: Path) -> Path:
        rep.mkdir(parents=True, exist_ok=True)
        write_pcap_us(rep / "server.pcap", self.server)
        write_pcap_us(rep / "client.pcap", self.client)
        return rep


def handshake(link: Link, port: int = PORT, isn: int = ISN, t: float = 0.0) -> None:
    link.reply(t, up(0, 1, "S", port, isn, seq=CSEQ), t + 5)
    link.send(t + 5, down(0, 0, 0, "SA", port, isn), t + 50)
    link.reply(t + 50, up(1, 2, port=port, isn=isn), t + 55)


def test_a_lost_segment_resent_by_the_timer_is_needed_and_a_fast_retransmit_is_no_timeout(tmp_path, family):
    link = Link()
    handshake(link)
    for k in range(1, 6):  # segment 3 is lost at the bottleneck
        link.send(60 + k, down(seg(k), 10 + k), None if k == 3 else 100 + 10 * k)
    link.reply(111, up(seg(2), 3), 116)  # ACKs of 1 and 2, then duplicate ACKs for 3
    link.reply(121, up(seg(3), 4), 126)
    link.reply(141, up(seg(3), 5), 146)
    link.send(146.05, down(seg(3), 16), 190)  # fast retransmit, 50 us after the duplicate ACK: not a timeout
    link.reply(191, up(seg(6), 6), 196)
    link.send(200, down(seg(6), 17), None)  # segment 6 lost, no more data: the timer resends it
    link.send(196 + 300, down(seg(6), 18), 530)
    rep = link.write(tmp_path / "rep0")
    assert timeouts(rep) == {"timeouts": 1, "handshake": 0, "spurious": 0, "needed": 1, "unknown": 0,
                             "not_measured": None}


def test_a_probe_of_the_highest_segment_is_no_timeout_but_the_lowest_one_resent_is(tmp_path, family):
    """A tail loss probe resends the last segment sent, the timer the first unacknowledged one."""
    link = Link()
    handshake(link)
    for k in range(1, 4):  # none of them is acknowledged before the probe
        link.send(60 + k, down(seg(k), 10 + k), None if k == 1 else 600 + k)
    link.send(400, down(seg(3), 14), 700)  # the probe: segment 3 again, 340 ms after the last ACK
    link.send(1000, down(seg(1), 15), 1100)  # the timer: segment 1, the lowest unacknowledged
    got = timeouts(link.write(tmp_path / "rep0"))
    assert (got["timeouts"], got["needed"]) == (1, 1)


def test_a_timer_that_fires_while_the_first_copy_waits_in_the_queue_is_spurious(tmp_path, family):
    """One segment waits 1.3 s in the queue; the server's timer fires after 1 s (its initial RTO) and both copies
    reach the client. The IP IDs (over IPv6 the TSvals) tell the copies apart even when only one arrives."""
    link = Link()
    handshake(link)
    link.send(60, down(seg(1), 11), 1360)
    link.send(1055, down(seg(1), 12), 1400)
    rep = link.write(tmp_path / "both")
    assert timeouts(rep)["spurious"] == 1 and timeouts(rep)["timeouts"] == 1
    link.client = [c for c in link.client if c[0] != T0 + 1400 * MS]  # the retransmission dropped: still spurious
    assert timeouts(link.write(tmp_path / "first"))["spurious"] == 1
    link = Link()
    handshake(link)
    link.send(60, down(seg(1), 11), None)  # the first copy dropped, the retransmission arrives: needed
    link.send(1055, down(seg(1), 12), 1400)
    assert timeouts(link.write(tmp_path / "second"))["needed"] == 1


def test_syn_ack_copies_share_ip_id_zero_so_order_and_time_decide(tmp_path, family):
    def synack_case(first: float | None, second: float | None) -> dict:
        synack_case.n += 1
        link = Link()
        link.reply(0, up(0, 1, "S", seq=CSEQ), 5)
        link.send(5, down(0, 0, 0, "SA"), first)
        link.send(1005, down(0, 0, 0, "SA"), second)  # the server's initial RTO of 1 s
        link.reply(max(x for x in (first, second, 0) if x is not None), up(1, 2), 1600)
        return timeouts(link.write(tmp_path / f"rep{synack_case.n}"))

    synack_case.n = 0
    both = synack_case(1300, 1500)  # two arrived from two sent: at least one sent before the retransmission
    assert (both["timeouts"], both["handshake"], both["spurious"]) == (1, 1, 1)
    assert synack_case(900, None)["spurious"] == 1  # arrived before the retransmission was sent
    assert synack_case(1300, None)["unknown"] == 1  # one arrived after it: either copy
    assert synack_case(None, None)["needed"] == 1


def test_the_clients_syn_sent_again_is_the_clients_timeout(tmp_path, family):
    link = Link()
    link.reply(0, up(0, 1, "S", seq=CSEQ), 5)
    link.send(5, down(0, 0, 0, "SA"), 1500)  # the SYN-ACK waits 1.5 s behind a burst
    link.reply(1000, up(0, 2, "S", seq=CSEQ), 1005)  # the client's 1 s initial RTO
    link.send(1005.05, down(0, 0, 0, "SA"), 1600)  # answer to the duplicate SYN: no server timeout
    link.reply(1500, up(1, 3), 1505)
    got = timeouts(link.write(tmp_path / "rep0"))
    assert (got["timeouts"], got["handshake"], got["spurious"]) == (1, 1, 1)  # the first SYN had reached the server


def test_a_reused_client_port_is_a_new_connection(tmp_path, family):
    link = Link()
    handshake(link)
    link.send(60, down(seg(1), 11, payload=100, flags="FA"), 100)
    link.reply(100, up(102, 3), 105)
    handshake(link, isn=77_000, t=2000)  # the same 4-tuple, a new ISN
    link.send(2060, down(seg(1), 11, isn=77_000), 2100)
    link.reply(2100, up(seg(2), 3, isn=77_000), 2105)
    assert timeouts(link.write(tmp_path / "rep0"))["timeouts"] == 0  # neither its SYN nor its ID 11 is a copy


def test_without_a_capture_nothing_is_counted_and_the_reason_is_named(tmp_path):
    link = Link()
    handshake(link)
    rep = link.write(tmp_path / "rep0")
    (rep / "client.pcap").unlink()
    got = timeouts(rep)
    assert got["timeouts"] is None and got["not_measured"].endswith("client.pcap: missing")


def test_over_ipv6_without_timestamps_the_order_decides(tmp_path, monkeypatch):
    """IPv6 segments without the timestamp option carry no mark of their copy: one copy arriving after the
    retransmission was sent may be either (unknown), where over IPv4 the ID says it was the first (spurious)."""
    mod = sys.modules[__name__]
    monkeypatch.setattr(mod, "SERVER", V6.server)
    monkeypatch.setattr(mod, "CLIENT", V6.client)
    link = Link()
    handshake(link)
    link.send(60, down(seg(1), 11), 1360)
    link.send(1055, down(seg(1), 12), None)
    got = timeouts(link.write(tmp_path / "rep0"))
    assert (got["timeouts"], got["spurious"], got["unknown"]) == (1, 0, 1)
