/* The starting-flow tracker: which TCP segments belong to a flow's start
 * (initial window and slow start), which are retransmissions, which belong to
 * established flows. A flow enters the table at the server's SYN-ACK; the
 * slot is crc32(5-tuple) mod FLOW_SLOTS and the full CRC is its signature.
 * Aging: a slot older than age_ns is free. Collision: a SYN-ACK that meets a
 * live foreign flow leaves the slot alone; the new flow counts as established
 * (fail open). Malformed segments never read or write the table.
 * refmodel/flows.py is the executable twin. */
#ifndef _FLOW_TRACKER_P4_
#define _FLOW_TRACKER_P4_

control FlowTracker(in headers_t hdr, in bool tcp_ok, in bit<16> tcp_payload, in bit<64> now,
                    in iwa_cfg_t cfg, out track_t trk) {
    register<bit<32>>(FLOW_SLOTS) flow_sig;
    register<bit<64>>(FLOW_SLOTS) flow_start;
    register<bit<32>>(FLOW_SLOTS) flow_isn;     // first sequence number of data
    register<bit<32>>(FLOW_SLOTS) flow_seqhi;   // highest sequence number sent

    apply {
        trk.flags = 0;
        trk.progress = 0;
        trk.slot = 0;
        trk.payload = 0;
        if (hdr.udp.isValid()) {
            trk.cls = CLASS_UDP;
        } else if (!tcp_ok) {
            trk.cls = CLASS_OTHER;
        } else {
            bit<32> h;
            hash(h, HashAlgorithm.crc32, (bit<32>)0,
                 { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.ipv4.protocol },
                 (bit<64>)4294967296);
            bit<32> slot = h & (FLOW_SLOTS - 1);
            trk.slot = slot;
            bit<32> sig;
            bit<64> start;
            bit<32> isn;
            bit<32> seqhi;
            flow_sig.read(sig, slot);
            flow_start.read(start, slot);
            flow_isn.read(isn, slot);
            flow_seqhi.read(seqhi, slot);
            bit<64> age = now - start;
            bool live = sig != 0 && age <= (bit<64>)cfg.age_ns;

            if (hdr.tcp.flags & 0x12 == 0x12) {            // SYN + ACK
                trk.cls = CLASS_TCP_CTRL;
                if (!live || sig == h) {
                    bit<32> first = hdr.tcp.seqNo + 1;
                    flow_sig.write(slot, h);
                    flow_start.write(slot, now);
                    flow_isn.write(slot, first);
                    flow_seqhi.write(slot, first);
                    trk.flags = TRACK_TRACKED | TRACK_NEW_FLOW;
                } else {
                    trk.flags = TRACK_COLLISION;
                }
            } else {
                bool tracked = live && sig == h;
                if (tcp_payload == 0) {
                    trk.cls = CLASS_TCP_CTRL;
                    if (tracked) { trk.flags = TRACK_TRACKED; }
                } else if (!tracked) {
                    trk.cls = CLASS_TCP_EST;
                } else {
                    bit<32> seq_end = hdr.tcp.seqNo + (bit<32>)tcp_payload;
                    trk.progress = hdr.tcp.seqNo - isn;
                    trk.payload = (bit<32>)tcp_payload;
                    trk.flags = TRACK_TRACKED;
                    if (seqhi - seq_end < 0x80000000) {      // seq_end <= seqhi (mod 2^32)
                        trk.cls = CLASS_TCP_RTX;
                        trk.flags = TRACK_TRACKED | TRACK_RTX;
                    } else {
                        flow_seqhi.write(slot, seq_end);
                        if (age < (bit<64>)cfg.window_ns && trk.progress < cfg.start_bytes) {
                            trk.cls = CLASS_TCP_START;
                            trk.flags = TRACK_TRACKED | TRACK_STARTING;
                        } else {
                            trk.cls = CLASS_TCP_EST;
                        }
                    }
                }
            }
        }
    }
}

#endif
