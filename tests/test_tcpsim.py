"""tcpsim's server against the rules of Linux it claims to follow (tests/tcpsim.py's docstring), frame by frame:
the simulator is the independent side of IWA's tests, so where it is simpler than Linux it must not be simpler in
a way that flatters a window rule."""

from __future__ import annotations

from frames import client_ack, client_syn
from tcpsim import CLIENT_ISN, Flow, Sim
from test_iwa import params


def established(window: int) -> tuple[Sim, Flow]:
    """A server whose client's SYN (window scale 7) and handshake ACK (``window``, unscaled) it has taken."""
    f = Flow(40000, start=0, size=10_000)
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
