"""A server.pcap as the lab's tcpdump writes it, holding connections of the web server (handshake, data
segments, the client's ACKs and requests), for the frozen-flow tests (experiments.metrics.frozen_flows)."""

from __future__ import annotations

import json
from pathlib import Path

from bulkcapture import write_pcap_us
from frames import tcp

NS, MS = 1_000_000_000, 1_000_000
TB = 1_700_000_001_000_000_000  # the audio's start, on the microsecond
SERVER, CLIENT, WEB = "10.0.0.1", "10.0.0.2", 8080
SEG, GAP, ACK_AFTER = 1000, 20 * MS, 100 * MS


def at(s: float) -> int:
    return TB + round(s * 1e9)


class Flow:
    """One connection of the web server as server.pcap shows it: the client's SYN, the SYN-ACK, the handshake's
    ACK, then the server's data segments and the client's ACKs, at times given in seconds after TB."""

    def __init__(self, port: int, isn: int, syn_s: float) -> None:
        self.port, self.isn, self.off = port, isn, 0
        up, down = self.up(), self.down()
        self.frames = [(at(syn_s), tcp(seq=7, flags="S", payload=0, **up)),
                       (at(syn_s) + MS, tcp(seq=isn, flags="SA", ack=8, payload=0, **down)),
                       (at(syn_s) + 2 * MS, tcp(seq=8, flags="A", ack=isn + 1, payload=0, **up))]

    def up(self) -> dict:
        return dict(src=CLIENT, dst=SERVER, sport=self.port, dport=WEB)

    def down(self) -> dict:
        return dict(src=SERVER, dst=CLIENT, sport=WEB, dport=self.port)

    def send(self, t_s: float, ack_s: float) -> None:
        """One data segment at t_s, acknowledged (with everything before it) at ack_s."""
        self.frames.append((at(t_s), tcp(seq=self.isn + 1 + self.off, payload=SEG, ack=8, **self.down())))
        self.off += SEG
        self.frames.append((at(ack_s), tcp(seq=8, flags="A", ack=self.isn + 1 + self.off, payload=0, **self.up())))

    def stream(self, from_s: float, to_s: float, gap_ns: int = GAP) -> None:
        """Segments every gap from from_s up to to_s (inclusive), each acknowledged ACK_AFTER later."""
        t = at(from_s)
        while t <= at(to_s) + 1000:
            self.send((t - TB) / NS, (t + ACK_AFTER - TB) / NS)
            t += gap_ns

    def request(self, t_s: float) -> None:
        """The client's next request (a segment with payload upstream): no data of the server's."""
        self.frames.append((at(t_s), tcp(seq=8, flags="A", ack=self.isn + 1 + self.off, payload=8, **self.up())))

    def fin(self, t_s: float, ack_s: float) -> None:
        self.frames.append((at(t_s), tcp(seq=self.isn + 1 + self.off, flags="FA", ack=8, payload=0, **self.down())))
        self.frames.append((at(ack_s), tcp(seq=8, flags="A", ack=self.isn + 2 + self.off, payload=0, **self.up())))


def write_rep(rep: Path, flows: list[Flow], end_s: float = 10.0) -> Path:
    """A replication with meta.json (1 Mbit/s, no rate changes) and server.pcap (``write_server_pcap``)."""
    rep.mkdir(parents=True)
    (rep / "meta.json").write_text(json.dumps({"status": "ok", "audio_start_ns": TB, "rate_changes": [],
                                               "profile": {"name": "x", "rate_bps": 1e6, "delay_ms": 50,
                                                           "server_delay_ms": 0}}))
    write_server_pcap(rep / "server.pcap", flows, end_s)
    return rep


def write_server_pcap(path: Path, flows: list[Flow], end_s: float = 10.0) -> None:
    """The flows' frames and a last frame (the audio's) at end_s."""
    last = (at(end_s), tcp(src=SERVER, dst=CLIENT, sport=5004, dport=5004, payload=0, flags="A"))
    write_pcap_us(path, [f for fl in flows for f in fl.frames] + [last])
