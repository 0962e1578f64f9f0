"""aiortc's receiver-side estimator and accessnet.webrtc's synthetic encoder in a simulated bottleneck: a test
harness (no network, no sockets), not the lab.

    encoder --(frames of target/8/fps bytes, back to back)--> drop-tail FIFO at rate(t), ``buffer`` packets
        --delay_s--> aiortc.rate.RemoteBitrateEstimator --REMB, delay_s back, never queued--> encoder

The real pieces are aiortc's ``RemoteBitrateEstimator`` (fed as ``RTCRtpReceiver`` feeds it: abs-send-time,
arrival ms, payload bytes) and the sender's REMB handling (``encoder.target_bitrate = REMB``, as
``RTCRtpSender`` does). Wire size = payload + 24 B RTP header and extensions + 10 B SRTP tag + 28 B UDP/IPv4.
"""

from __future__ import annotations

import heapq
import itertools

from accessnet import webrtc

WIRE_OVERHEAD = 24 + webrtc.SRTP_TAG + 28


def simulate(duration_s: float, rates: list[tuple[float, float]], start_kbps: float = 128, delay_s: float = 0.05,
             buffer: int = 50, fps: float = 30, max_kbps: float = 10_000,
             max_burst_ms: float = webrtc.DEFAULTS["max_burst_ms"]) -> list[dict]:
    """Per second: t_s, target_bps (the encoder's, at the end of the second), recv_bps (payload bytes
    arrived), received (packets arrived), lost (packets dropped at the queue). ``rates``: [(from_s, bit/s)], the first from 0.
    ``max_burst_ms`` as the receiver's ``--max-burst-ms`` (0: aiortc as shipped)."""
    undo = webrtc.cap_bursts(max_burst_ms)
    try:
        return _simulate(duration_s, rates, start_kbps, delay_s, buffer, fps, max_kbps)
    finally:
        undo()


def _simulate(duration_s, rates, start_kbps, delay_s, buffer, fps, max_kbps) -> list[dict]:
    from aiortc.rate import RemoteBitrateEstimator

    enc = webrtc.make_encoder_class()(start_kbps * 1e3, webrtc.DEFAULTS["min_kbps"] * 1e3, max_kbps * 1e3, fps)
    rbe = RemoteBitrateEstimator()
    rate_at = lambda t: [r for s, r in rates if s <= t][-1]  # noqa: E731
    seq = itertools.count()
    events: list = [(0.0, next(seq), "frame", None)]
    link_free, in_queue = 0.0, []  # departure times of the packets in the queue
    per_s = [{"t_s": k + 1, "recv_bytes": 0, "received": 0, "lost": 0} for k in range(int(duration_s))]
    k_frame = 0
    base_ms = 3_900_000_000_000  # an NTP-epoch ms origin, as aiortc's clock gives
    while events:
        t, _, kind, data = heapq.heappop(events)
        if t >= duration_s:
            break
        sec = per_s[int(t)]
        if kind == "frame":
            for p in enc.payloads():
                in_queue = [d for d in in_queue if d > t]
                if len(in_queue) >= buffer:
                    sec["lost"] += 1
                    continue
                start = max(t, link_free)
                link_free = start + (len(p) + WIRE_OVERHEAD) * 8 / rate_at(start)
                in_queue.append(link_free)
                abs_send = int(t * (1 << 18)) & 0xFFFFFF
                heapq.heappush(events, (link_free + delay_s, next(seq), "arrive", (abs_send, len(p))))
            k_frame += 1
            heapq.heappush(events, (k_frame / fps, next(seq), "frame", None))
        elif kind == "arrive":
            abs_send, size = data
            sec["recv_bytes"] += size
            sec["received"] += 1
            remb = rbe.add(arrival_time_ms=base_ms + int(t * 1000), abs_send_time=abs_send, payload_size=size,
                           ssrc=1)
            if remb is not None:
                heapq.heappush(events, (t + delay_s, next(seq), "remb", remb[0]))
        elif kind == "remb":
            enc.target_bitrate = data
        sec["target_bps"] = enc.target_bitrate
    for s in per_s:
        s["recv_bps"] = s.pop("recv_bytes") * 8
    return per_s
