"""A two-port forwarder for tests/test_irto.py that drops chosen TCP segments.

    python irto_dropper.py IF_A IF_B [synack=N] [data=N]

Forwards every frame between IF_A and IF_B (AF_PACKET sockets, run inside the test's middle namespace) and
drops the first N SYN-ACKs (``synack=N``) and the first N TCP segments with payload sent by the server,
the SYN-ACK's sender (``data=N``), over IPv4 or IPv6 (``experiments.iplayer``). Prints ``ready`` once both
sockets are bound and one line per drop, ``drop <what> <time.time()>``, on stdout.
"""

from __future__ import annotations

import os
import select
import socket
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path[:0] = [os.path.join(ROOT, "mininet"), ROOT]
from accessnet.rawsock import packet_socket  # noqa: E402
from experiments.iplayer import PROTO_TCP, ip_layer  # noqa: E402

PACKET_OUTGOING = 4


def classify(frame: bytes) -> str | None:
    """'synack', 'data' (TCP payload) or None."""
    ip = ip_layer(frame)
    if ip is None or ip.proto != PROTO_TCP or ip.later_fragment or len(frame) < ip.l4 + 14:
        return None
    flags = frame[ip.l4 + 13]
    off = (frame[ip.l4 + 12] >> 4) * 4
    if flags & 0x12 == 0x12:
        return "synack"
    return "data" if ip.l4_len - off > 0 else None


def main() -> None:
    a, b = sys.argv[1], sys.argv[2]
    budget = {"synack": 0, "data": 0}
    for arg in sys.argv[3:]:
        k, v = arg.split("=")
        budget[k] = int(v)
    sa, sb = packet_socket(a), packet_socket(b)
    peer = {sa: sb, sb: sa}
    server_mac = None  # the SYN-ACK's source: only its data segments count
    print("ready", flush=True)
    while True:
        ready, _, _ = select.select([sa, sb], [], [])
        for s in ready:
            frame, addr = s.recvfrom(65535)
            if addr[2] == PACKET_OUTGOING:
                continue
            kind = classify(frame)
            if kind == "synack":
                server_mac = frame[6:12]
            if kind == "data" and frame[6:12] != server_mac:
                kind = None
            if kind and budget.get(kind, 0) > 0:
                budget[kind] -= 1
                print(f"drop {kind} {time.time():.6f}", flush=True)
                continue
            peer[s].send(frame)


if __name__ == "__main__":
    main()
