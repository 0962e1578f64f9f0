"""Whole frames from an AF_PACKET socket, VLAN tags included.

Linux takes a frame's VLAN tag out of the packet data before any packet socket sees it (in software too,
whatever the interface's offload settings) and hands it over as ancillary data (PACKET_AUXDATA); libpcap
puts it back, a plain ``recvfrom`` does not: a tagged frame would look untagged. ``recv_frame`` puts the
tag back where it was, as BMv2 (through libpcap) sees the frame.
"""

from __future__ import annotations

import socket
import struct

SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
AUXDATA = struct.Struct("=IIIHHHH")  # tp_status, tp_len, tp_snaplen, tp_mac, tp_net, tp_vlan_tci, tp_vlan_tpid


ETH_P_ALL = 0x0003


def packet_socket(ifname: str) -> socket.socket:
    """A raw socket receiving every frame of ``ifname`` and nothing else. Opened with protocol 0 (it receives
    nothing) and bound to the interface and ETH_P_ALL in one step: a socket opened with ETH_P_ALL receives
    from every interface until its bind, and kept such a frame (e.g. one from the loopback)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((ifname, ETH_P_ALL))  # Python byte-swaps the protocol of an AF_PACKET address itself
    return s


def enable_auxdata(sock: socket.socket) -> None:
    sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)


def retag(frame: bytes, ancdata) -> bytes:
    """The frame with the VLAN tag the kernel moved into the auxiliary data put back after the MACs."""
    for level, kind, data in ancdata:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= AUXDATA.size:
            status, _, _, _, _, tci, tpid = AUXDATA.unpack_from(data)
            if status & TP_STATUS_VLAN_VALID or tci:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else 0x8100
                return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


def recv_frame(sock: socket.socket, size: int = 65535) -> tuple[bytes, tuple]:
    """Like ``recvfrom``, VLAN tag restored (the socket must have had ``enable_auxdata``)."""
    frame, anc, _flags, addr = sock.recvmsg(size, socket.CMSG_SPACE(AUXDATA.size))
    return retag(frame, anc), addr
