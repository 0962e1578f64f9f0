"""The audio sender's log holds every packet it put on the wire, also when it is stopped mid-run.

The runner stops the sender with SIGTERM; a stop that fell between ``sendto``
and the log line once left a packet at the receiver that the send log lacked
(the replication was then rightly refused by the metrics). Here the sender
runs as fast as it can (50,000 packets/s asked) to a socket of ours on loopback and is stopped at
random moments; every sequence number that arrived must be in its log.
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd

from accessnet.audio import packet, parse

ROOT = Path(__file__).resolve().parent.parent


def test_packet_roundtrip():
    data = packet(70_000, 1_795_398_871_023_178_696, 40)
    assert len(data) == 12 + 40
    assert parse(data) == (70_000, 1_795_398_871_023_178_696)
    assert int.from_bytes(data[2:4], "big") == 70_000 & 0xFFFF  # RTP sequence number wraps, ours does not


def test_stopped_sender_logs_every_packet_it_sent(tmp_path):
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", 0))
    rx.settimeout(0.2)
    port = rx.getsockname()[1]
    arrived: set[int] = set()
    reading = threading.Event()
    reading.set()

    def read():  # drain all the time: a full socket buffer would hide the last packets
        while reading.is_set():
            try:
                arrived.add(parse(rx.recv(2048))[0])
            except TimeoutError:
                pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rng = random.Random(7)
    for k in range(8):
        log = tmp_path / f"tx{k}.csv"
        p = subprocess.Popen([sys.executable, "-m", "accessnet.audio", "send", "--dst", "127.0.0.1", "--port",
                              str(port), "--interval-ms", "0.02", "--duration", "30", "--log", str(log)],
                             cwd=ROOT / "mininet")
        time.sleep(0.6 + rng.random() * 0.3)
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=10) == 0
        time.sleep(0.3)  # the reader has drained the socket
        got = set(arrived)
        arrived.clear()
        logged = set(pd.read_csv(log)["seq"])
        assert len(got) > 1000, f"only {len(got)} arrived"
        assert got <= logged, f"run {k}: sent but not logged: {sorted(got - logged)[:5]}"
    reading.clear()
    reader.join()
