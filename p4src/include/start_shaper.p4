/* IWA's start shaping: each flow's window state, and the room shaped flows
 * may still put in the queue (docs/iwa.md derives every rule).
 *
 * Per flow (same slot as flow_tracker.p4):
 *   flow_syn    the client's SYN: signature | seen | window-scale shift
 *   flow_syn_t  its time (ns, low 32 bits)
 *   flow_srtt   the server's side of the RTT (client SYN to SYN-ACK at the switch):
 *               how long the data a grant releases takes to arrive
 *   flow_state  the client's scale (if both SYN and SYN-ACK carried the option),
 *               SHAPE (the SYN was seen: the scale is known), ANNOUNCED (one
 *               frame reserved until its first ACK), ACKED (first ACK seen),
 *               EPOCH (parity of the reserve's epoch it reserved in), COUNTED (in
 *               iwa_flows: from its first ACK to the client's FIN or a RST)
 *   flow_edge   the right edge of the window the server was given (ACK + window)
 *   flow_ack    the highest ACK number seen (what the next ACK acknowledges)
 *   flow_end    where its start phase ends: isn + bytes of (RTT + target),
 *               fixed at its first ACK; past it the flow is CoDel's too
 *   flow_link   the access link of its SYN-ACK: a slot's reuse uncounts the
 *               flow that held it from that flow's own link
 * Per access link (IWA only; one cell per link, indexed by the packet's link,
 * queue_tat being that link's queue; the flow slots above are shared):
 *   iwa_grant_tat  window openings beyond replacement, as a queue that drains
 *                  at the link rate from when their data can arrive
 *   iwa_reserve_cur, iwa_reserve_old
 *                  one frame per announced flow, released by its first ACK,
 *                  in two generations of epochs at least hold_ns long
 *                  (iwa_epoch_t, iwa_epoch): a frame is gone at most
 *                  3 hold_ns after its SYN-ACK, whatever follows
 *   iwa_wavg       the average window of shaped flows (EWMA, 1/8)
 *   iwa_flows      the number of shaped flows (COUNTED); a flow's share of its
 *                  path and the budget is (end - isn) >> ceil(log2 iwa_flows)
 *
 * Upstream, an ACK of a shaped flow may open the server's window by what it
 * acknowledges (replacement: the queue stays as it is) plus at most
 *   room = target - queue - grants in transit - reserve   (+ its own frame)
 * and at most what it acknowledges again (the server's own slow-start pace),
 * nothing beyond replacement for a flow above its share or above the average
 * window while room is short, and less than replacement (at most half less)
 * while the queue is above target; never below one MSS beyond the ACK, never
 * above the client's own window, never moving the right edge left. The new
 * window is rounded up to the client's scale and written by tcp_window.p4. Downstream, new data is
 * CLASS_TCP_EST once it starts at or past the flow's end, and TRACK_BEYOND
 * when it ends past the edge the server was given.
 * refmodel/shaper.py is the executable twin. */
#ifndef _START_SHAPER_P4_
#define _START_SHAPER_P4_

// a < b in sequence space (mod 2^32)
bool seq_before(in bit<32> a, in bit<32> b) {
    return a - b >= 0x80000000;
}

// ns saturated to 32 bits
bit<32> ns32(in bit<64> ns) {
    return ns > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)ns;
}

control StartShaper(in headers_t hdr, in bool tcp_ok, in bit<16> tcp_payload, in bit<1> downstream,
                    in bool ws_seen, in bit<8> ws_shift, in bit<64> now, in bit<16> link, in bit<64> queue_tat,
                    in bool iwa_on, in iwa_cfg_t cfg, in bit<32> mtu_ns, in bit<8> rate_class, inout track_t trk,
                    out grant_t g) {
    /* Queue time <-> TCP payload bytes at the link's rate, by the rate class's product tables
     * (mantissa.p4: never above the exact product, less than 1/64 below it): TCP payload bytes the
     * link drains in a span (the start phase's end) and in the room (or over the deficit) a grant
     * sizes, and the queue time of bytes granted beyond replacement. */
    RateProduct() span_bytes;
    RateProduct() room_bytes;
    RateProduct() extra_ns;
    register<bit<32>>(FLOW_SLOTS) flow_syn;
    register<bit<32>>(FLOW_SLOTS) flow_syn_t;
    register<bit<32>>(FLOW_SLOTS) flow_srtt;
    register<bit<16>>(FLOW_SLOTS) flow_state;
    register<bit<32>>(FLOW_SLOTS) flow_edge;
    register<bit<32>>(FLOW_SLOTS) flow_ack;
    register<bit<32>>(FLOW_SLOTS) flow_end;
    register<bit<16>>(FLOW_SLOTS) flow_link;     // the link the slot's flow was installed on
    // per access link, indexed by the packet's link (at)
    register<bit<64>>(N_LINKS) iwa_grant_tat;
    register<bit<32>>(N_LINKS) iwa_reserve_cur;
    register<bit<32>>(N_LINKS) iwa_reserve_old;
    register<bit<64>>(N_LINKS) iwa_epoch_t;
    register<bit<8>>(N_LINKS)  iwa_epoch;
    register<bit<32>>(N_LINKS) iwa_wavg;
    register<bit<32>>(N_LINKS) iwa_flows;

    bit<32> at = 0;        // this packet's link: the index of the iwa_* registers

    // A flow's share of its path and the budget: (end - isn) >> shift, shift = ceil(log2(flows)), so at most
    // 1/flows of it (refmodel/shaper.py's share_shift). A table of ranges, not a division (a Tofino has none).
    bit<32> nflows = 0;    // the number of shaped flows (iwa_flows) after this packet
    // one shaped flow fewer on link on_link, never below zero (refmodel/shaper.py's LinkShaping.uncount)
    action uncount(in bit<32> on_link) {
        iwa_flows.read(nflows, on_link);
        iwa_flows.write(on_link, nflows == 0 ? 0 : nflows - 1);
    }
    bit<8> share_shift = 0;
    action set_share_shift(bit<8> s) { share_shift = s; }
    table iwa_share {
        key = { nflows : range; }
        actions = { set_share_shift; }
        default_action = set_share_shift(12);
        const entries = {
            0 .. 1       : set_share_shift(0);
            2 .. 2       : set_share_shift(1);
            3 .. 4       : set_share_shift(2);
            5 .. 8       : set_share_shift(3);
            9 .. 16      : set_share_shift(4);
            17 .. 32     : set_share_shift(5);
            33 .. 64     : set_share_shift(6);
            65 .. 128    : set_share_shift(7);
            129 .. 256   : set_share_shift(8);
            257 .. 512   : set_share_shift(9);
            513 .. 1024  : set_share_shift(10);
            1025 .. 2048 : set_share_shift(11);
        }
    }

    bit<32> cur = 0;       // the reserve's generations as they count now
    bit<32> old = 0;
    bit<64> epoch_t = 0;
    bit<8>  epoch = 0;
    action read_reserve() {
        iwa_reserve_cur.read(cur, at);
        iwa_reserve_old.read(old, at);
        iwa_epoch_t.read(epoch_t, at);
        iwa_epoch.read(epoch, at);
    }

    apply {
        g.tracked = false;
        g.syn = false;
        g.flags = 0;
        g.rewrite = false;
        g.window = 0;
        g.edge = 0;
        g.advance = 0;
        g.room_ns = 0;
        bit<32> slot = trk.slot;
        at = (bit<32>)link;
        bit<8> f = hdr.tcp.flags;
        if (!tcp_ok || hdr.udp.isValid()) {
            return;
        }

        if (downstream == 1) {
            if (trk.flags & TRACK_NEW_FLOW != 0) {
                // SYN-ACK of a new flow: its window state, and one frame reserved for its first window
                bit<32> syn;
                bit<32> syn_t;
                flow_syn.read(syn, slot);
                flow_syn_t.read(syn_t, slot);
                bit<16> prev;
                flow_state.read(prev, slot);
                if (prev & FLOW_COUNTED != 0) {
                    // the slot's previous flow never closed: counted no more, on the link it was counted on
                    bit<16> prev_link;
                    flow_link.read(prev_link, slot);
                    uncount((bit<32>)prev_link);
                }
                bit<16> state = FLOW_ANNOUNCED;
                bit<32> server_rtt = 0;
                if (syn & SYN_SEEN != 0 && (syn ^ trk.hash) & 0xFFFFFF00 == 0) {
                    state = state | FLOW_SHAPE;
                    server_rtt = (bit<32>)now - syn_t;
                    if (syn & SYN_WS != 0 && ws_seen) {
                        state = state | ((bit<16>)syn & FLOW_SCALE_MASK);
                    }
                }
                if (iwa_on) {
                    read_reserve();
                    bit<64> e = now - epoch_t;
                    if (e > 2 * (bit<64>)cfg.hold_ns) { cur = 0; }
                    if (e > (bit<64>)cfg.hold_ns) {
                        // a new epoch: the current generation becomes the old one
                        iwa_reserve_old.write(at, cur);
                        cur = 0;
                        epoch = epoch + 1;
                        iwa_epoch.write(at, epoch);
                        iwa_epoch_t.write(at, now);
                    }
                    bit<33> sum = (bit<33>)cur + (bit<33>)mtu_ns;
                    iwa_reserve_cur.write(at, sum > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)sum);
                    if (epoch & 1 == 1) { state = state | FLOW_EPOCH; }
                }
                flow_state.write(slot, state);
                flow_edge.write(slot, trk.isn);
                flow_end.write(slot, trk.isn);
                flow_srtt.write(slot, server_rtt);
                flow_ack.write(slot, trk.isn);
                flow_link.write(slot, link);
            } else if (trk.tracked && tcp_payload > 0 && f & (TCP_FLAG_SYN | TCP_FLAG_ACK) != (TCP_FLAG_SYN | TCP_FLAG_ACK)) {
                bit<16> state;
                bit<32> edge;
                bit<32> end;
                flow_state.read(state, slot);
                flow_edge.read(edge, slot);
                flow_end.read(end, slot);
                bit<32> seq_end = hdr.tcp.seqNo + (bit<32>)tcp_payload;
                if (state & FLOW_SHAPE != 0 && seq_before(edge, seq_end)) {
                    trk.flags = trk.flags | TRACK_BEYOND;
                }
                if (trk.cls == CLASS_TCP_START && state & FLOW_ACKED != 0 && !seq_before(hdr.tcp.seqNo, end)) {
                    trk.cls = CLASS_TCP_EST;                // past its start phase
                    trk.flags = trk.flags & ~TRACK_STARTING;
                }
            }
            return;
        }

        // ---- upstream: the client's SYN and ACKs
        if (f & (TCP_FLAG_SYN | TCP_FLAG_ACK) == TCP_FLAG_SYN) {
            bit<32> rec = (trk.hash & 0xFFFFFF00) | SYN_SEEN;
            if (ws_seen) {
                bit<8> ws = ws_shift > WS_MAX ? WS_MAX : ws_shift;
                rec = rec | SYN_WS | (bit<32>)ws;
            }
            flow_syn.write(slot, rec);
            flow_syn_t.write(slot, (bit<32>)now);
            g.syn = true;
            return;
        }
        if (f & TCP_FLAG_RST != 0 && trk.tracked) {
            bit<16> st;
            flow_state.read(st, slot);
            if (st & FLOW_COUNTED != 0) {                           // a reset flow is counted no more
                flow_state.write(slot, st & ~FLOW_COUNTED);
                uncount(at);
            }
        }
        if (f & (TCP_FLAG_SYN | TCP_FLAG_RST | TCP_FLAG_ACK) != TCP_FLAG_ACK || !trk.tracked) {
            return;
        }
        bit<16> state;
        bit<32> edge;
        bit<32> end;
        bit<32> lead;
        bit<32> last_ack;
        flow_state.read(state, slot);
        flow_edge.read(edge, slot);
        flow_end.read(end, slot);
        flow_srtt.read(lead, slot);
        flow_ack.read(last_ack, slot);
        bit<32> ack = hdr.tcp.ackNo;
        bit<32> acked = seq_before(last_ack, ack) ? ack - last_ack : 0;
        g.tracked = true;
        g.flags = TRACK_TRACKED;
        bool released = false;
        bool first = state & FLOW_ACKED == 0;
        if (first) {
            // the handshake's ACK: RTT at the switch (client side + server side), the start phase's length
            bit<64> rtt = (trk.age > 0xFFFFFFFF ? 0xFFFFFFFF : trk.age) + (bit<64>)lead;
            bit<64> span = rtt + (bit<64>)cfg.target_ns;
            bit<64> span_q32;
            span_bytes.apply(rate_class, ns32(span), span_q32);
            end = trk.isn + (bit<32>)(span_q32 >> 32);
            released = state & FLOW_ANNOUNCED != 0;
            state = (state | FLOW_ACKED) & ~FLOW_ANNOUNCED;
            g.flags = g.flags | TRACK_FIRST_ACK;
        }
        // the number of shaped flows: counted from their first ACK to the client's FIN (or a RST)
        iwa_flows.read(nflows, at);
        if (first && state & FLOW_SHAPE != 0) {
            state = state | FLOW_COUNTED;
            nflows = nflows + 1;
        }
        if (f & TCP_FLAG_FIN != 0 && state & FLOW_COUNTED != 0) {
            state = state & ~FLOW_COUNTED;
            nflows = nflows == 0 ? 0 : nflows - 1;
        }
        iwa_flows.write(at, nflows);
        bit<8> scale = (bit<8>)(state & FLOW_SCALE_MASK);
        bit<32> own = ack + ((bit<32>)hdr.tcp.window << scale);    // the client's own right edge
        bool starting = seq_before(edge, end);
        bit<32> new_edge = seq_before(edge, own) ? own : edge;

        bit<64> grant_tat = 0;
        bool mine_is_cur = (state & FLOW_EPOCH != 0) == (epoch & 1 == 1);
        if (iwa_on) {
            iwa_grant_tat.read(grant_tat, at);
            read_reserve();
            bit<64> e = now - epoch_t;
            if (e > 2 * (bit<64>)cfg.hold_ns) { cur = 0; }
            if (e > (bit<64>)cfg.hold_ns) { old = 0; }
            mine_is_cur = (state & FLOW_EPOCH != 0) == (epoch & 1 == 1);
        }
        if (iwa_on && state & FLOW_SHAPE != 0 && !seq_before(own, edge)) {
            if (starting) { g.flags = g.flags | TRACK_STARTING; }
            // the queue this ACK's data will find when it arrives, one server RTT (lead) from now
            bit<64> arrive = now + (bit<64>)lead;
            bit<64> used = (bit<64>)cur + (bit<64>)old;
            if (queue_tat > now) { used = used + (queue_tat - now); }
            if (grant_tat > arrive) { used = used + (grant_tat - arrive); }
            bit<64> avail = (bit<64>)cfg.target_ns;
            bit<32> mine = mine_is_cur ? cur : old;
            if (released && mine > 0) { avail = avail + (bit<64>)mtu_ns; }    // its own frame, if still counted
            bit<64> room = avail > used ? avail - used : 0;
            bit<64> deficit = used > avail ? used - avail : 0;
            g.room_ns = room > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)room;
            // one conversion: the room in bytes, or (above target, after the first ACK) the deficit
            bool cutting = !first && deficit != 0;
            bit<64> conv_q32;
            room_bytes.apply(rate_class, cutting ? ns32(deficit) : g.room_ns, conv_q32);
            bit<32> grant = (bit<32>)(conv_q32 >> 32);
            if (cutting) {
                // the queue is above target: replace only part of what left (at most half), so it drains
                bit<32> cut = grant;
                bit<32> half = acked >> 1;
                grant = acked - (cut < half ? cut : half);
            } else if (!first) {
                // replacement for what left, plus the room, at most what was acknowledged again, and nothing
                // beyond replacement for a flow above the average window while room is short
                bit<32> w = seq_before(edge, ack) ? 0 : edge - ack;
                bit<32> inc = grant < acked ? grant : acked;
                bit<32> wavg;
                iwa_wavg.read(wavg, at);
                // no growth beyond its share of the path and budget among the shaped flows
                iwa_share.apply();
                bit<32> share = (end - trk.isn) >> share_shift;
                // the margin, only while the room is partly in use: a wholly free target has nothing to
                // misjudge (at EDGE, where the target is one frame, a lone flow never grew without this)
                if (w > share || (w > wavg && grant < (acked << 1) && room < (bit<64>)cfg.target_ns)) { inc = 0; }
                if (w > wavg) {
                    wavg = wavg + ((w - wavg) >> 3);
                } else {
                    wavg = wavg - ((wavg - w) >> 3);
                }
                iwa_wavg.write(at, wavg);
                grant = acked + inc;
            }
            bit<32> want = edge + grant;
            if (seq_before(own, want)) { want = own; }
            bit<32> floor = ack + (bit<32>)cfg.mss_bytes;           // never below one MSS
            if (seq_before(own, floor)) { floor = own; }
            if (seq_before(want, floor)) { want = floor; }
            if (seq_before(want, edge)) { want = edge; }             // never moves the right edge left
            bit<32> unit = (bit<32>)1 << scale;
            bit<32> field = ((want - ack) + unit - 1) >> scale;      // round up: never below want
            new_edge = ack + (field << scale);
            if (field < (bit<32>)hdr.tcp.window) {
                g.rewrite = true;
                g.window = (bit<16>)field;
            }
        }
        if (seq_before(edge, new_edge)) { g.advance = new_edge - edge; }
        g.edge = new_edge;
        flow_state.write(slot, state);
        flow_edge.write(slot, new_edge);
        flow_end.write(slot, end);
        if (seq_before(last_ack, ack)) { flow_ack.write(slot, ack); }
        bit<32> extra = g.advance > acked ? g.advance - acked : 0;  // beyond replacement: new queue
        if (iwa_on && state & FLOW_SHAPE != 0 && extra != 0) {
            bit<64> arrive = now + (bit<64>)lead;
            bit<64> base = grant_tat > arrive ? grant_tat : arrive;
            bit<64> extra_q16;
            extra_ns.apply(rate_class, extra, extra_q16);
            iwa_grant_tat.write(at, base + (extra_q16 >> BYTE_TIME_FRAC));
        }
        if (iwa_on && released) {                                   // from the generation it was reserved in
            if (mine_is_cur) {
                iwa_reserve_cur.write(at, cur > mtu_ns ? cur - mtu_ns : 0);
            } else {
                iwa_reserve_old.write(at, old > mtu_ns ? old - mtu_ns : 0);
            }
        }
    }
}

#endif
