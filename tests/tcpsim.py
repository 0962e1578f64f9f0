"""A small discrete-event TCP simulator around ``refmodel.Pipeline``: a test harness, not a TCP of record.

The lab's topology, in a closed loop (one server, one client host, one switch):

    server --d_server--> switch (ingress 1) -> queue (the record's sojourn_ns) --d_client--> client
    server <--d_server-- switch (ingress 2: never queued; IWA may rewrite the window) <--d_client-- client

Every frame is a real one built by Scapy (``frames.py``), and the server dissects the ACK *as the switch
forwarded it*, so a rewritten window is the one it obeys.

* Client: a SYN with its option list; on the SYN-ACK the third ACK and a 100 B request; then one cumulative
  ACK per segment received (quickack, as Linux does while a connection starts), or with ``delack`` as Linux
  goes on: the first 16 segments acked at once (``TCP_MAX_QUICKACKS``), then one ACK per two segments, a
  delayed-ACK timer of 40 ms (``TCP_ATO_MIN``) for a lone one, and at once for anything out of order; advertising
  its own window ``rwnd`` bytes beyond what it holds in order (the application reads at once), scaled by
  its shift when both the SYN and the SYN-ACK carried the option (RFC 7323).
* Server: per flow snd_una/snd_nxt, cwnd = IW segments, slow start (cwnd += bytes acked) then +MSS per cwnd,
  growing only while cwnd-limited (in flight >= cwnd / 2 before the ACK, roughly as Linux); snd_wnd from the
  latest ACK allowed to set it (RFC 9293's SND.WL1 rule as Linux's ``tcp_may_update_window``: a request cannot
  shrink the window the ACK before it left); sends full segments (the last one may be short) while they fit in
  min(cwnd, snd_wnd), or in cwnd alone for a sender that ignores the window; with ``split_window`` a window
  that ends inside a segment is filled with a short one, as Linux does (under Nagle's Minshall check); with
  ``nagle`` the response's last short segment waits too while such a split is unacknowledged (Linux's
  ``tcp_nagle_check``: a server without TCP_NODELAY). A FIN
  once everything is acked (``close``). With ``half_wnd``, segments are at most half the largest window the server ever saw (Linux's
  ``tcp_bound_to_half_wnd``, RFC 1122's sender-side silly-window avoidance): a flow whose windows never
  exceeded two MSS sends half-size segments, twice the headers.
* Losses are repaired and counted, so tests can demand there were none: fast retransmit on the third
  duplicate ACK, NewReno partial ACKs; an RTO (1 s, doubling: no RTT estimator, so no spurious RTO while
  queues stay under a second) resends the first unacked segment with cwnd = 1 MSS; a SYN-ACK whose ACK does
  not come is resent after 1 s. FINs are not retransmitted; the client answers the server's FIN with its own.
* Keep-alive: ``more`` lists further responses ``(think_ns, size)``: once a response is complete the client
  waits ``think_ns`` and sends the next request on the same connection (with ``pages_at``, ``think_ns`` is
  instead the absolute time of the request: a browser's page asks all its connections at once); a server idle
  for longer than ``restart_ns`` (Linux's ``tcp_slow_start_after_idle``: idle longer than its RTO) restarts from
  ``min(cwnd, IW)``. The FIN follows the last response.
* Zero windows, as Linux's persist timer: a server with data to send, nothing in flight and a window too small
  for its next segment arms the probe timer at its RTO (``restart_ns`` stands for Linux's RTO estimate, as for
  the idle restart), doubling while the window stays shut (``tcp_probe0_when``); a probe is a segment without
  data one below ``snd_una`` (``tcp_xmit_probe_skb``), and the client answers it at once with an ACK
  (``tcp_send_dupack``) that carries its window. Probes are counted (``probes``), never as retransmissions.
* ``Sim.close`` ends a connection at a given time: the client's FIN, the server's FIN or a RST from either side.
* Timers (``hz``): by default every timer fires at its exact time. With ``hz`` (Linux's ``CONFIG_HZ``; 250 on
  the lab's kernel) the server's retransmission and persist timers and the client's delayed-ACK timer fire as
  Linux's timer wheel fires them (``linux_timer``): in jiffies, rounded up to their wheel level's granularity
  (8 jiffies from 63 jiffies on, 64 from 504), so timers of different connections that end in the same bucket
  fire together: the zero-window probes of flows paused within ~30 ms of each other at HZ=250 go out at once.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from frames import LINUX_SYN, MSS, audio, client_ack, client_syn, syn_ack, tcp, tcp_fields
from scapy.layers.inet import TCP

from refmodel import Pipeline, Route

MS = 1_000_000
U32 = 0xFFFFFFFF
ROUTES = {1: Route(2, True), 2: Route(1, False)}
REQUEST = 100  # bytes of the client's request
CLIENT_ISN = 5000
RTO = 1000 * MS
QUICKACKS = 16  # Linux's TCP_MAX_QUICKACKS
ATO = 40 * MS  # Linux's TCP_ATO_MIN: the delayed-ACK timer
TCP_MSS_DEFAULT = 536  # Linux bounds segments to half the largest window seen only above this
TS_OPTIONS = [("NOP", None), ("NOP", None), ("Timestamp", (0, 0))]  # as Linux pads them
TS_BYTES = len(TCP(options=TS_OPTIONS)) - len(TCP())  # 12: what they take from a full segment's payload
LVL_CLK_SHIFT, LVL_BITS = 3, 6  # Linux's timer wheel (kernel/time/timer.c): 64 buckets a level, each 8x coarser


def linux_timer(now: int, delay: int, hz: int) -> int:
    """When a timer armed at ``now`` for ``delay`` ns fires in Linux's timer wheel at ``hz``: the expiry in
    jiffies (``jiffies + delay`` rounded up), then its level's bucket: ``calc_index`` rounds up to the next
    multiple of the level's granularity, so a timer never fires early and fires with its bucket."""
    jiffy = 1_000_000_000 // hz
    clk = now // jiffy
    expires = clk + -(-delay // jiffy)
    lvl = 0
    while (expires - clk) >= ((1 << LVL_BITS) - 1) << (lvl * LVL_CLK_SHIFT):
        lvl += 1
    shift = lvl * LVL_CLK_SHIFT
    return (((expires >> shift) + 1) << shift) * jiffy


AUDIO = audio()


def unwrap(x: int, ref: int) -> int:
    """The absolute sequence number nearest ``ref`` whose low 32 bits are ``x``."""
    return ref + ((x - ref + (1 << 31)) & U32) - (1 << 31)


@dataclass
class Flow:
    port: int  # the client's port (the server is SERVER:80)
    start: int  # ns: the client sends its SYN
    size: int  # bytes of the response
    iw: int = 10
    syn_options: list = field(default_factory=lambda: list(LINUX_SYN))
    synack_ws: int | None = 9  # the server's window-scale option (None: its SYN-ACK carries none)
    rwnd: int = 502 << 7  # the client's own receive window in bytes
    isn: int = 1_000_000  # the server's ISN
    ignore_window: bool = False  # a sender that obeys cwnd only
    close: bool = True  # the server sends a FIN after the last byte (else the flow just goes silent)
    more: list = field(default_factory=list)  # keep-alive: further responses (think_ns, size) on this connection
    pages_at: bool = False  # more's times are absolute (every connection of a page asked at once)
    restart_ns: int = 400 * MS  # idle longer than this, the server restarts slow start (Linux: its RTO)
    ecn: bool = False  # data segments sent ECT(0)
    hidden: tuple = ()  # kinds of frames ("syn", "synack") that reach the other end without the switch
    lose_synacks: int = 0  # this many SYN-ACKs are lost after the switch (on the access link)
    delack: bool = False  # the client delays ACKs as Linux does past its quickack segments
    half_wnd: bool = False  # the server bounds its segments to half the largest window it saw (Linux)
    # where the window ends inside a segment, the part that fits goes out as a short segment unless a short one
    # sent earlier is still unacknowledged (Linux's tcp_mss_split_point under Nagle's Minshall check): a window
    # of 1536 bytes came as 1448 + 88 on BMv2 (docs/iwa-results.md, "Restarts")
    split_window: bool = False
    # the server's segments carry TCP timestamps (RFC 7323, 12 option bytes with padding, as Linux sends them):
    # a full segment holds 1448 B, the MSS less its options (RFC 6691), and the congestion window counts those
    timestamps: bool = False
    # Nagle's algorithm as Linux runs it (Minshall's check, ``tcp_nagle_check``): a short segment, such as the
    # response's last, waits while an earlier short one (a window split) is unacknowledged
    nagle: bool = False
    small_end: int = 0  # one past the latest short segment the server sent
    max_wnd: int = 0  # the largest window the server saw
    # the server
    shift: int = 0  # the client's window shift as the server applies it
    established: bool = False
    snd_una: int = 0
    snd_nxt: int = 0
    end: int = 0  # one past the response's last byte (0: no request yet)
    cwnd: int = 0
    ssthresh: int = 1 << 40
    snd_wnd: int = 0
    snd_wl1: int = 0  # the sequence number of the segment the window was last taken from
    dupacks: int = 0
    recover: int = 0  # NewReno: snd_nxt when the loss was detected (0: not in recovery)
    rto: int = RTO
    timer: int = 0  # generation of the armed retransmission timer
    ptimer: int = 0  # generation of the armed probe (persist) timer
    probing: bool = False  # the probe timer is armed
    backoff: int = 0  # the probe timer's doublings
    probes: int = 0  # zero-window probes sent
    fin: bool = False
    retransmits: int = 0
    rtos: int = 0
    synacks: int = 0
    closed: bool = False  # the client sent its FIN
    acks: list = field(default_factory=list)  # every ACK the server got: (t, ack, field seen, own field, edge)
    # the client
    syn_at: int = 0
    rcv_nxt: int = 0
    ooo: dict = field(default_factory=dict)  # out-of-order segments: seq -> end
    own_field: int = 0  # the window field the client writes
    requested: bool = False
    nreq: int = 0  # requests the client sent
    served: int = 0  # requests the server read
    last_send: int = 0  # when the server last sent data
    wanted: int = 0  # one past the last byte of the responses the client asked for
    done_at: list = field(default_factory=list)  # ns from each request to its response's last byte
    asked_at: int = 0
    quickacks: int = QUICKACKS  # segments still acked at once (delack)
    unacked: int = 0  # in-order segments received and not acked yet (delack)
    dtimer: int = 0  # generation of the delayed-ACK timer
    done: int | None = None  # ns from the SYN to the response's last byte at the client

    @property
    def client_ws(self) -> int | None:
        return next((v for k, v in self.syn_options if k == "WScale"), None)

    @property
    def seg(self) -> int:
        """The payload of the server's full segments: the MSS, less the timestamps' option bytes if it sends them."""
        return MSS - (TS_BYTES if self.timestamps else 0)


class Sim:
    def __init__(self, params, flows, *, d_server=11 * MS, d_client=70 * MS, audio=(0, 0), pipeline=None,
                 hz: int | None = None):
        self.p = pipeline or Pipeline(ROUTES, params)
        self.hz = hz
        self.flows = {f.port: f for f in flows}
        self.d_server, self.d_client = d_server, d_client
        self.q, self.n, self.now = [], 0, 0
        self.audio = []  # (t, sojourn_ns) of every audio packet the switch passed
        self.audio_drops = 0
        self.drops = []  # TCP frames the switch dropped: (t, port, kind, reason, cls)
        self.rewrites = []  # ACKs whose window the switch rewrote: (port, frame in, frame out)
        self.grants = []  # the switch's telemetry of every tracked upstream ACK: (t, port, record)
        self.data = []  # every data segment the switch passed: (t, port, seq, class)
        for f in flows:
            self.at(f.start, self.client_syn, f)
        for t in range(audio[0], audio[1], 20 * MS):
            self.at(t, self.down, None, AUDIO, "audio")

    def at(self, t, fn, *args):
        heapq.heappush(self.q, (t, self.n, fn, args))
        self.n += 1

    def timer(self, delay: int) -> int:
        """When a TCP timer armed now for ``delay`` fires (exactly, or as Linux's timer wheel at ``hz``)."""
        return self.now + delay if self.hz is None else linux_timer(self.now, delay, self.hz)

    def run(self, until: int) -> "Sim":
        while self.q and self.q[0][0] <= until:
            self.now, _, fn, args = heapq.heappop(self.q)
            fn(*args)
        return self

    # ------------------------------------------------------------------ the switch and the links

    def down(self, f, frame, kind):
        r = self.p.process(self.now, frame, 1)
        if f is not None and kind == "data" and r.egress is not None:
            self.data.append((self.now, f.port, tcp_fields(frame).seq, r.cls))
        if r.egress is None:
            if f is None:
                self.audio_drops += 1
            else:
                self.drops.append((self.now, f.port, kind, r.reason, r.cls))
        elif f is None:
            self.audio.append((self.now, r.record.sojourn_ns))
        elif kind == "synack" and f.lose_synacks:
            f.lose_synacks -= 1
        else:
            self.at(self.now + r.record.sojourn_ns + self.d_client, self.client_rx, f, r.frame)

    def up(self, f, frame):
        r = self.p.process(self.now, frame, 2)
        if r.frame != frame:
            self.rewrites.append((f.port, frame, r.frame))
        if r.record is not None and r.record.tflags & 1:  # an ACK of a tracked flow (a SYN's record is not)
            self.grants.append((self.now, f.port, r.record))
        self.at(self.now + self.d_server, self.server_rx, f, r.frame)

    def server_send(self, f, frame, kind):
        if kind in f.hidden:
            self.at(self.now + self.d_server + self.d_client, self.client_rx, f, frame)
        else:
            self.at(self.now + self.d_server, self.down, f, frame, kind)

    def client_send(self, f, frame, kind="ack"):
        if kind in f.hidden:
            self.at(self.now + self.d_client + self.d_server, self.server_rx, f, frame)
        else:
            self.at(self.now + self.d_client, self.up, f, frame)

    # ------------------------------------------------------------------ the client

    def client_syn(self, f):
        f.syn_at = self.now
        self.client_send(f, client_syn(CLIENT_ISN, f.syn_options, sport=f.port), "syn")

    def client_ack(self, f, payload=0):
        seq = CLIENT_ISN + 1 + REQUEST * (f.nreq - (1 if payload else 0))
        self.client_send(f, client_ack(f.rcv_nxt, f.own_field, seq, payload, "PA" if payload else "A", f.port))

    def request(self, f, size):
        """The client asks for ``size`` more bytes on its connection."""
        f.nreq += 1
        f.wanted = (f.wanted or f.isn + 1) + size
        f.asked_at = self.now
        self.client_ack(f, REQUEST)

    def client_rx(self, f, frame):
        t = tcp_fields(frame)
        if t.flags.S:
            scaled = f.client_ws is not None and any(k == "WScale" for k, _ in t.options)
            f.own_field = f.rwnd >> min(f.client_ws, 14) if scaled else min(f.rwnd, 0xFFFF)
            f.rcv_nxt = f.isn + 1
            self.client_ack(f)  # the third ACK (again, for a retransmitted SYN-ACK)
            if not f.requested:
                f.requested = True
                self.request(f, f.size)
            return
        seq, n = unwrap(t.seq, f.rcv_nxt), len(t.payload) + (1 if t.flags.F else 0)
        if n == 0:
            if seq < f.rcv_nxt:  # a zero-window probe (below what it holds): answered at once
                self.client_ack(f)
            return
        in_order = seq == f.rcv_nxt and not f.ooo
        if seq > f.rcv_nxt:
            f.ooo[seq] = max(f.ooo.get(seq, 0), seq + n)
        else:
            f.rcv_nxt = max(f.rcv_nxt, seq + n)
            while f.ooo:
                s = min(f.ooo)
                if s > f.rcv_nxt:
                    break
                f.rcv_nxt = max(f.rcv_nxt, f.ooo.pop(s))
        if f.done is None and f.rcv_nxt >= f.isn + 1 + f.size:
            f.done = self.now - f.syn_at
        if f.wanted and f.rcv_nxt >= f.wanted and len(f.done_at) < f.nreq:
            f.done_at.append(self.now - f.asked_at)
            if len(f.done_at) <= len(f.more):
                think, size = f.more[len(f.done_at) - 1]
                self.at(max(self.now, think) if f.pages_at else self.now + think, self.request, f, size)
        if f.delack and in_order and not t.flags.F and not f.quickacks:
            f.unacked += 1
            if f.unacked < 2:  # a lone segment: the delayed-ACK timer
                f.dtimer += 1
                self.at(self.timer(ATO), self.delayed_ack, f, f.dtimer)
                return
        f.quickacks = max(0, f.quickacks - 1)
        f.unacked = 0
        f.dtimer += 1
        self.client_ack(f)
        if t.flags.F and f.rcv_nxt >= f.wanted + 1 and not f.closed:
            f.closed = True  # the server's FIN in order: the application closes too (a FIN, as Linux sends it)
            seq = CLIENT_ISN + 1 + REQUEST * f.nreq
            self.client_send(f, client_ack(f.rcv_nxt, f.own_field, seq, 0, "FA", f.port))

    def delayed_ack(self, f, timer):
        if timer == f.dtimer and f.unacked:
            f.unacked = 0
            self.client_ack(f)

    # ------------------------------------------------------------------ the server

    def send_synack(self, f):
        if f.established:
            return
        opts = [("MSS", MSS)] + ([("WScale", f.synack_ws)] if f.synack_ws is not None else [])
        f.synacks += 1
        self.server_send(f, syn_ack(f.isn, dport=f.port, ack=CLIENT_ISN + 1, options=opts, window=65160), "synack")
        self.at(self.now + RTO * f.synacks, self.send_synack, f)

    def server_rx(self, f, frame):
        t = tcp_fields(frame)
        if t.flags.S:  # the client's SYN: its window is never scaled
            ws = next((v for k, v in t.options if k == "WScale"), None)
            f.shift = min(ws, 14) if ws is not None and f.synack_ws is not None else 0
            f.snd_wnd = t.window
            if not f.synacks:
                self.send_synack(f)
            return
        if t.flags.R:  # the client reset the connection: nothing more is sent
            f.fin, f.end = True, f.snd_nxt
            return
        ack = unwrap(t.ack, f.snd_una or f.isn + 1)
        if not f.established:
            if ack != f.isn + 1:
                return
            f.established, f.snd_una, f.snd_nxt, f.cwnd = True, ack, ack, f.iw * f.seg
            f.snd_wl1 = t.seq - 1  # the handshake's ACK sets the window whatever it is (tcp_init_wl)
        f.acks.append((self.now, ack, t.window, f.own_field, ack + (t.window << f.shift)))
        nwin, seq = t.window << f.shift, t.seq
        # RFC 9293's SND.WL1/SND.WL2 rule as Linux's tcp_may_update_window applies it: a window is taken from a
        # segment that acknowledges new data or carries a newer sequence number; from one with the same sequence
        # number only if it opens the window or (Linux 6.6 and later; the lab's kernel) shuts it: a request, sent
        # with the sequence number of the ACK before it, cannot shrink a window
        if ack > f.snd_una or seq > f.snd_wl1 or (seq == f.snd_wl1 and (nwin > f.snd_wnd or nwin == 0)):
            f.snd_wnd, f.snd_wl1 = nwin, seq
        f.max_wnd = max(f.max_wnd, f.snd_wnd)
        if len(t.payload):  # a request: the next response (after idle, slow start restarts as Linux does)
            f.served += 1
            size = f.size if f.served == 1 else f.more[f.served - 2][1]
            if f.end and self.now - f.last_send > f.restart_ns:
                f.cwnd = min(f.cwnd, f.iw * f.seg)
            f.end = (f.end or f.isn + 1) + size
        self.on_ack(f, ack, len(t.payload) > 0)
        self.send(f)

    def on_ack(self, f, ack, has_data):
        if ack > f.snd_una:
            acked, flight = ack - f.snd_una, f.snd_nxt - f.snd_una
            f.snd_una, f.dupacks, f.rto = ack, 0, RTO
            if f.recover:
                if ack >= f.recover:
                    f.recover, f.cwnd = 0, f.ssthresh
                else:
                    self.retransmit(f)  # NewReno: a partial ACK shows the next hole
            elif flight >= f.cwnd // 2:  # cwnd-limited: grow
                f.cwnd += acked if f.cwnd < f.ssthresh else max(1, f.seg * acked // f.cwnd)
            self.arm(f)
        elif ack == f.snd_una and f.snd_nxt > f.snd_una and not has_data:
            f.dupacks += 1
            if f.dupacks == 3 and not f.recover:
                f.ssthresh = f.cwnd = max((f.snd_nxt - f.snd_una) // 2, 2 * f.seg)
                f.recover = f.snd_nxt
                self.retransmit(f)

    def send(self, f):
        wnd = f.cwnd if f.ignore_window else min(f.cwnd, f.snd_wnd)
        idle = f.snd_nxt == f.snd_una
        mss = f.seg
        if f.half_wnd and f.max_wnd > TCP_MSS_DEFAULT:  # RFC 1122's sender-side SWS avoidance, as Linux does it
            mss = min(f.seg, f.max_wnd // 2)
        while f.snd_nxt < f.end:
            n = min(mss, f.end - f.snd_nxt)
            if f.snd_nxt + n > f.snd_una + wnd:
                part = f.snd_una + wnd - f.snd_nxt
                if f.split_window and part > 0 and f.small_end <= f.snd_una:
                    self.segment(f, f.snd_nxt, part)
                    f.snd_nxt += part
                    f.small_end = f.snd_nxt
                break
            if f.nagle and n < mss and f.small_end > f.snd_una:
                break  # Nagle (Minshall's check): a short segment waits while an earlier one is unacknowledged
            self.segment(f, f.snd_nxt, n)
            f.snd_nxt += n
            if n < mss:
                f.small_end = f.snd_nxt
        if idle and f.snd_nxt > f.snd_una:
            self.arm(f)
        if f.snd_nxt > f.snd_una or f.snd_nxt >= f.end or f.ignore_window:
            f.backoff, f.probing, f.ptimer = 0, False, f.ptimer + 1  # sending (or nothing to send): no probe
        elif not f.probing:  # data waits, nothing in flight, the window shut: the persist timer
            self.persist(f)
        if f.close and f.end and f.snd_una == f.end and not f.fin and f.served == len(f.more) + 1:
            f.fin, f.snd_nxt = True, f.end + 1
            self.server_send(f, tcp(f.end, 0, "FA", dport=f.port, ack=CLIENT_ISN + 1 + REQUEST * f.served), "fin")

    def close(self, f, how: str) -> None:
        """End the connection now: ``client`` or ``server`` FIN, ``client-rst`` or ``server-rst``."""
        who, _, rst = how.partition("-")
        flags = "R" if rst else "FA"
        if who == "client":
            f.closed = True
            seq = CLIENT_ISN + 1 + REQUEST * f.nreq
            self.client_send(f, client_ack(f.rcv_nxt, f.own_field, seq, 0, flags, f.port))
        else:
            f.fin = True
            self.server_send(f, tcp(f.snd_nxt, 0, flags, dport=f.port, ack=CLIENT_ISN + 1 + REQUEST * f.served),
                             "fin")

    def segment(self, f, seq, n):
        f.last_send = self.now
        frame = tcp(seq, n, "A", dport=f.port, ack=CLIENT_ISN + 1 + REQUEST * f.served, tos=2 if f.ecn else 0,
                    options=TS_OPTIONS if f.timestamps else None)
        self.server_send(f, frame, "data")

    def retransmit(self, f):
        f.retransmits += 1
        self.segment(f, f.snd_una, min(f.seg, f.end - f.snd_una))

    def arm(self, f):
        f.timer += 1
        if f.snd_una < min(f.snd_nxt, f.end):
            self.at(self.timer(f.rto), self.on_rto, f, f.timer)

    def persist(self, f):
        f.probing, f.ptimer = True, f.ptimer + 1
        self.at(self.timer(f.restart_ns << f.backoff), self.on_probe, f, f.ptimer)

    def on_probe(self, f, timer):
        if timer != f.ptimer or f.snd_nxt > f.snd_una or f.snd_nxt >= f.end:
            return
        f.probes += 1
        self.server_send(f, tcp(f.snd_una - 1, 0, "A", dport=f.port, ack=CLIENT_ISN + 1 + REQUEST * f.served),
                         "probe")
        f.backoff = min(f.backoff + 1, 8)
        self.persist(f)

    def on_rto(self, f, timer):
        if timer != f.timer:
            return
        f.rtos += 1
        f.ssthresh, f.cwnd, f.rto = max((f.snd_nxt - f.snd_una) // 2, 2 * f.seg), f.seg, 2 * f.rto
        f.recover = f.snd_nxt
        self.retransmit(f)
        self.arm(f)
