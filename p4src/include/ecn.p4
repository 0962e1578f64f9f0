/* ECN marking: set CE and patch the IPv4 checksum incrementally (RFC 1624,
 * HC' = ~(~HC + ~m + m')), so IP options need no checksum recomputation. */
#ifndef _ECN_P4_
#define _ECN_P4_

control EcnMark(inout headers_t hdr) {
    apply {
        bit<16> old_word = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
        hdr.ipv4.ecn = 3;
        bit<16> new_word = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
        bit<32> s = (bit<32>)(~hdr.ipv4.hdrChecksum) + (bit<32>)(~old_word) + (bit<32>)new_word;
        s = (s & 0xFFFF) + (s >> 16);
        s = (s & 0xFFFF) + (s >> 16);
        hdr.ipv4.hdrChecksum = ~(bit<16>)s;
    }
}

#endif
