/* ECN marking: set CE; in IPv4 patch the header checksum incrementally
 * (checksum.p4), so IP options need no checksum recomputation; IPv6 has none. */
#ifndef _ECN_P4_
#define _ECN_P4_

control EcnMark(inout headers_t hdr) {
    apply {
        if (hdr.ipv6.isValid()) {
            hdr.ipv6.ecn = 3;
            return;
        }
        bit<16> old_word = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
        hdr.ipv4.ecn = 3;
        bit<16> new_word = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
        hdr.ipv4.hdrChecksum = incremental_checksum(hdr.ipv4.hdrChecksum, old_word, new_word);
    }
}

#endif
