/* The headers on the wire, shared by the v1model program and the TNA program
 * (p4src/tofino/): Ethernet, IPv4, IPv6, TCP, UDP and the telemetry record. */
#ifndef _WIRE_P4_
#define _WIRE_P4_

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<1>  flag_rsvd;
    bit<1>  flag_df;
    bit<1>  flag_mf;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header ipv4_options_t {
    varbit<320> options;   // IHL up to 15: 40 bytes of options
}

/* IPv6's fixed header (RFC 8200); its traffic class split as IPv4's TOS byte is (DSCP, ECN). */
header ipv6_t {
    bit<4>   version;
    bit<6>   dscp;
    bit<2>   ecn;
    bit<20>  flowLabel;
    bit<16>  payloadLen;
    bit<8>   nextHdr;
    bit<8>   hopLimit;
    bit<128> srcAddr;
    bit<128> dstAddr;
}

header tcp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<32> seqNo;
    bit<32> ackNo;
    bit<4>  dataOffset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgentPtr;
}

/* One byte of TCP options. A SYN's options are walked byte by byte (parser.p4)
 * into a stack of these, so they leave the switch exactly as they came. */
header tcp_opt_t {
    bit<8> b;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* The 64-byte telemetry record (docs/telemetry.md, refmodel/telemetry.py). */
header telemetry_t {
    bit<8>  version;
    bit<8>  aqm;
    bit<8>  decision;
    bit<8>  reason;
    bit<8>  cls;
    bit<8>  tflags;
    bit<16> length;
    bit<32> seq;
    bit<32> rand;
    bit<64> ts_ns;
    bit<32> sojourn_ns;
    bit<32> backlog_ns;
    bit<32> src;
    bit<32> dst;
    bit<16> sport;
    bit<16> dport;
    bit<8>  proto;
    bit<8>  ipver;     // 6 for an IPv6 packet (src, dst: its addresses' low 32 bits), else 0
    bit<16> link;      // the access link (bottleneck.p4's link_of); was padding: 0 with one link
    bit<64> s1;
    bit<64> s2;
}

#endif
