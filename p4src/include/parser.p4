/* Parser: Ethernet, IPv4 (with options), TCP or UDP of unfragmented packets.
 * A header that does not fit stays invalid; BMv2 then sets parser_error and
 * still hands the packet to ingress, which classifies it OTHER. */
#ifndef _PARSER_P4_
#define _PARSER_P4_

error { IPv4HeaderTooShort }

parser BottleneckParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
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
        transition accept;
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
        packet.emit(hdr.tcp);
        packet.emit(hdr.udp);
    }
}

#endif
