"""A real WebRTC stack's congestion control as the adaptive real-time flow (seed 002):
``python -m accessnet.webrtc send|recv ...``.

The stack is aiortc (pinned in requirements.txt). Its video receiver runs ``aiortc.rate.RemoteBitrateEstimator``:
a port of Google's receiver-side, delay-based estimation (abs-send-time inter-arrival groups, the Kalman
``OveruseEstimator``, the adaptive-threshold ``OveruseDetector`` and the ``AimdRateControl``: x1.08 per second
while normal, 0.85 x incoming rate on over-use), whose estimate goes back to the sender in REMB. That is the
receiver side of RRTCC, the lineage seed 002 measured. aiortc's sender sets its encoder's ``target_bitrate``
to each REMB (``RTCRtpSender._handle_rtcp_packet``). What aiortc does not have, and this flow therefore does not
have either: RRTCC's sender-side loss-based controller (the sender follows REMB alone), a pacer (a frame's
packets leave back to back), and an RTT fed into the rate control (``AimdRateControl.rtt`` stays 200 ms).

One line of libwebrtc that aiortc's port lacks is added by default on the receiver (``--max-burst-ms``,
``cap_bursts``): a burst group of the inter-arrival filter ends 100 ms after its first arrival. Without it
the estimator is blind behind any standing queue (see ``cap_bursts``); ``--max-burst-ms 0`` runs aiortc
exactly as shipped.

The rest is the real stack too: ICE (host candidates only, one per host: the ``--local-ip``, IPv4 or IPv6),
DTLS-SRTP, RTP/RTCP (SR/RR every 0.5-1.5 s, REMB, NACK, PLI). aiortc has no public hooks, so this module patches its
classes in its own process only: observers (``RTCDtlsTransport._send_rtp`` and ``_handle_rtp_data`` for the
per-packet logs, the first also writing the send time into the payload's trailer, and
``RemoteBitrateEstimator.add`` for the receiver's stats), and three replacements:

* the encoder: ``SyntheticEncoder`` stands in for VP8 (the VP8 payload type and payload descriptor stay, so
  the receiver's depacketiser and jitter buffer work as for VP8). Each frame (``--fps``, 30 by default) is
  ``target_bitrate / 8 / fps`` bytes of payload (the fraction carried to the next frame), split into packets
  of at most ``MAX_PAYLOAD`` bytes; no codec burns CPU. ``target_bitrate`` starts at ``--start-kbps``
  (128, as in the seed) and every REMB sets it, clamped to [``--min-kbps``, ``--max-kbps``];
* the decoder: a null decoder (the payload is not video);
* retransmission: the receiver still sends NACKs (aiortc always does for video) but the sender does not
  resend (counted in the sender's stats as ``nacked``): the loss rate is the network's, as in the seed's NS-2
  runs, which had no retransmission.

A second stack, ``[webrtc] stack = "pion"`` (``STACKS``; the default is aiortc), runs the Go program
``build/pion-rtc`` (tools/pion-rtc, built by ``make setup``): pion/webrtc with pion/interceptor's send-side
GCC (the delay-based estimate from transport-wide feedback (TWCC), the loss-based controller, the leaky-bucket
pacer at 1.5 x the target; the RTT from RTCP RR), with this module's command line, synthetic encoder (its
``frame_sizes`` and ``split_frame``, mirrored in tools/pion-rtc/encoder.go), signalling, trailer and logs.
Its stats begin with this module's columns (``TX_STATS``, ``RX_STATS``; a value that has no meaning there,
such as REMB or the receiver's estimate, is empty) and go on with GCC's (``PION_TX_STATS``,
``PION_RX_STATS``). ``--max-burst-ms`` is aiortc's receiver's and has no effect on it.

Signalling is one offer and one answer (JSON lines) over a plain TCP connection: the receiver listens on
``--signal-port``, the sender connects (retrying until its start time). No STUN or TURN server.

Every media packet's payload ends with a 20-byte trailer (packet number, frame number, send time, magic).
The send time is written into the RTP packet right before SRTP protects it, so it is the time the packet
goes to the socket. Logs (CLOCK_REALTIME ns; the per-packet ones in the columns that ``experiments.metrics``
reads for the [rtc] flow, plus ``frame``):

* sender ``--log``: ``seq,send_ns,size,rate_bps,frame``: size = RTP packet bytes before SRTP (the UDP
  payload is 10 bytes more, the SRTP tag); rate_bps = the encoder's target when the frame was made;
* receiver ``--log``: ``seq,send_ns,recv_ns,size,frame``: recv_ns is taken in user space after SRTP
  unprotect (aiortc's sockets have no kernel timestamps), so it includes the event loop's latency;
* sender ``--stats``, once a second: ``t_ns,target_bps,remb_bps,rembs,sent_bps,sent_packets,nacked,
  rtt_s,fraction_lost,packets_lost``: target = encoder target now; remb = last REMB received (before the
  clamp), rembs = REMBs received in the second; sent = RTP bytes and packets in the second; rtt_s = aiortc's
  smoothed RTT from RTCP SR/RR (empty before the first RR); fraction_lost and packets_lost = the last RR's
  (fraction = RR value / 256; packets_lost cumulative);
* receiver ``--stats``, once a second: ``t_ns,estimate_bps,remb_bps,incoming_bps,usage,offset_ms,
  threshold_ms,received,lost``: estimate = AimdRateControl's current bitrate (empty before it initialises,
  3 s after the first packet); remb = last REMB sent; incoming = the estimator's 1 s incoming rate (payload
  bytes); usage = the over-use detector's state (normal / underusing / overusing); offset_ms = the Kalman
  estimate of the queuing-delay gradient the detector last saw, threshold_ms = the detector's adaptive
  threshold (it compares min(deltas, 60) x offset with it); received = packets in the second, lost = gaps
  in the packet numbers in the second;
* receiver ``--trace`` (aiortc only; the workload writes webrtc_rx_trace.csv): one row per media packet the
  estimator takes, its input and the detector's and rate control's state after it (``RX_TRACE``), which
  ``experiments.aiortc_overuse`` reads (issue 35: what fires the over-use detector).

Two receiver options are diagnostics and off by default (issue 35; they change what the estimator sees, never
what is sent): ``--diag-arrival us`` (fractional-ms arrival times instead of aiortc's integer ms) and
``--diag-rtt-ms`` (the rate control's RTT instead of aiortc's fixed 200 ms); ``[webrtc] diag_arrival`` and
``diag_rtt_ms`` pass them from a scenario.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import signal
import struct
import sys
import time
from fractions import Fraction

from pathlib import Path

from .addresses import family

MAGIC = 0x57525443  # "WRTC"
TRAILER = struct.Struct("!IIQI")  # packet seq, frame, send_ns, magic
SEND_NS_OFFSET = 8  # within the trailer
MAX_PAYLOAD = 1200  # RTP payload bytes per packet (VP8 descriptor + filler + trailer)
VP8_DESCRIPTOR = 4  # bytes: aiortc's descriptor with a 15-bit picture id
MIN_PACKET = VP8_DESCRIPTOR + TRAILER.size
VIDEO_CLOCK = 90_000
SRTP_TAG = 10
SIGNAL_PORT = 5008
# The sender's defaults (also the [webrtc] section's): the seed's start rate; a floor and a ceiling that leave
# the controller free on a 5 Mbit/s link (aiortc's own VP8 encoder clamps to 250-1500 kbit/s).
DEFAULTS = {"start_kbps": 128.0, "min_kbps": 50.0, "max_kbps": 10_000.0, "fps": 30.0, "max_burst_ms": 100.0}
TX_COLUMNS = ("seq", "send_ns", "size", "rate_bps", "frame")
RX_COLUMNS = ("seq", "send_ns", "recv_ns", "size", "frame")
TX_STATS = ("t_ns", "target_bps", "remb_bps", "rembs", "sent_bps", "sent_packets", "nacked", "rtt_s",
            "fraction_lost", "packets_lost")
RX_STATS = ("t_ns", "estimate_bps", "remb_bps", "incoming_bps", "usage", "offset_ms", "threshold_ms",
            "received", "lost")
# [webrtc] stack: which WebRTC implementation runs the flow. aiortc: this module; pion: build/pion-rtc.
STACKS = ("aiortc", "pion")
STACK = "aiortc"
PION_BINARY = Path(__file__).resolve().parents[2] / "build" / "pion-rtc"
# pion-rtc's stats: the columns above, then GCC's target before the encoder's clamp, its delay-based and
# loss-based estimates, the loss controller's average loss, the detector's usage, the rate controller's
# state, the delay-gradient estimate, the adaptive threshold and the last measurement (ms), and the TWCC
# reports received; the receiver's: the TWCC reports and the NACKed packets it sent (tools/pion-rtc/csvlog.go)
PION_TX_STATS = TX_STATS + ("gcc_bps", "delay_bps", "loss_bps", "average_loss", "usage", "state", "estimate_ms",
                            "threshold_ms", "measurement_ms", "twcc_reports")
PION_RX_STATS = RX_STATS + ("twcc_reports", "nacks")
# The aiortc receiver's ``--trace``: one row per media packet the estimator takes, written after it took it:
# recv_ns (CLOCK_REALTIME at the handler, as rtc_rx.csv), the RTP sequence number (to join with a capture), the
# estimator's input (arrival_ms as aiortc gives it, abs_send_time, payload size), the inter-arrival delta the
# packet closed, if any (t_delta_ms: arrival, ts_delta_ms: send, size_delta), then the detector and the rate
# control as they are after it: offset_ms, T_ms = min(deltas, 60) x offset (what the detector compares),
# threshold_ms, usage, estimate_bps, rate_state (hold / increase / decrease), near_max, and the REMB it returned.
RX_TRACE = ("recv_ns", "rtp_seq", "arrival_ms", "abs_send_time", "size", "t_delta_ms", "ts_delta_ms", "size_delta",
            "offset_ms", "T_ms", "threshold_ms", "usage", "estimate_bps", "rate_state", "near_max", "remb_bps")
# Diagnostic receivers (issue 35), off by default: --diag-arrival us gives the estimator the arrival time in
# fractional ms (aiortc's clock at the same point, not truncated to an integer ms); --diag-rtt-ms sets
# AimdRateControl's RTT (aiortc fixes it at 200 ms). Neither changes what is sent.
DIAG_ARRIVALS = ("ms", "us")
NTP_EPOCH_OFFSET_MS = 2_208_988_800_000  # 1900 to 1970: aiortc's clock.current_ms() counts from 1900


# ----------------------------------------------------------------------------- pure pieces (unit-tested)

def frame_sizes(target_bps: float, fps: float, carry: float) -> tuple[int, float]:
    """Payload bytes of the next frame at ``target_bps`` and the fraction of a byte carried to the next one
    (so the frames add up to the target exactly)."""
    exact = target_bps / 8 / fps + carry
    n = int(exact)
    return n, exact - n


def split_frame(nbytes: int, max_payload: int = MAX_PAYLOAD) -> list[int]:
    """A frame of ``nbytes`` payload bytes as packet payload sizes, as even as possible, each at most
    ``max_payload`` and at least ``MIN_PACKET`` (a frame below it is sent as one ``MIN_PACKET`` packet)."""
    nbytes = max(nbytes, MIN_PACKET)
    k = math.ceil(nbytes / max_payload)
    base, extra = divmod(nbytes, k)
    return [base + (1 if i < extra else 0) for i in range(k)]


def clamp_rate(bps: float, lo: float, hi: float) -> int:
    return int(min(hi, max(lo, bps)))


def read_trailer(data: bytes) -> tuple[int, int, int] | None:
    """(seq, frame, send_ns) of a media payload or RTP packet that ends with our trailer, else None."""
    if len(data) < TRAILER.size:
        return None
    seq, frame, send_ns, magic = TRAILER.unpack_from(data, len(data) - TRAILER.size)
    return (seq, frame, send_ns) if magic == MAGIC else None


def stamp(data: bytes, send_ns: int) -> bytes:
    """``data`` (ending with a trailer) with its send time set."""
    b = bytearray(data)
    struct.pack_into("!Q", b, len(b) - TRAILER.size + SEND_NS_OFFSET, send_ns)
    return bytes(b)


# ----------------------------------------------------------------------------- the aiortc pieces
# aiortc, av and aioice are imported in the functions that use them: the unit tests of the pure pieces and the
# scenario checks import this module without them.

def _aiortc():
    """Import aiortc lazily (the unit tests of the pure pieces and the scenario checks do not need it)."""
    import aiortc  # noqa: F401
    return aiortc


def make_encoder_class():
    from aiortc.codecs.base import Encoder
    from aiortc.codecs.vpx import VpxPayloadDescriptor

    class SyntheticEncoder(Encoder):
        """Stands in for aiortc's Vp8Encoder: frames of target_bitrate / 8 / fps bytes, VP8 payload
        descriptors, our trailer at the end of every packet. ``target_bitrate`` is what aiortc's sender sets
        on every REMB."""

        def __init__(self, start_bps: float, min_bps: float, max_bps: float, fps: float) -> None:
            self.min_bps, self.max_bps, self.fps = float(min_bps), float(max_bps), float(fps)
            self._target = clamp_rate(start_bps, self.min_bps, self.max_bps)
            self.remb_bps: int | None = None  # the last REMB, before the clamp
            self.rembs = 0
            self.carry = 0.0
            self.frame = 0
            self.seq = 0
            self.picture_id = 0
            self.frame_rate: dict[int, int] = {}  # frame -> target when it was made (bounded below)

        @property
        def target_bitrate(self) -> int:
            return self._target

        @target_bitrate.setter
        def target_bitrate(self, bps: int) -> None:
            self.remb_bps = int(bps)
            self.rembs += 1
            self._target = clamp_rate(bps, self.min_bps, self.max_bps)

        def payloads(self) -> list[bytes]:
            n, self.carry = frame_sizes(self._target, self.fps, self.carry)
            out = []
            for i, size in enumerate(split_frame(n)):
                d = bytes(VpxPayloadDescriptor(partition_start=1 if i == 0 else 0, partition_id=0,
                                               picture_id=self.picture_id))
                fill = size - len(d) - TRAILER.size
                out.append(d + b"\x00" * fill + TRAILER.pack(self.seq, self.frame, 0, MAGIC))
                self.seq = (self.seq + 1) & 0xFFFFFFFF
            self.frame_rate[self.frame] = self._target
            self.frame_rate.pop(self.frame - 1000, None)
            self.frame += 1
            self.picture_id = (self.picture_id + 1) % (1 << 15)
            return out

        def encode(self, frame, force_keyframe: bool = False):
            ts = int(frame.pts * frame.time_base * VIDEO_CLOCK)
            return self.payloads(), ts

        def pack(self, packet):
            ts = int(packet.pts * packet.time_base * VIDEO_CLOCK)
            return self.payloads(), ts

    return SyntheticEncoder


class NullDecoder:
    def decode(self, encoded_frame):
        return []


def make_track(start_ns: int, end_ns: int, fps: float):
    """A video track whose frames are due at start_ns + k / fps (absolute deadlines: no drift), ending at
    end_ns. The pixels are never encoded; only pts matters."""
    import av
    from aiortc.mediastreams import MediaStreamError, MediaStreamTrack

    class FrameClock(MediaStreamTrack):
        kind = "video"

        def __init__(self) -> None:
            super().__init__()
            self.k = 0
            self.skipped = 0  # frames never made because the event loop was late by more than 200 ms
            self.first_ns: int | None = None

        async def recv(self):
            due = start_ns + int(self.k * 1e9 / fps)
            if due >= end_ns:
                self.stop()
                raise MediaStreamError
            now = time.time_ns()
            if due > now:
                await asyncio.sleep((due - now) / 1e9)
            elif now - due > 200_000_000:  # fell behind by more than 200 ms: skip frames, do not burst
                k = int((now - start_ns) * fps / 1e9)
                self.skipped += k - self.k
                self.k = k
            if self.first_ns is None:
                self.first_ns = time.time_ns()
            f = av.VideoFrame(16, 16, "yuv420p")
            f.pts = int(self.k * VIDEO_CLOCK / fps)
            f.time_base = Fraction(1, VIDEO_CLOCK)
            self.k += 1
            return f

    return FrameClock()


def cap_bursts(max_ms: float):
    """Give aiortc's ``InterArrival`` libwebrtc's cap on a burst group (``kMaxBurstDurationMs``, 100 ms in
    modules/remote_bitrate_estimator/inter_arrival.cc): a packet that arrives within 5 ms of the group's last
    one, earlier than its send-time spacing, joins the group only while the group is younger than
    ``max_ms`` since its first arrival. aiortc 1.16.0's port has no such cap, so behind a standing queue,
    where packets arrive back to back at the link rate, every packet joins one endless group: the estimator
    gets no more deltas, never sees over-use, and the rate climbs to 1.5 x the incoming rate and stays there
    (tests/webrtcsim.py shows it: ~50 % loss after the link halves). ``max_ms`` 0 leaves aiortc as shipped.
    Returns a function that undoes the patch."""
    from aiortc import rate
    orig_deltas, orig_burst = rate.InterArrival.compute_deltas, rate.InterArrival.belongs_to_burst
    if max_ms <= 0:
        return lambda: None

    def compute_deltas(self, timestamp: int, arrival_time: int, packet_size: int):
        group = self.current_group
        out = orig_deltas(self, timestamp, arrival_time, packet_size)
        if self.current_group is not group:  # a new group began with this packet
            self.current_group.first_arrival = arrival_time
        return out

    def belongs_to_burst(self, timestamp: int, arrival_time: int) -> bool:
        if not orig_burst(self, timestamp, arrival_time):
            return False
        same_send_time = round(self.timestamp_to_ms * rate.uint32_add(timestamp, -self.current_group.last_timestamp)) == 0
        return same_send_time or arrival_time - getattr(self.current_group, "first_arrival", arrival_time) < max_ms

    rate.InterArrival.compute_deltas, rate.InterArrival.belongs_to_burst = compute_deltas, belongs_to_burst

    def undo() -> None:
        rate.InterArrival.compute_deltas, rate.InterArrival.belongs_to_burst = orig_deltas, orig_burst
    return undo


def fine_arrival_times():
    """Diagnostic (``--diag-arrival us``): the receiver's estimator gets each packet's arrival time as a float
    in ms (CLOCK_REALTIME to the microsecond, from the NTP epoch as aiortc's ``clock.current_ms``), taken where
    aiortc takes it (``RTCDtlsTransport`` before SRTP unprotect), instead of the time truncated to an integer ms.
    The 1 ms buckets of the incoming-rate counter still get the integer. Returns a function that undoes it."""
    import types
    from aiortc import clock, rate, rtcdtlstransport
    shim = types.SimpleNamespace(**{k: getattr(clock, k) for k in dir(clock) if not k.startswith("__")})
    shim.current_ms = lambda: time.time_ns() / 1e6 + NTP_EPOCH_OFFSET_MS
    orig_add, orig_rate = rate.RateCounter.add, rate.RateCounter.rate
    rate.RateCounter.add = lambda self, value, now_ms: orig_add(self, value, int(now_ms))
    rate.RateCounter.rate = lambda self, now_ms: orig_rate(self, int(now_ms))
    rtcdtlstransport.clock = shim

    def undo() -> None:
        rtcdtlstransport.clock = clock
        rate.RateCounter.add, rate.RateCounter.rate = orig_add, orig_rate
    return undo


def fixed_rtt(rtt_ms: float):
    """Diagnostic (``--diag-rtt-ms``): AimdRateControl's RTT (its additive increase's response time is RTT +
    100 ms) set to ``rtt_ms`` instead of aiortc's fixed 200 ms. Returns a function that undoes it."""
    from aiortc import rate
    orig_init = rate.AimdRateControl.__init__

    def init(self) -> None:
        orig_init(self)
        self.rtt = rtt_ms
    rate.AimdRateControl.__init__ = init

    def undo() -> None:
        rate.AimdRateControl.__init__ = orig_init
    return undo


def host_only(ip: str):
    """ICE host candidates on ``ip`` only (aioice otherwise takes every address but 127.0.0.1)."""
    import aioice.ice
    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: [ip]


def _config():
    from aiortc import RTCConfiguration
    return RTCConfiguration(iceServers=[])  # no STUN/TURN (aiortc would default to a public STUN server)


def _stop_event() -> asyncio.Event:
    ev = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, ev.set)
    return ev


async def _sleep_or(ev: asyncio.Event, s: float) -> None:
    try:
        await asyncio.wait_for(ev.wait(), timeout=max(0.0, s))
    except asyncio.TimeoutError:
        pass


def _fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def _csv_row(row: tuple) -> str:
    """A stats row as a CSV line (None as an empty field)."""
    return ",".join(_fmt(v) for v in row) + "\n"


def _open_csv(path: str, columns: tuple[str, ...], buffering: int):
    """A log or stats file, its header written: the per-packet logs buffer 64 KiB (no write to the disk per
    packet), the stats are line-buffered (a row a second, readable while the flow runs)."""
    f = open(path, "w", buffering=buffering)
    f.write(",".join(columns) + "\n")
    return f


def _sdp_line(desc) -> bytes:
    """A session description as the signalling's one JSON line (the offer or the answer)."""
    return (json.dumps({"type": desc.type, "sdp": desc.sdp}) + "\n").encode()


# ----------------------------------------------------------------------------- sender

async def _connect(dst: str, port: int, deadline: float):
    while True:
        try:
            return await asyncio.open_connection(dst, port)
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


def _use_encoder(a):
    """The synthetic encoder at the command line's rates and frame rate, handed to aiortc's sender in place of
    its VP8 encoder (every REMB then sets its ``target_bitrate``)."""
    from aiortc import rtcrtpsender
    enc = make_encoder_class()(a.start_kbps * 1e3, a.min_kbps * 1e3, a.max_kbps * 1e3, a.fps)
    rtcrtpsender.get_encoder = lambda codec: enc
    return enc


def _count_nacks_instead_of_resending() -> list[int]:
    """The sender counts the packets a NACK asks for ([count]) and does not resend them: the loss rate stays
    the network's, as in the seed's runs."""
    from aiortc import RTCRtpSender
    nacked = [0]

    async def no_retransmit(self, sequence_number: int) -> None:
        nacked[0] += 1
    RTCRtpSender._retransmit = no_retransmit
    return nacked


def _trace_sent(enc, log) -> list[int]:
    """Every media packet, as it goes to SRTP: its send time written into its trailer, a line in ``log``, and
    its bytes and itself counted in the current second's [bytes, packets] (the stats loop resets them)."""
    from aiortc.rtcdtlstransport import RTCDtlsTransport
    from aiortc.rtp import is_rtcp
    sent = [0, 0]  # bytes, packets in the current second
    orig_send_rtp = RTCDtlsTransport._send_rtp

    async def traced_send_rtp(self, data: bytes) -> None:
        if not is_rtcp(data) and (t := read_trailer(data)) is not None:
            now = time.time_ns()
            data = stamp(data, now)
            seq, frame, _ = t
            log.write(f"{seq},{now},{len(data)},{enc.frame_rate.get(frame, enc.target_bitrate)},{frame}\n")
            sent[0] += len(data)
            sent[1] += 1
        await orig_send_rtp(self, data)
    RTCDtlsTransport._send_rtp = traced_send_rtp
    return sent


def _note_connected(pc, start_ns: int) -> list[int]:
    """Say when the connection comes up, from the media's start time (a late one delays the first frames);
    the list gets that time, and stays empty if it never does."""
    connected: list[int] = []

    @pc.on("connectionstatechange")
    def on_state() -> None:
        if pc.connectionState == "connected" and not connected:
            connected.append(time.time_ns())
            print(f"connected {(connected[0] - start_ns) / 1e9:+.3f} s from the start time", flush=True)
    return connected


def _send_vp8_only(pc, track) -> None:
    """Offer ``track`` as VP8 alone, without RTX: the synthetic encoder's packets carry VP8's payload
    descriptor, and the sender does not resend."""
    from aiortc import RTCRtpSender
    tr = pc.addTransceiver(track, direction="sendonly")
    vp8 = [c for c in RTCRtpSender.getCapabilities("video").codecs if c.mimeType.lower() == "video/vp8"]
    tr.setCodecPreferences(vp8)  # VP8 only, no RTX


def _last_receiver_report(reports) -> tuple:
    """(rtt_s, fraction_lost, packets_lost) of the last RTCP receiver report among the sender's stats; Nones
    before the first one."""
    rtt = frac = lost = None
    for s in reports:
        if s.type == "remote-inbound-rtp":
            rtt, frac, lost = s.roundTripTime, s.fractionLost / 256, s.packetsLost
    return rtt, frac, lost


def _sender_verdict(connected: list[int], track, start_ns: int) -> int:
    """The sender's last line and exit code: 1 if the connection never came up; else when the first frame was
    made and how many the event loop skipped."""
    if not connected:
        print("never connected", flush=True)
        return 1
    print(f"first frame {(track.first_ns - start_ns) / 1e9:+.3f} s from the start time, {track.skipped} frames "
          "skipped (the event loop was late by more than 200 ms)" if track.first_ns else "no frame sent", flush=True)
    return 0


async def send(a) -> int:
    """The sender: the patched aiortc stack, the offer, then a stats row a second until the media ends."""
    _aiortc()
    from aiortc import RTCPeerConnection, RTCSessionDescription

    host_only(a.local_ip)
    print(f"sender: aiortc {_aiortc().__version__}, start {a.start_kbps:g} kbit/s in [{a.min_kbps:g}, "
          f"{a.max_kbps:g}], {a.fps:g} frames/s", flush=True)
    stop = _stop_event()
    start_ns = a.start_at or time.time_ns() + 2_000_000_000
    end_ns = start_ns + int(a.duration * 1e9)
    enc = _use_encoder(a)
    nacked = _count_nacks_instead_of_resending()
    log = _open_csv(a.log, TX_COLUMNS, 1 << 16)
    sent = _trace_sent(enc, log)
    pc = RTCPeerConnection(_config())
    connected = _note_connected(pc, start_ns)
    track = make_track(start_ns, end_ns, a.fps)
    _send_vp8_only(pc, track)
    await pc.setLocalDescription(await pc.createOffer())
    reader, writer = await _connect(a.dst, a.signal_port, time.monotonic() + max(5.0, (start_ns - time.time_ns()) / 1e9 + 5))
    writer.write(_sdp_line(pc.localDescription))
    await writer.drain()
    answer = json.loads(await reader.readline())
    await pc.setRemoteDescription(RTCSessionDescription(**answer))
    writer.close()
    stats = _open_csv(a.stats, TX_STATS, 1)
    rembs_before = 0
    next_t = max(start_ns, time.time_ns()) + 1_000_000_000
    try:
        while not stop.is_set() and time.time_ns() < end_ns + 1_000_000_000:
            if pc.connectionState in ("failed", "closed"):
                print(f"connection {pc.connectionState}", flush=True)
                return 1
            await _sleep_or(stop, (next_t - time.time_ns()) / 1e9)
            if stop.is_set():
                break
            now = time.time_ns()
            next_t += 1_000_000_000
            rr = _last_receiver_report((await pc.getSenders()[0].getStats()).values() if pc.getSenders() else [])
            row = (now, enc.target_bitrate, enc.remb_bps, enc.rembs - rembs_before, sent[0] * 8, sent[1], nacked[0],
                   *rr)
            stats.write(_csv_row(row))
            rembs_before = enc.rembs
            sent[0] = sent[1] = 0
            if track.readyState == "ended" and now > end_ns:
                break
    finally:
        await pc.close()
        log.close()
        stats.close()
    return _sender_verdict(connected, track, start_ns)


# ----------------------------------------------------------------------------- receiver

def _watch_estimator(trace=None, win: dict | None = None) -> dict:
    """Keep hold of the receiver's RemoteBitrateEstimator as aiortc feeds it each packet, and of the last REMB
    it returned ({"rbe", "remb"}): the stats read its state, which aiortc does not expose. With ``trace`` (an
    open file), a ``RX_TRACE`` row per packet (``win`` gives the handler's recv_ns and the RTP sequence number)."""
    from aiortc import rate
    est: dict = {"rbe": None, "remb": None, "delta": None}
    orig_add = rate.RemoteBitrateEstimator.add

    def traced_add(self, *args, **kw):
        est["rbe"] = self
        r = orig_add(self, *args, **kw)
        if r is not None:
            est["remb"] = r[0]
        if trace is not None:
            _trace_row(trace, self, est, win, kw, r)
        return r
    rate.RemoteBitrateEstimator.add = traced_add
    if trace is not None:
        orig_update = rate.OveruseEstimator.update

        def traced_update(self, time_delta_ms, timestamp_delta_ms, size_delta, *args):
            est["delta"] = (time_delta_ms, timestamp_delta_ms, size_delta)
            return orig_update(self, time_delta_ms, timestamp_delta_ms, size_delta, *args)
        rate.OveruseEstimator.update = traced_update
    return est


def _trace_row(trace, rbe, est: dict, win: dict | None, kw: dict, r) -> None:
    """One ``RX_TRACE`` row: the packet the estimator just took (``kw``: aiortc's keyword arguments) and its
    state after it."""
    d, est["delta"] = est["delta"], None
    det, rc = rbe.detector, rbe.rate_control
    offset = rbe.estimator.offset()
    t = min(rbe.estimator.num_of_deltas(), 60) * offset
    dt = f"{d[0]:.4f},{d[1]:.4f},{d[2]}" if d else ",,"
    trace.write(f"{win['now'] if win else ''},{win['rtp_seq'] if win else ''},{kw.get('arrival_time_ms'):.4f},"
                f"{kw.get('abs_send_time')},{kw.get('payload_size')},{dt},{offset:.5f},{t:.4f},{det.threshold:.4f},"
                f"{det.hypothesis.name.lower()},{rc.current_bitrate if rc.current_bitrate_initialized else ''},"
                f"{rc.state.name.lower()},{int(rc.near_max)},{r[0] if r is not None else ''}\n")


def _trace_received(log) -> dict:
    """Every media packet, as SRTP gives it up: a line in ``log``, and the current second's count and the
    highest packet number so far ({"received", "max_seq", "max_seq_before"}; the stats loop moves the window), and
    the last packet's handler time and RTP sequence number ({"now", "rtp_seq"}, for the estimator's trace)."""
    from aiortc.rtcdtlstransport import RTCDtlsTransport
    win = {"received": 0, "max_seq": -1, "max_seq_before": -1, "now": None, "rtp_seq": None}
    orig_handle = RTCDtlsTransport._handle_rtp_data

    async def traced_handle(self, data: bytes, arrival_time_ms: int) -> None:
        now = win["now"] = time.time_ns()
        win["rtp_seq"] = (data[2] << 8) | data[3]
        t = read_trailer(data)
        if t is not None:
            seq, frame, send_ns = t
            log.write(f"{seq},{send_ns},{now},{len(data)},{frame}\n")
            win["received"] += 1
            win["max_seq"] = max(win["max_seq"], seq)
        await orig_handle(self, data, arrival_time_ms)
    RTCDtlsTransport._handle_rtp_data = traced_handle
    return win


def _answer_offer(pc, done: asyncio.Event):
    """The signalling server's handler: read the sender's offer, answer it, and set ``done``."""
    from aiortc import RTCSessionDescription

    async def on_signal(reader, writer):
        offer = json.loads(await reader.readline())
        await pc.setRemoteDescription(RTCSessionDescription(**offer))
        await pc.setLocalDescription(await pc.createAnswer())
        writer.write(_sdp_line(pc.localDescription))
        await writer.drain()
        writer.close()
        done.set()
    return on_signal


def _receiver_row(now: int, est: dict, win: dict, estimator_ms) -> tuple:
    """The receiver's stats row for the second that ends at ``now``: the estimator's state (empty before its
    first packet; ``estimator_ms`` is its own clock) and the packets received and lost in the second."""
    rbe = est["rbe"]
    estimate = incoming = usage = offset = threshold = None
    if rbe is not None:
        rc = rbe.rate_control
        estimate = rc.current_bitrate if rc.current_bitrate_initialized else None
        incoming = rbe.incoming_bitrate.rate(estimator_ms())
        usage = rbe.detector.state().name.lower()
        offset = rbe.detector.previous_offset
        threshold = rbe.detector.threshold
    expected = win["max_seq"] - win["max_seq_before"]
    lost = max(0, expected - win["received"]) if win["max_seq_before"] >= 0 else None
    return (now, estimate, est["remb"], incoming, usage, offset, threshold, win["received"], lost)


async def recv(a) -> int:
    """The receiver: the patched aiortc stack, the answer to the sender's offer, then a stats row a second
    until the duration ends or a signal stops it."""
    _aiortc()
    from aiortc import RTCPeerConnection, clock, rtcrtpreceiver

    host_only(a.local_ip)
    cap_bursts(a.max_burst_ms)
    print(f"receiver: aiortc {_aiortc().__version__}, burst groups capped at {a.max_burst_ms:g} ms"
          + (" (aiortc as shipped: no cap)" if a.max_burst_ms <= 0 else " (libwebrtc's kMaxBurstDurationMs)"),
          flush=True)
    if a.diag_arrival == "us":
        fine_arrival_times()
        print("receiver: DIAGNOSTIC arrival times in fractional ms (not aiortc's integer ms)", flush=True)
    if a.diag_rtt_ms is not None:
        fixed_rtt(a.diag_rtt_ms)
        print(f"receiver: DIAGNOSTIC rate control RTT {a.diag_rtt_ms:g} ms (not aiortc's fixed 200 ms)", flush=True)
    stop = _stop_event()
    end = time.monotonic() + a.duration
    rtcrtpreceiver.get_decoder = lambda codec: NullDecoder()
    log = _open_csv(a.log, RX_COLUMNS, 1 << 16)
    win = _trace_received(log)
    trace = _open_csv(a.trace, RX_TRACE, 1 << 16) if a.trace else None
    est = _watch_estimator(trace, win)
    srv_done = asyncio.Event()
    pc = RTCPeerConnection(_config())
    server = await asyncio.start_server(_answer_offer(pc, srv_done), a.local_ip, a.signal_port,
                                        family=family(a.local_ip), reuse_address=True)
    stats = _open_csv(a.stats, RX_STATS, 1)
    try:
        await _sleep_or(stop, 0)
        while not srv_done.is_set() and not stop.is_set() and time.monotonic() < end:
            await asyncio.sleep(0.05)
        server.close()
        next_t = time.time_ns() + 1_000_000_000
        while not stop.is_set() and time.monotonic() < end:
            await _sleep_or(stop, (next_t - time.time_ns()) / 1e9)
            if stop.is_set():
                break
            now = time.time_ns()
            next_t += 1_000_000_000
            stats.write(_csv_row(_receiver_row(now, est, win, clock.current_ms)))  # the estimator's own clock
            win["received"], win["max_seq_before"] = 0, win["max_seq"]
    finally:
        server.close()
        await pc.close()
        log.close()
        stats.close()
        if trace is not None:
            trace.close()
    return 0


# ----------------------------------------------------------------------------- command line

def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m accessnet.webrtc", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("send")
    p.add_argument("--dst", required=True, help="the receiver's address (signalling)")
    p.add_argument("--local-ip", required=True, help="this host's address: the only ICE host candidate")
    p.add_argument("--signal-port", type=int, default=SIGNAL_PORT)
    p.add_argument("--start-kbps", type=float, default=DEFAULTS["start_kbps"])
    p.add_argument("--min-kbps", type=float, default=DEFAULTS["min_kbps"])
    p.add_argument("--max-kbps", type=float, default=DEFAULTS["max_kbps"])
    p.add_argument("--fps", type=float, default=DEFAULTS["fps"])
    p.add_argument("--duration", type=float, required=True, help="seconds of media from the start time")
    p.add_argument("--start-at", type=int, help="absolute start of the media, ns (CLOCK_REALTIME)")
    p.add_argument("--log", required=True, help="per packet sent (csv)")
    p.add_argument("--stats", required=True, help="per second (csv)")
    p = sub.add_parser("recv")
    p.add_argument("--local-ip", required=True)
    p.add_argument("--signal-port", type=int, default=SIGNAL_PORT)
    p.add_argument("--max-burst-ms", type=float, default=DEFAULTS["max_burst_ms"],
                   help="libwebrtc's cap on an inter-arrival burst group (0: aiortc as shipped, no cap)")
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--trace", help="per packet the estimator takes: its input and state (csv, RX_TRACE)")
    p.add_argument("--diag-arrival", choices=DIAG_ARRIVALS, default="ms",
                   help="DIAGNOSTIC: us gives the estimator fractional-ms arrival times (default ms: aiortc's)")
    p.add_argument("--diag-rtt-ms", type=float,
                   help="DIAGNOSTIC: the rate control's RTT in ms (default: aiortc's fixed 200)")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    if a.cmd == "send" and not (0 < a.min_kbps <= a.start_kbps <= a.max_kbps and 0 < a.fps <= 1000):
        parser().error("need 0 < min-kbps <= start-kbps <= max-kbps and 0 < fps <= 1000")
    return asyncio.run(send(a) if a.cmd == "send" else recv(a))


if __name__ == "__main__":
    sys.exit(main())
