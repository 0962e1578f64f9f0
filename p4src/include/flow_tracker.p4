/* The flow tracker: which TCP connection a segment belongs to, in either
 * direction, and whether a downstream segment is new data or a
 * retransmission. A flow enters the table at the server's SYN-ACK; the slot
 * is crc32(server, client, server port, client port, proto) mod FLOW_SLOTS
 * (the addresses IPv4's or IPv6's, whichever the packet carries)
 * (upstream packets hash their fields swapped, so both directions meet in one
 * slot) and the full CRC is its signature. A slot holds its flow until another
 * takes it (a keep-alive connection reused after minutes is still its slot's);
 * a new flow may take a slot whose flow sent no data downstream for age_ns, or
 * closed (a FIN or RST from either side clears flow_seen). Collision: a SYN-ACK
 * that meets a live foreign flow leaves the slot alone (fail open: that flow is
 * never shaped and is the standing-queue control's). A
 * retransmitted SYN-ACK of a tracked flow changes nothing. Malformed segments
 * never read or write the table; upstream packets only read it, but a FIN or
 * RST, which frees the slot.
 * Downstream new data of a tracked flow leaves here as CLASS_TCP_START;
 * start_shaper.p4 moves it to CLASS_TCP_EST once the flow is past its start.
 * refmodel/flows.py is the executable twin. */
#ifndef _FLOW_TRACKER_P4_
#define _FLOW_TRACKER_P4_

control FlowTracker(in headers_t hdr, in bool tcp_ok, in bit<16> tcp_payload, in bit<1> downstream,
                    in bit<64> now, in iwa_cfg_t cfg, inout track_t trk) {
    register<bit<32>>(FLOW_SLOTS) flow_sig;
    register<bit<64>>(FLOW_SLOTS) flow_start;   // the SYN-ACK's time
    register<bit<64>>(FLOW_SLOTS) flow_seen;    // the flow's latest downstream data (0: closed, the slot is free)
    register<bit<32>>(FLOW_SLOTS) flow_isn;     // first sequence number of data
    register<bit<32>>(FLOW_SLOTS) flow_seqhi;   // highest sequence number sent

    apply {
        trk.flags = 0;
        trk.progress = 0;
        trk.slot = 0;
        trk.payload = 0;
        trk.hash = 0;
        trk.tracked = false;
        trk.isn = 0;
        trk.age = 0;
        trk.seqhi = 0;
        if (hdr.udp.isValid()) {
            trk.cls = CLASS_UDP;
        } else if (!tcp_ok) {
            trk.cls = CLASS_OTHER;
        } else {
            bit<32> h;
            if (hdr.ipv6.isValid() && downstream == 1) {
                hash(h, HashAlgorithm.crc32, (bit<32>)0,
                     { hdr.ipv6.srcAddr, hdr.ipv6.dstAddr, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.ipv6.nextHdr },
                     (bit<64>)4294967296);
            } else if (hdr.ipv6.isValid()) {
                hash(h, HashAlgorithm.crc32, (bit<32>)0,
                     { hdr.ipv6.dstAddr, hdr.ipv6.srcAddr, hdr.tcp.dstPort, hdr.tcp.srcPort, hdr.ipv6.nextHdr },
                     (bit<64>)4294967296);
            } else if (downstream == 1) {
                hash(h, HashAlgorithm.crc32, (bit<32>)0,
                     { hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.tcp.srcPort, hdr.tcp.dstPort, hdr.ipv4.protocol },
                     (bit<64>)4294967296);
            } else {
                hash(h, HashAlgorithm.crc32, (bit<32>)0,
                     { hdr.ipv4.dstAddr, hdr.ipv4.srcAddr, hdr.tcp.dstPort, hdr.tcp.srcPort, hdr.ipv4.protocol },
                     (bit<64>)4294967296);
            }
            bit<32> slot = h & (FLOW_SLOTS - 1);
            trk.slot = slot;
            trk.hash = h;
            bit<32> sig;
            bit<64> start;
            bit<64> seen;
            bit<32> isn;
            bit<32> seqhi;
            flow_sig.read(sig, slot);
            flow_start.read(start, slot);
            flow_seen.read(seen, slot);
            flow_isn.read(isn, slot);
            flow_seqhi.read(seqhi, slot);
            bit<64> age = now - start;
            bool live = sig != 0 && seen != 0 && now - seen <= (bit<64>)cfg.age_ns;
            trk.tracked = sig != 0 && sig == h;
            trk.isn = isn;
            trk.age = age;
            trk.seqhi = seqhi;
            trk.cls = tcp_payload > 0 ? CLASS_TCP_EST : CLASS_TCP_CTRL;
            bit<64> seen_new = seen;
            if (trk.tracked && hdr.tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
                seen_new = 0;                           // it closed: the slot is free for a new flow
            } else if (trk.tracked && downstream == 1 && tcp_payload > 0) {
                seen_new = now;                         // data: alive, the slot is kept age_ns from now
            }

            if (downstream == 0) {
                // upstream: only a close writes (start_shaper.p4 follows the client's SYN and ACKs)
            } else if (hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK) == (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
                trk.cls = CLASS_TCP_CTRL;
                bit<32> first = hdr.tcp.seqNo + 1;
                if (trk.tracked && isn == first) {
                    trk.flags = TRACK_TRACKED;              // retransmitted SYN-ACK: nothing changes
                } else if (live && sig != h) {
                    trk.flags = TRACK_COLLISION;
                    trk.tracked = false;
                } else {
                    flow_sig.write(slot, h);
                    flow_start.write(slot, now);
                    flow_isn.write(slot, first);
                    flow_seqhi.write(slot, first);
                    seen_new = now;
                    trk.flags = TRACK_TRACKED | TRACK_NEW_FLOW;
                    trk.tracked = true;
                    trk.isn = first;
                    trk.age = 0;
                    trk.seqhi = first;
                }
            } else if (tcp_payload == 0) {
                if (trk.tracked) { trk.flags = TRACK_TRACKED; }
            } else if (trk.tracked) {
                bit<32> seq_end = hdr.tcp.seqNo + (bit<32>)tcp_payload;
                trk.progress = hdr.tcp.seqNo - isn;
                trk.payload = (bit<32>)tcp_payload;
                trk.flags = TRACK_TRACKED;
                if (seqhi - seq_end < 0x80000000) {      // seq_end <= seqhi (mod 2^32)
                    trk.cls = CLASS_TCP_RTX;
                    trk.flags = TRACK_TRACKED | TRACK_RTX;
                } else {
                    flow_seqhi.write(slot, seq_end);
                    trk.cls = CLASS_TCP_START;
                    trk.flags = TRACK_TRACKED | TRACK_STARTING;
                }
            }
            flow_seen.write(slot, seen_new);
        }
    }
}

#endif
