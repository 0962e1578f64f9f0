"""tcpsim's server against the rules of Linux it claims to follow (tests/tcpsim.py's docstring), frame by frame:
the simulator is the independent side of IWA's tests, so where it is simpler than Linux it must not be simpler in
a way that flatters a window rule."""

from __future__ import annotations

from frames import MSS, client_ack, client_syn
from tcpsim import CLIENT_ISN, MS as MS_, Flow, Sim, linux_timer
from test_iwa import params


def established(window: int, size: int = 10_000) -> tuple[Sim, Flow]:
    """A server whose client's SYN (window scale 7) and handshake ACK (``window``, unscaled) it has taken."""
    f = Flow(40000, start=0, size=size)
    sim = Sim(params(), [f])
    sim.server_rx(f, client_syn(CLIENT_ISN))
    sim.server_rx(f, client_ack(f.isn + 1, window=window, seq=CLIENT_ISN + 1))
    return sim, f


def test_the_handshake_ack_sets_the_window_whatever_it_is():
    for window in (0, 3, 502):
        _, f = established(window)
        assert f.established and f.snd_wnd == window << 7


def test_a_request_cannot_shrink_the_window_the_ack_before_it_left():
    """RFC 9293's SND.WL1 rule as Linux's tcp_may_update_window applies it: a segment that acknowledges nothing new
    and carries the same sequence number as the one the window was taken from (a request, sent right after that
    ACK) may open the window or shut it (Linux 6.6 and later; before, only open it), not shrink it."""
    sim, f = established(40)
    sim.server_rx(f, client_ack(f.isn + 1, window=12, seq=CLIENT_ISN + 1, payload=100, flags="PA"))
    assert f.snd_wnd == 40 << 7  # the smaller window is ignored
    sim.server_rx(f, client_ack(f.isn + 1, window=60, seq=CLIENT_ISN + 1))
    assert f.snd_wnd == 60 << 7  # a larger one is taken
    sim.server_rx(f, client_ack(f.isn + 1, window=0, seq=CLIENT_ISN + 1))
    assert f.snd_wnd == 0  # and so is a zero window


def test_a_newer_sequence_number_or_new_data_acknowledged_may_shrink_it():
    sim, f = established(40)
    sim.server_rx(f, client_ack(f.isn + 1, window=12, seq=CLIENT_ISN + 101))  # after a 100-byte request
    assert f.snd_wnd == 12 << 7
    f = Flow(40000, start=0, size=10_000)
    sim = Sim(params(), [f]).run(400_000_000)  # the handshake, the request, the first window in flight
    assert f.snd_nxt > f.snd_una and f.snd_wnd > 8 << 7
    # the sequence number the window was last taken from: only the new data acknowledged lets it shrink
    sim.server_rx(f, client_ack(f.snd_una + 1, window=8, seq=f.snd_wl1))
    assert f.snd_wnd == 8 << 7


def test_a_window_that_ends_inside_a_segment_is_filled_with_a_short_one_as_linux_does():
    """With ``split_window``, the part of a segment that fits the window goes out as a short segment, and no other
    short one follows while it is unacknowledged (Nagle's Minshall check in Linux's tcp_mss_split_point); BMv2's
    captures showed a 1536-byte window sent as 1448 + 88 bytes (MSS 1448 there, with timestamps). Without it the
    server waits for a whole segment."""
    for split, want in ((True, [MSS, 1536 - MSS]), (False, [MSS])):
        sim, f = established(12)  # 12 << 7 = 1536 bytes
        f.split_window = split
        sent = []
        sim.segment = lambda f, seq, n, sent=sent: sent.append(n)
        sim.server_rx(f, client_ack(f.isn + 1, window=12, seq=CLIENT_ISN + 1, payload=100, flags="PA"))
        assert sent == want, (split, sent)
        if split:  # the full segment's ACK opens 1448 more: a whole segment fits, nothing short is sent
            sim.server_rx(f, client_ack(f.isn + 1 + MSS, window=12, seq=CLIENT_ISN + 101))
            assert sent == [MSS, 1536 - MSS, MSS]


def test_nagle_holds_the_response_s_last_segment_while_a_window_split_is_unacknowledged():
    """With ``nagle``, the response's last segment (shorter than an MSS) waits while an earlier short segment, here
    a window split, is unacknowledged, as Linux's tcp_nagle_check (Minshall's variant) holds it. In BMv2's web6
    under IWA (docs/iwa-results.md, "Nagle's hold"), 28 of 60 flows' last segments waited 48.6 ms on average after their
    window allowed them, up to a round trip; none did with the server's TCP_NODELAY. Without ``nagle`` (the
    simulator's default) it goes out at once."""
    size = 1536 + MSS + 100  # a split, one full segment, and a short end
    for nagle in (True, False):
        sim, f = established(12, size)  # 12 << 7 = 1536 bytes
        f.split_window, f.nagle = True, nagle
        sent = []
        sim.segment = lambda f, seq, n, sent=sent: sent.append(n)
        sim.server_rx(f, client_ack(f.isn + 1, window=12, seq=CLIENT_ISN + 1, payload=100, flags="PA"))
        assert sent == [MSS, 1536 - MSS]
        # the full segment's ACK opens the window past the response's end; the split is still unacknowledged
        sim.server_rx(f, client_ack(f.isn + 1 + MSS, window=100, seq=CLIENT_ISN + 101))
        assert sent[2:] == ([MSS] if nagle else [MSS, 100]), (nagle, sent)
        sim.server_rx(f, client_ack(f.isn + 1 + 1536, window=100, seq=CLIENT_ISN + 101))  # the split's ACK
        assert sent[2:] == [MSS, 100]


def test_linux_timer_wheel_rounds_up_to_its_levels_granularity():
    """kernel/time/timer.c (calc_wheel_index, calc_index): a timer ``expires`` jiffies from the wheel's clock goes
    to level 0 below 63 jiffies (1-jiffy buckets), level 1 below 504 (8 jiffies), level 2 below 4032 (64); its
    bucket fires at ``((expires >> shift) + 1) << shift``. At HZ=250 a jiffy is 4 ms; worked by hand."""
    jiffy = 4 * MS_
    assert linux_timer(0, 40 * MS_, 250) == 11 * jiffy  # 10 jiffies: level 0, the next jiffy
    assert linux_timer(0, 400 * MS_, 250) == 104 * jiffy  # 100 jiffies: level 1, (12 + 1) * 8
    assert linux_timer(5 * MS_, 400 * MS_, 250) == 104 * jiffy  # clock 1, expires 101: the same bucket
    assert linux_timer(0, 2100 * MS_, 250) == 576 * jiffy  # 525 jiffies: level 2, (8 + 1) * 64
    # never early, and two connections' persist timers armed 12 ms apart (expires 100 and 103) fire at once
    for now in range(0, 60 * MS_, MS_):
        assert linux_timer(now, 400 * MS_, 250) >= now + 400 * MS_
    assert linux_timer(0, 400 * MS_, 250) == linux_timer(12 * MS_, 400 * MS_, 250)


def test_zero_window_probes_of_flows_paused_apart_go_out_together_at_hz_250():
    """Two servers whose windows were shut 12 ms apart probe at the same instant under Linux's timer wheel, and
    12 ms apart with exact timers (``hz`` None)."""
    for hz, apart in ((None, 12 * MS_), (250, 0)):
        flows = [Flow(40000 + i, start=0, size=10_000) for i in range(2)]
        sim = Sim(params(), flows, hz=hz)
        probes = []
        sim.on_probe = lambda f, timer, probes=probes: probes.append(sim.now)
        for i, f in enumerate(flows):
            sim.now = i * 12 * MS_
            sim.persist(f)
        sim.run(2000 * MS_)
        assert sorted(probes)[1] - sorted(probes)[0] == apart, (hz, probes)
