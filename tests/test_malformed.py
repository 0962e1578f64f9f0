"""Odd and malformed frames pass or drop cleanly and never touch flow state."""

import copy

import pytest
from frames import CLIENT, LINUX_SYN, SERVER, client_syn, syn_ack, tcp
from scapy.all import ARP, IP, TCP, UDP, Ether, IPOption_NOP, Raw, raw

from refmodel import Decision, Pipeline, Route, TrafficClass
from refmodel.packet import incremental_checksum, parse, set_ecn_ce
from refmodel.params import pipeline_params

ROUTES = {1: Route(2, True), 2: Route(1, False)}


def fresh():
    p = Pipeline(ROUTES, pipeline_params(2e6, "iwa"))
    p.process(0, client_syn(5000, LINUX_SYN), 2)  # one tracked flow, shaped: its SYN was seen
    p.process(1_000, syn_ack(1000, ack=5001, options=[("MSS", 1460), ("WScale", 7)]), 1)
    return p


def snapshot(p):
    """All flow state: the tracker's and IWA's start shaper's (per-flow windows, grants, reserve)."""
    return copy.deepcopy((vars(p.flows), vars(p.shaper)))


ODD = {
    "empty": b"",
    "runt": b"\x00" * 10,
    "arp": raw(Ether() / ARP()),
    "ipv6-ethertype": raw(Ether(type=0x86DD) / Raw(b"\x60" + b"\x00" * 60)),
    "truncated-ipv4": tcp()[:14 + 12],
    "truncated-tcp": tcp()[:14 + 20 + 8],
    "ihl-below-5": raw(Ether() / IP(src=SERVER, dst=CLIENT, ihl=4) / TCP() / Raw(b"x" * 10)),
    "version-6-in-ipv4-ethertype": raw(Ether() / IP(src=SERVER, dst=CLIENT, version=6) / TCP()),
    "options-longer-than-frame": raw(Ether() / IP(src=SERVER, dst=CLIENT, ihl=15, options=[]))[:14 + 24],
    "first-fragment": raw(Ether() / IP(src=SERVER, dst=CLIENT, flags="MF") / TCP(sport=80, dport=40000, seq=1001)
                          / Raw(b"x" * 100)),
    "later-fragment": raw(Ether() / IP(src=SERVER, dst=CLIENT, frag=100, proto=6) / Raw(b"x" * 100)),
    "tcp-doff-below-5": raw(Ether() / IP(src=SERVER, dst=CLIENT) / TCP(sport=80, dport=40000, seq=1001, dataofs=4)
                            / Raw(b"x" * 100)),
    "ip-total-len-too-small": raw(Ether() / IP(src=SERVER, dst=CLIENT, len=30) / TCP(sport=80, dport=40000, seq=1001)
                                  / Raw(b"x" * 100)),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_frames_are_forwarded_as_other_without_touching_flow_state(name):
    p = fresh()
    before = snapshot(p)
    r = p.process(1_000_000, ODD[name], 1)
    assert r.cls == TrafficClass.OTHER
    assert r.decision == Decision.PASS and r.egress == 2
    assert snapshot(p) == before


@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_frames_upstream_pass_unchanged_without_touching_flow_state(name):
    p = Pipeline(ROUTES, pipeline_params(2e6, "iwa"))
    p.process(0, client_syn(5000, LINUX_SYN), 2)  # the client's SYN was seen: its flow is shaped
    p.process(22_000_000, syn_ack(1000, ack=5001, options=[("MSS", 1460), ("WScale", 7)]), 1)
    before = snapshot(p)
    r = p.process(100_000_000, ODD[name], 2)
    assert r.cls == TrafficClass.OTHER
    assert r.decision == Decision.BYPASS and r.egress == 1 and r.frame == ODD[name]
    assert snapshot(p) == before


def test_ip_options_still_parse_the_transport_header():
    f = raw(Ether() / IP(src=SERVER, dst=CLIENT, options=[IPOption_NOP()] * 4) / TCP(sport=80, dport=40000, seq=1001)
            / Raw(b"x" * 100))
    pkt = parse(f)
    assert pkt.ihl == 6 and pkt.tcp_valid and pkt.tcp_payload == 100
    assert fresh().process(1_000_000, f, 1).cls == TrafficClass.TCP_START


def test_zero_length_tcp_is_control():
    r = fresh().process(1_000_000, tcp(1001, payload=0), 1)
    assert r.cls == TrafficClass.TCP_CTRL and r.decision == Decision.PASS


def test_udp_is_its_own_class():
    f = raw(Ether() / IP(src=SERVER, dst=CLIENT) / UDP() / Raw(b"x"))
    assert fresh().process(0, f, 1).cls == TrafficClass.UDP


def test_ecn_mark_keeps_the_ipv4_checksum_valid():
    f = raw(Ether() / IP(src=SERVER, dst=CLIENT, tos=0x02, options=[IPOption_NOP()] * 4) / TCP() / Raw(b"x"))
    marked = Ether(set_ecn_ce(f))
    assert marked[IP].tos & 3 == 3
    recomputed = IP(raw(marked[IP]))
    del recomputed.chksum
    assert IP(raw(recomputed)).chksum == marked[IP].chksum


def test_incremental_checksum_rfc1624_example():
    # RFC 1624 section 4: HC = 0xDD2F, m = 0x5555 -> m' = 0x3285 gives HC' = 0x0000
    assert incremental_checksum(0xDD2F, 0x5555, 0x3285) == 0x0000
