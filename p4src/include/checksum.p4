/* Incremental checksum update (RFC 1624, eqn. 3): HC' = ~(~HC + ~m + m') when
 * one 16-bit word m of the covered data becomes m'. Used by the ECN mark (IPv4
 * header checksum) and the window rewrite (TCP checksum), so neither sums its
 * header or payload again. refmodel/packet.py (incremental_checksum) is the twin. */
#ifndef _CHECKSUM_P4_
#define _CHECKSUM_P4_

bit<16> incremental_checksum(in bit<16> csum, in bit<16> old_word, in bit<16> new_word) {
    bit<32> s = (bit<32>)(~csum) + (bit<32>)(~old_word) + (bit<32>)new_word;
    s = (s & 0xFFFF) + (s >> 16);
    s = (s & 0xFFFF) + (s >> 16);
    return ~(bit<16>)s;
}

#endif
