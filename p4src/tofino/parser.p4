/* Parsers and deparsers of the TNA program.
 * Ingress: a resubmitted packet's second-pass header, else the port metadata;
 * a packet-generator tick (types.p4: TICK_PORT), else
 * Ethernet, IPv4 without options, TCP or UDP of unfragmented packets. IPv4 options
 * and other frames stay unparsed and are forwarded unmodelled (the v1model program
 * parses options; the access links' traffic carries none).
 * Egress: the bridged byte says whether this is a forwarded packet or a telemetry
 * mirror copy, whose record egress.p4 builds. */
#ifndef _TNA_PARSER_P4_
#define _TNA_PARSER_P4_

parser TnaIngressParser(packet_in pkt, out tna_headers_t hdr, out tna_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        md.pass2.setInvalid();
        md.tmirror.setInvalid();
        md.tick = 0;
        md.second = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_pass2;
            default: parse_port_metadata;
        }
    }

    state parse_pass2 {
        pkt.extract(md.pass2);
        md.second = 1;
        transition select(ig_intr_md.ingress_port[6:0]) {
            TICK_PORT: parse_tick;          // a tick's second pass (PIE's update: pie.p4)
            default: parse_ethernet;
        }
    }

    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port[6:0]) {
            TICK_PORT: parse_tick;
            default: parse_ethernet;
        }
    }

    state parse_tick {
        pkt.extract(hdr.tick);
        md.tick = 1;
        transition accept;
    }

    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.flag_mf, hdr.ipv4.fragOffset,
                          hdr.ipv4.protocol) {
            (4, 5, 0, 0, PROTO_TCP): parse_tcp;
            (4, 5, 0, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control TnaIngressDeparser(packet_out pkt, inout tna_headers_t hdr, in tna_metadata_t md,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Mirror() telemetry_mirror;
    Resubmit() pass2;
    Checksum() ipv4_checksum;   // an ECN mark changed the header

    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdrChecksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.totalLen,
                hdr.ipv4.identification, hdr.ipv4.flag_rsvd, hdr.ipv4.flag_df, hdr.ipv4.flag_mf,
                hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr});
        }
        if (ig_dprsr_md.mirror_type == MIRROR_TELEMETRY) {
            telemetry_mirror.emit<telemetry_mirror_h>(md.mirror_session, md.tmirror);
        }
        if (ig_dprsr_md.resubmit_type == RESUBMIT_PASS2) {
            pass2.emit<pass2_h>(md.pass2);
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

parser TnaEgressParser(packet_in pkt, out tna_egress_headers_t hdr, out tna_egress_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) {
            BRIDGE_TELEMETRY: parse_telemetry_copy;
            default: parse_bridge;
        }
    }

    state parse_bridge {
        pkt.extract(hdr.bridge);
        transition accept;
    }

    // A mirror copy: the record's fields from ingress, then the packet's own headers.
    state parse_telemetry_copy {
        pkt.extract(hdr.tmirror);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.flag_mf, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, 0, PROTO_TCP): parse_tcp;
            (5, 0, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        pkt.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control TnaEgressDeparser(packet_out pkt, inout tna_egress_headers_t hdr, in tna_egress_metadata_t md,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.telemetry);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

#endif
