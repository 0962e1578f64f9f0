/* Rewrite the TCP window of an upstream ACK (IWA's start shaping) and patch
 * the TCP checksum incrementally (RFC 1624: HC' = ~(~HC + ~m + m')), so the
 * payload never has to be summed again. refmodel/packet.py (set_tcp_window)
 * is the twin. */
#ifndef _TCP_WINDOW_P4_
#define _TCP_WINDOW_P4_

control TcpWindowRewrite(inout headers_t hdr, in bit<16> window) {
    apply {
        bit<16> old_word = hdr.tcp.window;
        hdr.tcp.window = window;
        bit<32> s = (bit<32>)(~hdr.tcp.checksum) + (bit<32>)(~old_word) + (bit<32>)window;
        s = (s & 0xFFFF) + (s >> 16);
        s = (s & 0xFFFF) + (s >> 16);
        hdr.tcp.checksum = ~(bit<16>)s;
    }
}

#endif
