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

#if WITH_IWA
// the SYN's option headers in PHV, not CLOTs (bf-asm crashed on their CLOTs: "No length for clot")
@do_not_use_clot("ingress", "hdr.opt12")
@do_not_use_clot("ingress", "hdr.opt20")
@do_not_use_clot("ingress", "hdr.opt24")
#endif
parser TnaIngressParser(packet_in pkt, out tna_headers_t hdr, out tna_metadata_t md,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
#if WITH_IWA
    Checksum() tcp_csum;   // the TCP checksum's residual without the window field (iwa.p4 rewrites it)
#endif
    state start {
        pkt.extract(ig_intr_md);
        md.pass2.setInvalid();
#if WITH_IWA
        md.iwa.ws_shift = 0;
        md.iwa.ws_where = 0;
        md.iwa.ws_seen = 0;
        md.iwa.opts_known = 0;
        md.iwa.csum_res = 0;
#endif
        md.tmirror.setInvalid();
        md.tick = 0;
        md.second = 0;
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_pass2;
            default: parse_port_metadata;
        }
    }

    state parse_pass2 {
        // (with IWA, an upstream ACK's second pass reads the same 96 bits as iwa_pass2_h: iwa_upstream.p4)
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
#if WITH_IWA && IWA_GRANT_EGRESS
            TICK_PORT: parse_tick_or_recirc;
#else
            TICK_PORT: parse_tick;
#endif
            default: parse_ethernet;
        }
    }

#if WITH_IWA && IWA_GRANT_EGRESS
    // the generator's port is the pipe's recirculation port too: a recirculated ACK carries IWA's mark where a
    // tick's header has two zero bits (iwa_types.p4)
    state parse_tick_or_recirc {
        transition select(pkt.lookahead<bit<8>>()) {
            IWA_RECIRC_MARK: parse_iwa_recirc;
            default: parse_tick;
        }
    }

    // an upstream ACK's second pass after egress's grant: its ingress port, then the 96 bits as pass2_h
    state parse_iwa_recirc {
        pkt.extract(hdr.iwa_rc);
        pkt.extract(md.pass2);
        md.second = 1;
        transition parse_ethernet;
    }
#endif

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
#if WITH_IWA
        tcp_csum.subtract({hdr.tcp.checksum});
        tcp_csum.subtract({hdr.tcp.window});
        tcp_csum.subtract_all_and_deposit(md.iwa.csum_res);
        // a SYN's options: the layouts iwa_types.p4 lists, each a fixed state; no options: no window scale
        transition select(hdr.tcp.flags[1:1], hdr.tcp.dataOffset) {
            (1, 5): syn_no_options;
            (1, 8): syn_opt12;
            (1, 10): syn_opt20;
            (1, 11): syn_opt24;
            default: accept;
        }
#else
        transition accept;
#endif
    }

#if WITH_IWA
    state syn_no_options {
        md.iwa.opts_known = 1;
        transition accept;
    }

    state syn_opt12 {
        pkt.extract(hdr.opt12);
        transition select(hdr.opt12.b_kind, hdr.opt12.b_len, hdr.opt12.c_kind, hdr.opt12.c_len) {
            (3, 3, _, _): syn_ws12b;      // Windows
            (_, _, 3, 3): syn_ws12c;      // Linux without timestamps
            default: accept;
        }
    }

    state syn_ws12b {
        md.iwa.opts_known = 1;
        md.iwa.ws_seen = 1;
        md.iwa.ws_where = 1;   // ingress takes the shift from hdr.opt12.b_shift (no historic data here)
        transition accept;
    }

    state syn_ws12c {
        md.iwa.opts_known = 1;
        md.iwa.ws_seen = 1;
        md.iwa.ws_where = 2;   // ingress takes the shift from hdr.opt12.c_shift (no historic data here)
        transition accept;
    }

    state syn_opt20 {
        pkt.extract(hdr.opt20);
        transition select(hdr.opt20.e_kind, hdr.opt20.e_len) {
            (3, 3): syn_ws20;            // Linux
            default: accept;
        }
    }

    state syn_ws20 {
        md.iwa.opts_known = 1;
        md.iwa.ws_seen = 1;
        md.iwa.ws_where = 3;   // ingress takes the shift from hdr.opt20.e_shift (no historic data here)
        transition accept;
    }

    state syn_opt24 {
        pkt.extract(hdr.opt24);
        transition select(hdr.opt24.b_kind, hdr.opt24.b_len) {
            (3, 3): syn_ws24;            // macOS
            default: accept;
        }
    }

    state syn_ws24 {
        md.iwa.opts_known = 1;
        md.iwa.ws_seen = 1;
        md.iwa.ws_where = 4;   // ingress takes the shift from hdr.opt24.b_shift (no historic data here)
        transition accept;
    }
#endif

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
#if WITH_IWA
    Checksum() tcp_checksum;    // IWA rewrote an upstream ACK's window: the parser's residual and the new window
#endif

    apply {
#if WITH_IWA
        if (md.iwa.rewrite == 1) {
            hdr.tcp.checksum = tcp_checksum.update({hdr.tcp.window, md.iwa.csum_res});
        }
#endif
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
#if WITH_IWA && IWA_GRANT_EGRESS
        pkt.emit(hdr.iwa_b);      // an upstream ACK's first pass, to egress's grant (iwa_egress.p4)
#endif
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
#if WITH_IWA
        pkt.emit(hdr.opt12);
        pkt.emit(hdr.opt20);
        pkt.emit(hdr.opt24);
#endif
        pkt.emit(hdr.udp);
    }
}

parser TnaEgressParser(packet_in pkt, out tna_egress_headers_t hdr, out tna_egress_metadata_t md,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) {
            BRIDGE_TELEMETRY: parse_telemetry_copy;
#if WITH_IWA && IWA_GRANT_EGRESS
            BRIDGE_IWA: parse_iwa_bridge;
#endif
            default: parse_bridge;
        }
    }

    state parse_bridge {
        pkt.extract(hdr.bridge);
        transition accept;
    }

#if WITH_IWA && IWA_GRANT_EGRESS
    // an upstream ACK's first pass: the grant's inputs (iwa_egress.p4); the packet's own bytes follow unparsed
    state parse_iwa_bridge {
        pkt.extract(hdr.iwa_b);
        // the grant's words, as the parser writes them (no stage; the flags: IwaGrantEgress's from_bridge)
        md.cfg.rate_class = hdr.iwa_b.rate_class;
        md.iwa.scale = hdr.iwa_b.scale;
        md.iwa.ack = hdr.iwa_b.ack;
        md.iwa.own = hdr.iwa_b.own;
        md.iwa.edge = hdr.iwa_b.edge;
        md.iwa.win32 = hdr.iwa_b.win32;
        md.iwa.acked = hdr.iwa_b.acked;
        md.iwa.cfg.mss = hdr.iwa_b.mss;
        md.iwa.cfg.iw_min = hdr.iwa_b.iw_min;
        md.iwa.res_cur = hdr.iwa_b.res_cur;
        md.iwa.res_old = hdr.iwa_b.res_old;
        md.iwa.cfg.target_ns = hdr.iwa_b.target_ns;
        md.iwa.mtu_ns = hdr.iwa_b.mtu_ns;
        md.iwa.vq = hdr.iwa_b.vq;
        md.iwa.now = hdr.iwa_b.now;
        md.iwa.backlog = hdr.iwa_b.backlog;
        md.iwa.nflows = hdr.iwa_b.nflows;
        md.iwa.span = hdr.iwa_b.span;
        md.iwa.end = hdr.iwa_b.end;
        md.iwa.state = hdr.iwa_b.state;
        transition accept;
    }
#endif

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
#if WITH_IWA && IWA_GRANT_EGRESS
        pkt.emit(hdr.iwa_r);      // a recirculated ACK's pass-2 header (iwa_egress.p4)
#endif
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.telemetry);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.udp);
    }
}

#endif
