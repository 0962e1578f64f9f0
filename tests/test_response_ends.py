"""experiments.response_ends on a server capture built with Scapy, whose tails, edges and leftovers are worked
out by hand from how it is built (window scale 7: a window field of 36 is 4608 bytes)."""

from __future__ import annotations

from pathlib import Path

from bulkcapture import write_pcap_us
from experiments.response_ends import main, response_ends, summarize
from experiments.tcpcap import read_tcp_headers
from frames import tcp

MS = 1_000_000
TB = 1_700_000_001_000_000_000
SERVER, CLIENT, WEB = "10.0.0.1", "10.0.0.2", 8080


class Conn:
    """One connection as server.pcap shows it; offsets are bytes of the server's data after its ISN."""

    def __init__(self, port: int, isn: int, client: str = CLIENT, t0_ms: float = 0) -> None:
        self.port, self.isn, self.frames = port, isn, []
        self.up = dict(src=client, dst=SERVER, sport=port, dport=WEB)
        self.down = dict(src=SERVER, dst=client, sport=WEB, dport=port)
        t0 = TB + int(t0_ms * MS)
        self.frames += [(t0, tcp(seq=5000, flags="S", payload=0, window=64240, options=[("WScale", 7)], **self.up)),
                        (t0 + MS, tcp(seq=isn, flags="SA", payload=0, ack=5001, options=[("WScale", 7)],
                                      **self.down))]

    def ack(self, t_ms: float, off: int, field: int, request: int = 0) -> None:
        self.frames.append((TB + int(t_ms * MS), tcp(seq=5001, ack=self.isn + 1 + off, window=field,
                                                     payload=request, **self.up)))

    def data(self, t_ms: float, off: int, n: int) -> None:
        self.frames.append((TB + int(t_ms * MS), tcp(seq=self.isn + 1 + off, ack=5001 + 10, payload=n, **self.down)))


def capture(path: Path) -> Path:
    a = Conn(40001, 2**32 - 3000)  # its sequence numbers wrap in the first round
    a.ack(2, 0, 24, request=10)  # edge 3072
    a.data(3, 0, 1448), a.data(3, 1448, 1448), a.data(3, 2896, 176)  # fills the window: left 0, not an end
    a.ack(50, 3072, 36)  # edge 7680
    a.data(51, 3072, 1448), a.data(51, 4520, 1448), a.data(51, 5968, 500)  # left 1212 < MSS
    a.ack(100, 6468, 36)  # edge 11076
    a.data(101, 6468, 1448), a.data(101, 7916, 300)  # the end: short, left 2860
    a.ack(150, 8216, 36)  # edge 12824: leftover 4608
    a.ack(2000, 8216, 36, request=10)
    a.data(2001, 8216, 1448)  # the last end: a full segment, left 4608 - 1448
    a.ack(2050, 9664, 36)  # edge 14272: leftover 4608 (3 MSS)
    b = Conn(40002, 7777)
    b.ack(2, 0, 48, request=10)  # edge 6144
    b.data(3, 0, 1448), b.data(3, 1448, 500)  # short with 4196 left, but more follows without a request ...
    b.ack(20, 1948, 48)  # ... after this ACK of everything (edge 8092): a rule taking the 500 for an end retracts
    b.data(30, 1948, 1448)  # the end: full
    b.ack(80, 3396, 48)  # edge 9540: leftover 6144 (4 MSS)
    path.mkdir(parents=True)
    write_pcap_us(path / "server.pcap", sorted(a.frames + b.frames, key=lambda f: f[0]))
    return path


def test_the_reader_keeps_windows_and_the_syns_scale(tmp_path):
    pk, _ = read_tcp_headers(capture(tmp_path / "rep0") / "server.pcap")
    syns = pk[(pk["flags"] & 0x02) != 0]
    assert set(syns["wscale"]) == {7} and set(pk[(pk["flags"] & 0x02) == 0]["wscale"]) == {-1}
    assert sorted(set(pk[pk["dport"] == WEB]["window"])) == [24, 36, 48, 64240]


def test_tails_ends_and_leftovers_as_built(tmp_path):
    tails, mss = response_ends(capture(tmp_path / "rep0") / "server.pcap")
    assert mss == 1448
    got = sorted((t.client_port, (t.ts_ns - TB) // MS, t.payload, t.left, t.short, t.end, t.leftover) for t in tails)
    assert got == [
        (40001, 3, 176, 0, True, False, None),
        (40001, 51, 500, 1212, True, False, None),
        (40001, 101, 300, 2860, True, True, 4608),
        (40001, 2001, 1448, 12824 - 9664, False, True, 4608),
        (40002, 3, 500, 4196, True, False, None),
        (40002, 30, 1448, 8092 - 3396, False, True, 6144),
    ]
    notice = sorted((t.client_port, t.notice_ns // MS) for t in tails if t.end)
    # sent at 101, 2001 and 30 ms, each with an MSS of window beyond it already (the first ACKs giving it: 100 ms,
    # edge 11076 >= 8216 + 1448; 150 ms, 12824 >= 9664 + 1448; 2 ms, 6144 >= 3396 + 1448); their ACKs of
    # everything at 150, 2050 and 80 ms
    assert notice == [(40001, 49), (40001, 49), (40002, 50)]
    assert summarize(tails, mss, 50 * MS) == {"tails": 6, "ends": 3, "harmful": 3, "unnoticed": 2, "caught": 1,
                                              "caught_harmful": 1, "false": 1, "missed_segments": 3 + 4,
                                              "caught_late": 1, "false_late": 1}


def test_against_a_later_edge_window_fills_look_like_ends(tmp_path):
    """60 ms after each tail the server had the next round's edge: the window-filling 176 bytes (edge 7680 by
    then: 4608 beyond), the 500 bytes Nagle left short of an MSS (11076: 4608) and the pause of 40002 (8092: 6144)
    all look like ends against it, and each one's ACK of everything comes before the server's next data has
    reached a switch 60 ms away; the end of 101 ms is still caught (12824: 4608)."""
    tails, _ = response_ends(capture(tmp_path / "rep0") / "server.pcap", late_ns=60 * MS)
    late = sorted((t.client_port, (t.ts_ns - TB) // MS, t.left_late) for t in tails if t.short)
    assert late == [(40001, 3, 4608), (40001, 51, 4608), (40001, 101, 4608), (40002, 3, 6144)]
    s = summarize(tails, 1448, 60 * MS)
    assert (s["caught"], s["false"], s["caught_late"], s["false_late"]) == (1, 1, 1, 3)


def test_the_command_line_prints_a_row_per_capture_a_total_and_skips_a_broken_one(tmp_path, capsys):
    """Two captures and their total; a third, cut inside its header, is named on stderr and left out; no capture
    at all is an error."""
    capture(tmp_path / "run" / "case" / "rep0")
    capture(tmp_path / "run" / "case" / "rep1")
    (tmp_path / "run" / "case" / "rep2").mkdir()
    (tmp_path / "run" / "case" / "rep2" / "server.pcap").write_bytes(b"\xd4\xc3\xb2")
    assert main([str(tmp_path / "run")]) == 0
    cap = capsys.readouterr()
    out = cap.out.splitlines()
    one = [" 6 ", " 3 ", " 3 ", " 0 ", " 1 ", " 1 ", " 1 ", " 7 ", " 1 ", " 1 "]
    assert len(out) == 5 and out[2].split("|")[3:13] == one and out[3].split("|")[3:13] == one
    assert out[4].startswith("| all 2 |") and out[4].split("|")[3:13] == [f" {2 * int(v)} " for v in one]
    assert "rep2/server.pcap" in cap.err and "truncated" in cap.err
    assert main([str(tmp_path / "nothing")]) == 2


def test_a_retracted_window_is_the_servers_window(tmp_path):
    """A switch's retraction shrinks the window on the ACK of everything (new data acknowledged: Linux takes the
    smaller window). The end at 3 ms (1448 + 300 bytes, edge 6144) is retracted to 1536 bytes at 60 ms: a leftover
    of one MSS rounded up, not harmful. The request at 2000 ms, which acknowledges nothing new, opens the window
    again (7892), and the next end is retracted too."""
    c = Conn(40003, 5555)
    c.ack(2, 0, 48, request=10)
    c.data(3, 0, 1448), c.data(3, 1448, 300)
    c.ack(60, 1748, 12)  # edge 1748 + 1536 = 3284, below 6144
    c.ack(2000, 1748, 48, request=10)  # same ACK, larger window: 7892
    c.data(2001, 1748, 1448)
    c.ack(2050, 3196, 12)  # 4732, below 7892
    (tmp_path / "rep0").mkdir()
    write_pcap_us(tmp_path / "rep0" / "server.pcap", c.frames)
    tails, mss = response_ends(tmp_path / "rep0" / "server.pcap")
    got = sorted(((t.ts_ns - TB) // MS, t.left, t.end, t.leftover) for t in tails)
    assert got == [(3, 6144 - 1748, True, 1536), (2001, 7892 - 3196, True, 1536)]
    assert summarize(tails, mss, 0)["harmful"] == 0


def one_response(c: Conn, t_ms: float, field: int) -> Conn:
    """A request at ``t_ms`` answered by 1448 + 300 bytes, acknowledged 50 ms later with window ``field``."""
    c.ack(t_ms, 0, field, request=10)
    c.data(t_ms + 1, 0, 1448), c.data(t_ms + 1, 1448, 300)
    c.ack(t_ms + 50, 1748, field)
    return c


def test_connections_are_a_four_tuple_and_an_isn(tmp_path):
    """Two clients on the same port at once, and that port reused later with a new ISN, are three connections:
    together in one capture they give each the tails it gives in a capture of its own (tcpcap's
    connection_segments; grouping by client port would mix their sequence numbers)."""
    conns = [one_response(Conn(40001, 1000), 2, 24), one_response(Conn(40001, 900_000, "10.0.0.3"), 3, 48),
             one_response(Conn(40001, 2**32 - 500, t0_ms=500), 502, 36)]

    def tails_of(name: str, frames: list) -> list:
        (tmp_path / name).mkdir()
        write_pcap_us(tmp_path / name / "server.pcap", sorted(frames, key=lambda f: f[0]))
        tails, mss = response_ends(tmp_path / name / "server.pcap")
        assert mss == 1448
        return sorted((t.ts_ns, t.payload, t.left, t.end, t.leftover) for t in tails)

    alone = sorted(sum((tails_of(f"alone{i}", c.frames) for i, c in enumerate(conns)), []))
    assert tails_of("together", sum((c.frames for c in conns), [])) == alone
    # and each as built: 1748 bytes sent into windows of 3072, 6144 and 4608, all of it left once acknowledged
    assert [(t[2], t[4]) for t in alone] == [(3072 - 1748, 3072), (6144 - 1748, 6144), (4608 - 1748, 4608)]
