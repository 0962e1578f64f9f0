"""experiments.iplayer: the IP layer of captured frames, IPv4 or IPv6, against Scapy's own dissection of frames
it built (addresses, transport, where the transport starts, its length by the IP header)."""

from __future__ import annotations

import ipaddress

import pytest
from frames import MACS
from scapy.all import (ARP, IP, TCP, UDP, Dot1Q, Ether, ICMPv6MLReport2, IPOption_NOP, IPv6, IPv6ExtHdrDestOpt,
                       IPv6ExtHdrFragment, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting, Raw, RouterAlert, raw)

from experiments.iplayer import ip_layer
from experiments.metrics import tcp_tsval

SRV6, CLI6 = "fd00::1", "fd00::2"
SRV4, CLI4 = "10.0.0.1", "10.0.0.2"


def eth() -> Ether:
    return Ether(**MACS)  # explicit MACs: Scapy would resolve IPv6 neighbours on the host's network


def check(frame: bytes, version: int, proto: int, transport) -> None:
    """ip_layer's view of ``frame`` equals Scapy's: family, addresses, protocol, the transport's offset (where
    Scapy's transport layer's bytes start) and length (the transport's bytes by Scapy)."""
    got = ip_layer(frame)
    pkt = Ether(frame)
    ip = pkt[IP] if version == 4 else pkt[IPv6]
    layer = pkt[transport]
    assert got is not None and got.version == version and got.proto == proto
    assert got.address("src") == ipaddress.ip_address(ip.src) and got.address("dst") == ipaddress.ip_address(ip.dst)
    assert got.src == int(ipaddress.ip_address(ip.src))
    assert frame[got.l4:] == raw(layer) and got.l4_len == len(raw(layer))
    assert not got.later_fragment


@pytest.mark.parametrize("version", [4, 6])
def test_tcp_and_udp_in_either_family(version):
    net = IP(src=SRV4, dst=CLI4, id=4242) if version == 4 else IPv6(src=SRV6, dst=CLI6)
    check(raw(eth() / net / TCP(sport=8080, dport=40000, flags="A") / Raw(b"x" * 100)), version, 6, TCP)
    check(raw(eth() / net / UDP(sport=5004, dport=5004) / Raw(b"a" * 52)), version, 17, UDP)
    got = ip_layer(raw(eth() / net / TCP() / Raw(b"x" * 10)))
    assert got.ip_id == (4242 if version == 4 else 0)  # IPv6 has no identification
    assert got.l4 == 14 + (20 if version == 4 else 40)


def test_ipv4_options_and_vlan_tags_move_the_transport():
    check(raw(eth() / IP(src=SRV4, dst=CLI4, options=[IPOption_NOP()] * 4) / TCP() / Raw(b"x")), 4, 6, TCP)
    assert ip_layer(raw(eth() / IP(options=[IPOption_NOP()] * 4) / TCP())).l4 == 14 + 24
    check(raw(eth() / Dot1Q(vlan=7) / IPv6(src=SRV6, dst=CLI6) / TCP() / Raw(b"x" * 7)), 6, 6, TCP)
    check(raw(eth() / Dot1Q(vlan=7) / Dot1Q(vlan=8) / IP(src=SRV4, dst=CLI4) / UDP() / Raw(b"x")), 4, 17, UDP)


@pytest.mark.parametrize("headers", [
    [IPv6ExtHdrHopByHop()],
    [IPv6ExtHdrHopByHop(), IPv6ExtHdrDestOpt()],
    [IPv6ExtHdrRouting(addresses=["fd00::9"]), IPv6ExtHdrDestOpt()],
    [IPv6ExtHdrFragment(offset=0, m=1, id=5)],
], ids=["hop-by-hop", "hbh+dest", "routing+dest", "first-fragment"])
def test_ipv6_extension_headers_are_walked_to_the_transport(headers):
    pkt = IPv6(src=SRV6, dst=CLI6)
    for h in headers:
        pkt = pkt / h
    check(raw(eth() / pkt / TCP(sport=1, dport=2) / Raw(b"y" * 33)), 6, 6, TCP)


def test_a_later_fragment_has_no_transport_and_mld_is_not_tcp():
    later6 = raw(eth() / IPv6(src=SRV6, dst=CLI6) / IPv6ExtHdrFragment(offset=10, nh=6) / Raw(b"z" * 64))
    assert ip_layer(later6).later_fragment and ip_layer(later6).proto == 6
    later4 = raw(eth() / IP(src=SRV4, dst=CLI4, frag=10, proto=6) / Raw(b"z" * 64))
    assert ip_layer(later4).later_fragment
    mld = raw(eth() / IPv6(src="::", dst="ff02::16", hlim=1) / IPv6ExtHdrHopByHop(options=[RouterAlert()])
              / ICMPv6MLReport2())  # what a host sends for its solicited-node group
    assert ip_layer(mld).proto == 58 and ip_layer(mld).l4 == 14 + 40 + 8


def test_the_transport_length_is_the_ip_headers_not_the_captures():
    """tcpdump's snap length (128 B) cuts a full segment; the length still comes from the IP header."""
    for net in (IP(src=SRV4, dst=CLI4), IPv6(src=SRV6, dst=CLI6)):
        frame = raw(eth() / net / TCP() / Raw(b"x" * 1400))
        assert ip_layer(frame[:128]).l4_len == ip_layer(frame).l4_len == 20 + 1400


def test_what_is_no_ip_frame():
    assert ip_layer(raw(eth() / ARP())) is None
    assert ip_layer(b"\xff" * 12 + b"\x88\xb5" + b"\x01" * 64) is None  # a telemetry record
    v6 = raw(eth() / IPv6(src=SRV6, dst=CLI6) / TCP())
    assert ip_layer(v6[:14 + 39]) is None  # cut inside the fixed header
    assert ip_layer(v6[:12] + b"\x08\x00" + v6[14:]) is None  # an IPv6 header under IPv4's ethertype
    hbh = raw(eth() / IPv6(src=SRV6, dst=CLI6) / IPv6ExtHdrHopByHop() / TCP())
    assert ip_layer(hbh[:14 + 40 + 4]) is None  # cut inside an extension header


def test_a_frame_inside_a_larger_buffer():
    frame = raw(eth() / IPv6(src=SRV6, dst=CLI6) / UDP(dport=5004) / Raw(b"q" * 10))
    buf = b"\x00" * 40 + frame + b"\xee" * 30
    got = ip_layer(buf, 40, 40 + len(frame))
    assert got.l4 == 40 + 54 and got.l4_len == 18 and buf[got.l4 + 2:got.l4 + 4] == (5004).to_bytes(2, "big")


def test_the_tcp_timestamp_is_found_among_the_options():
    for opts, want in (([("NOP", None), ("NOP", None), ("Timestamp", (123456, 7))], 123456),
                       ([("MSS", 1440), ("SAckOK", b""), ("Timestamp", (99, 0)), ("NOP", None), ("WScale", 9)], 99),
                       ([("MSS", 1440), ("NOP", None), ("WScale", 9)], 0), ([], 0)):
        frame = raw(eth() / IPv6(src=SRV6, dst=CLI6) / TCP(options=opts))
        got = ip_layer(frame)
        end = got.l4 + (frame[got.l4 + 12] >> 4) * 4
        assert tcp_tsval(frame, got.l4 + 20, end) == want, opts
        assert tcp_tsval(frame, got.l4 + 20, end - 3) in (0, want)  # cut by the capture: never a wrong value
