/* Rewrite the TCP window of an upstream ACK (IWA's start shaping) and patch
 * the TCP checksum incrementally (checksum.p4), so the payload never has to
 * be summed again. refmodel/packet.py (set_tcp_window)
 * is the twin. */
#ifndef _TCP_WINDOW_P4_
#define _TCP_WINDOW_P4_

control TcpWindowRewrite(inout headers_t hdr, in bit<16> window) {
    apply {
        hdr.tcp.checksum = incremental_checksum(hdr.tcp.checksum, hdr.tcp.window, window);
        hdr.tcp.window = window;
    }
}

#endif
