/* Parser: Ethernet, IPv4 (with options) or IPv6, TCP or UDP of unfragmented
 * packets. An IPv6 packet whose next header is neither TCP nor UDP (an
 * extension header, a fragment, ICMPv6) stays at its fixed header: ingress
 * classifies it OTHER, and under IWA the standing-queue control holds it.
 * A header that does not fit stays invalid; BMv2 then sets parser_error and
 * still hands the packet to ingress, which classifies it OTHER.
 * A SYN's TCP options are walked byte by byte for the window-scale option
 * (RFC 7323), which IWA's start shaping needs to read the client's windows:
 * EOL ends the list, NOP is one byte, every other option is kind, length and
 * length - 2 bytes; a length below 2 ends the walk, and so does the end of
 * the options. Other segments' options stay payload: nothing else needs them.
 * refmodel/packet.py (window_scale_option) walks the same way. */
#ifndef _PARSER_P4_
#define _PARSER_P4_

error { IPv4HeaderTooShort }

parser BottleneckParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        transition select(hdr.ipv6.version, hdr.ipv6.nextHdr) {
            (6, PROTO_TCP): parse_tcp;
            (6, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.version, hdr.ipv4.ihl) {
            (4, 5): parse_l4;
            (4, _): parse_ipv4_options;   // IHL 0..4 (bad) or 6..15 (options)
            default: accept;
        }
    }

    state parse_ipv4_options {
        verify(hdr.ipv4.ihl > 5, error.IPv4HeaderTooShort);
        packet.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        transition parse_l4;
    }

    // Fragments carry no (or a partial) transport header: leave them unparsed.
    state parse_l4 {
        transition select(hdr.ipv4.flag_mf, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (0, 0, PROTO_TCP): parse_tcp;
            (0, 0, PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        meta.ws_seen = false;
        meta.ws_shift = 0;
        meta.opt_left = ((bit<8>)hdr.tcp.dataOffset << 2) - 20;
        transition select(hdr.tcp.flags & TCP_FLAG_SYN, hdr.tcp.dataOffset) {
            (0, _): accept;
            (_, 0 &&& 0xC): accept;                 // data offset 0..3: malformed
            (_, 4): accept;
            (_, 5): accept;                         // no options
            default: opt_kind;
        }
    }

    state opt_kind {
        transition select(meta.opt_left) {
            0: accept;
            default: opt_kind_byte;
        }
    }

    state opt_kind_byte {
        packet.extract(hdr.tcp_opts.next);
        meta.opt_left = meta.opt_left - 1;
        transition select(hdr.tcp_opts.last.b) {
            0: accept;                              // EOL
            1: opt_kind;                            // NOP
            3: opt_ws_len;
            default: opt_len;
        }
    }

    state opt_len {
        transition select(meta.opt_left) {
            0: accept;
            default: opt_len_byte;
        }
    }

    state opt_len_byte {
        packet.extract(hdr.tcp_opts.next);
        meta.opt_left = meta.opt_left - 1;
        meta.opt_skip = hdr.tcp_opts.last.b - 2;
        transition select(hdr.tcp_opts.last.b) {
            0: accept;                              // length below 2: malformed
            1: accept;
            default: opt_skip;
        }
    }

    state opt_skip {
        transition select(meta.opt_skip, meta.opt_left) {
            (0, _): opt_kind;
            (_, 0): accept;
            default: opt_skip_byte;
        }
    }

    state opt_skip_byte {
        packet.extract(hdr.tcp_opts.next);
        meta.opt_left = meta.opt_left - 1;
        meta.opt_skip = meta.opt_skip - 1;
        transition opt_skip;
    }

    state opt_ws_len {
        transition select(meta.opt_left) {
            0: accept;
            default: opt_ws_len_byte;
        }
    }

    state opt_ws_len_byte {
        packet.extract(hdr.tcp_opts.next);
        meta.opt_left = meta.opt_left - 1;
        meta.opt_skip = hdr.tcp_opts.last.b - 2;
        transition select(hdr.tcp_opts.last.b) {
            0: accept;
            1: accept;
            3: opt_ws_shift;
            default: opt_skip;                      // a window-scale option of another length: skipped
        }
    }

    state opt_ws_shift {
        transition select(meta.opt_left) {
            0: accept;
            default: opt_ws_shift_byte;
        }
    }

    state opt_ws_shift_byte {
        packet.extract(hdr.tcp_opts.next);
        meta.opt_left = meta.opt_left - 1;
        meta.ws_seen = true;
        meta.ws_shift = hdr.tcp_opts.last.b;
        transition opt_kind;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }
}

control BottleneckDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.telemetry);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.tcp);
        packet.emit(hdr.tcp_opts);
        packet.emit(hdr.udp);
    }
}

#endif
