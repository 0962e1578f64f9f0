/* IWA's start shaping: each flow's window state, and the room shaped flows
 * may still put in the queue (docs/iwa.md derives every rule).
 *
 * Per flow (same slot as flow_tracker.p4):
 *   flow_syn    the client's SYN: signature | seen | window-scale shift
 *   flow_syn_t  its time (ns, low 32 bits)
 *   flow_srtt   the server's side of the RTT (client SYN to SYN-ACK at the switch):
 *               how long the data a grant releases takes to arrive ("lead")
 *   flow_state  the client's scale (if both SYN and SYN-ACK carried the option),
 *               SHAPE (the SYN was seen: the scale is known), ANNOUNCED (one
 *               frame reserved until its first ACK), ACKED (first ACK seen),
 *               EPOCH (parity of the reserve's epoch it reserved in), COUNTED and
 *               FRESH (how it is counted among its link's active flows), CLOSED (a
 *               FIN or RST from either side), IDLE (its window was retracted after
 *               a response), PAUSED (it paused in the epoch of its stamp), SHUT (its
 *               window is zero until a probe's answer or a request finds room) and
 *               HELD (an answer kept it shut once), and in the top 16 bits the epoch
 *               it was last counted in
 *   flow_edge   the right edge of the window the server was given (ACK + window)
 *   flow_ack    the highest ACK number seen (what the next ACK acknowledges)
 *   flow_rtt    the flow's RTT at the switch (ns), from its first ACK: its span, the length
 *               of a start phase, is bytes(rtt + target) at the link's rate and target now (a
 *               radio's path holds more while it is faster); its share of the path and budget
 *               is span >> ceil(log2 flows)
 *   flow_end    where its current start phase ends; past it the flow is CoDel's too
 *   flow_tail   1: the latest new data was shorter than an MSS and ended at least an MSS
 *               before the edge (the last of what the server had)
 *   flow_mark, flow_mark_t
 *               a checkpoint: what a server with more to send must reach (the edge it
 *               was given, or less: what its congestion window lets it send), and when;
 *               not sent up to two server RTTs later, the server has nothing to send
 *   flow_link   the access link of its SYN-ACK: the link a close uncounts it from
 * Per access link (IWA only; one cell per link, indexed by the packet's link,
 * queue_tat being that link's queue; the flow slots above are shared):
 *   iwa_vq_tat     every window opening as a virtual queue at the link rate from
 *                  the grant: the queue its data finds one server RTT later
 *   iwa_reserve_cur, iwa_reserve_old
 *                  one frame per announced flow, released by its first ACK
 *   iwa_act_old, iwa_act_cur, iwa_act_new
 *                  the active shaped flows of the previous epoch, of this one so
 *                  far, and of this one's not in the previous: flows = old + new
 *   iwa_epoch_t, iwa_epoch
 *                  the epoch (at least hold_ns) of the reserve's and the count's
 *                  two generations
 *   iwa_starved_t  when a flow below half its share last found less room than
 *                  its ACK acknowledged (0: never): for a round trip after it the
 *                  flows above half their shares do not grow
 *
 * Upstream, an ACK of a shaped flow may open the server's window by what it
 * acknowledges (replacement: the queue stays as it is) plus at most
 *   room = target - max(queue, virtual queue) - reserve   (+ its own frame)
 * and at most what it acknowledges again (the server's own slow-start pace),
 * nothing beyond replacement for a flow above its share or above half its
 * share while room is short or another flow starves, replacement less the
 * excess while the queue will be above target, and nothing while the server
 * leaves its window unused; never below one MSS beyond the ACK, never above
 * the client's own window, never moving the right edge left but once: the ACK
 * of all an idle server sent retracts its window to one MSS, so that its next
 * response starts from a first window (the room), as a new flow does. The new
 * window is rounded up to the client's scale and written by tcp_window.p4.
 * Downstream, a shaped flow's new data is CLASS_TCP_EST once it starts at or
 * past the end of its start phase, and TRACK_BEYOND when it ends past the edge
 * the server was given after its first ACK; a flow IWA does not shape is
 * CLASS_TCP_EST.
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

bit<32> dec32(in bit<32> n) {
    return n == 0 ? 0 : n - 1;
}

/* How far a link's epoch moves when it is age old (shaper.py: roll_step): 0, it goes on; 1, a new epoch (the
 * current generations become the previous ones); 2, more than an epoch of silence: both are over. */
bit<2> roll_step(in bit<64> age, in bit<32> hold_ns) {
    return age <= (bit<64>)hold_ns ? 2w0 : (age <= 2 * (bit<64>)hold_ns ? 2w1 : 2w2);
}

/* ceil(log2(n)), 0 for none: 1/2^s is at most 1/n, more than half of it (refmodel/shaper.py's share_shift).
 * A table of ranges, not a division (a Tofino has none). */
control ShareShift(in bit<32> n, out bit<8> s) {
    action set_shift(bit<8> shift) { s = shift; }
    table iwa_share {
        key = { n : range; }
        actions = { set_shift; }
        default_action = set_shift(12);
        const entries = {
            0 .. 1       : set_shift(0);
            2 .. 2       : set_shift(1);
            3 .. 4       : set_shift(2);
            5 .. 8       : set_shift(3);
            9 .. 16      : set_shift(4);
            17 .. 32     : set_shift(5);
            33 .. 64     : set_shift(6);
            65 .. 128    : set_shift(7);
            129 .. 256   : set_shift(8);
            257 .. 512   : set_shift(9);
            513 .. 1024  : set_shift(10);
            1025 .. 2048 : set_shift(11);
        }
    }
    apply { iwa_share.apply(); }
}

control StartShaper(in headers_t hdr, in bool tcp_ok, in bit<16> tcp_payload, in bit<1> downstream,
                    in bool ws_seen, in bit<8> ws_shift, in bit<64> now, in bit<16> link, in bit<64> queue_tat,
                    in bool iwa_on, in iwa_cfg_t cfg, in bit<32> mtu_ns, in bit<8> rate_class, inout track_t trk,
                    out grant_t g, out bit<8> unheld_shift) {
    /* Queue time <-> TCP payload bytes at the link's rate, by the rate class's product tables
     * (mantissa.p4: never above the exact product, less than 1/64 below it): TCP payload bytes the
     * link drains in a span (the start phase) and in the room (or over the deficit) a grant
     * sizes, and the queue time of the bytes a grant opens. */
    RateProduct() span_bytes;
    RateProduct() room_bytes;
    RateProduct() grant_ns;
    register<bit<32>>(FLOW_SLOTS) flow_syn;
    register<bit<32>>(FLOW_SLOTS) flow_syn_t;
    register<bit<32>>(FLOW_SLOTS) flow_srtt;
    register<bit<32>>(FLOW_SLOTS) flow_state;
    register<bit<32>>(FLOW_SLOTS) flow_edge;
    register<bit<32>>(FLOW_SLOTS) flow_ack;
    register<bit<32>>(FLOW_SLOTS) flow_rtt;
    register<bit<32>>(FLOW_SLOTS) flow_end;
    register<bit<32>>(FLOW_SLOTS) flow_mark;
    register<bit<32>>(FLOW_SLOTS) flow_mark_t;
    register<bit<8>>(FLOW_SLOTS) flow_tail;      // 1: the latest new data was a short end (shaper.short_end)
    register<bit<16>>(FLOW_SLOTS) flow_link;     // the link the slot's flow was installed on
    // per access link, indexed by the packet's link (at)
    register<bit<64>>(N_LINKS) iwa_vq_tat;
    register<bit<32>>(N_LINKS) iwa_reserve_cur;
    register<bit<32>>(N_LINKS) iwa_reserve_old;
    register<bit<32>>(N_LINKS) iwa_act_old;
    register<bit<32>>(N_LINKS) iwa_act_cur;
    register<bit<32>>(N_LINKS) iwa_act_new;
    register<bit<64>>(N_LINKS) iwa_epoch_t;
    register<bit<16>>(N_LINKS) iwa_epoch;
    register<bit<64>>(N_LINKS) iwa_starved_t;   // when a flow of the link last starved (0: never)

    bit<32> at = 0;        // this packet's link: the index of the iwa_* registers

    // The link's epoch and its two generations, as this packet finds them after roll()
    bit<16> epoch = 0;
    bit<32> r_cur = 0;
    bit<32> r_old = 0;
    bit<32> a_old = 0;
    bit<32> a_cur = 0;
    bit<32> a_new = 0;
    /* A new epoch once the current one is hold_ns old: the current generations (reserve, active flows)
     * become the previous ones. After a silence of more than an epoch both are over, and the epoch number
     * skips one, so no flow stamped before it counts as active in the epoch before (shaper.py: roll). */
    action roll() {
        bit<64> epoch_t;
        iwa_epoch_t.read(epoch_t, at);
        iwa_epoch.read(epoch, at);
        iwa_reserve_cur.read(r_cur, at);
        iwa_reserve_old.read(r_old, at);
        iwa_act_old.read(a_old, at);
        iwa_act_cur.read(a_cur, at);
        iwa_act_new.read(a_new, at);
        bit<2> step = roll_step(now - epoch_t, cfg.hold_ns);
        bool rolled = step != 0;
        bool quiet = step == 2;       // nothing rolled it for over an epoch
        // (no conditional statements in a BMv2 action: every register is written, with its old value if kept)
        r_old = rolled ? (quiet ? 0 : r_cur) : r_old;
        a_old = rolled ? (quiet ? 0 : a_cur) : a_old;
        epoch = epoch + (bit<16>)step;
        r_cur = rolled ? 0 : r_cur;
        a_cur = rolled ? 0 : a_cur;
        a_new = rolled ? 0 : a_new;
        iwa_epoch_t.write(at, rolled ? now : epoch_t);
        iwa_epoch.write(at, epoch);
        iwa_reserve_cur.write(at, r_cur);
        iwa_reserve_old.write(at, r_old);
        iwa_act_old.write(at, a_old);
        iwa_act_cur.write(at, a_cur);
        iwa_act_new.write(at, a_new);
    }

    /* A counted flow closes (or loses its slot): out of the generations of link on_link it is in, at once
     * (shaper.py: LinkShaping.uncount). */
    action uncount(in bit<32> st, in bit<32> on_link) {
        bit<16> ep;
        bit<32> u_old;
        bit<32> u_cur;
        bit<32> u_new;
        iwa_epoch.read(ep, on_link);
        iwa_act_old.read(u_old, on_link);
        iwa_act_cur.read(u_cur, on_link);
        iwa_act_new.read(u_new, on_link);
        bit<16> stamp = (bit<16>)(st >> FLOW_STAMP_SHIFT);
        bool counted = st & FLOW_COUNTED != 0;
        bool fresh = st & FLOW_FRESH != 0;
        bool in_cur = counted && stamp == ep;               // in act_cur, and act_new (fresh) or act_old
        bool in_prev = counted && stamp == ep - 1;          // in act_old
        iwa_act_cur.write(on_link, in_cur ? dec32(u_cur) : u_cur);
        iwa_act_new.write(on_link, in_cur && fresh ? dec32(u_new) : u_new);
        iwa_act_old.write(on_link, (in_cur && !fresh) || in_prev ? dec32(u_old) : u_old);
    }

    // A flow's share of its path and the budget: span >> ceil(log2(flows)) (ShareShift); and the share of the
    // link what no window holds gets, as one flow more beside them (aqm_iwa.p4)
    bit<32> nflows = 0;    // the link's active shaped flows after this packet
    bit<8> share_shift = 0;
    ShareShift() flow_share;
    ShareShift() unheld_share;

    apply {
        g.tracked = false;
        g.syn = false;
        g.flags = 0;
        g.rewrite = false;
        g.window = 0;
        g.edge = 0;
        g.advance = 0;
        g.room_ns = 0;
        unheld_shift = 0;
        bit<32> slot = trk.slot;
        at = (bit<32>)link;
        if (downstream == 1 && iwa_on) {
            // the link's active shaped flows as roll() would leave them now, read before this packet changes
            // anything (shaper.py: LinkShaping.active_at, unheld_shift)
            bit<64> epoch_t;
            bit<32> v_old;
            bit<32> v_cur;
            bit<32> v_new;
            iwa_epoch_t.read(epoch_t, at);
            iwa_act_old.read(v_old, at);
            iwa_act_cur.read(v_cur, at);
            iwa_act_new.read(v_new, at);
            bit<2> step = roll_step(now - epoch_t, cfg.hold_ns);
            bit<32> active = step == 0 ? v_old + v_new : (step == 1 ? v_cur : 0);
            unheld_share.apply(active + 1, unheld_shift);
        }
        bit<8> f = hdr.tcp.flags;
        bit<32> now32 = (bit<32>)now;
        if (!tcp_ok || hdr.udp.isValid()) {
            return;
        }
        bool synack = f & (TCP_FLAG_SYN | TCP_FLAG_ACK) == (TCP_FLAG_SYN | TCP_FLAG_ACK);
        bool closing = f & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0;

        if (downstream == 1) {
            if (trk.flags & TRACK_NEW_FLOW != 0) {
                // SYN-ACK of a new flow: its window state, and one frame reserved for its first window
                bit<32> syn;
                bit<32> syn_t;
                flow_syn.read(syn, slot);
                flow_syn_t.read(syn_t, slot);
                bit<32> state = FLOW_ANNOUNCED;
                bit<32> server_rtt = 0;
                if (syn & SYN_SEEN != 0 && (syn ^ trk.hash) & 0xFFFFFF00 == 0) {
                    state = state | FLOW_SHAPE;
                    server_rtt = now32 - syn_t;
                    if (syn & SYN_WS != 0 && ws_seen) {
                        state = state | (syn & FLOW_SCALE_MASK);
                    }
                    // a scale whose smallest window above zero exceeds one MSS (2^scale > MSS: shifts of 11 and
                    // up) cannot hold a flow at its floor: the standing-queue control's (shaper.py: _install)
                    if ((cfg.mss_bytes >> (bit<8>)(state & FLOW_SCALE_MASK)) == 0) {
                        state = state & ~FLOW_SHAPE;
                    }
                }
                if (iwa_on) {
                    roll();
                    bit<33> sum = (bit<33>)r_cur + (bit<33>)mtu_ns;
                    iwa_reserve_cur.write(at, sum > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)sum);
                    if (epoch & 1 == 1) { state = state | FLOW_EPOCH; }
                }
                bit<32> prev;
                flow_state.read(prev, slot);
                if (prev & FLOW_COUNTED != 0) {
                    // the slot's previous flow never closed: counted no more, on the link it was counted on
                    bit<16> prev_link;
                    flow_link.read(prev_link, slot);
                    uncount(prev, (bit<32>)prev_link);
                }
                flow_state.write(slot, state);
                flow_edge.write(slot, trk.isn);
                flow_end.write(slot, trk.isn);
                flow_rtt.write(slot, 0);
                flow_srtt.write(slot, server_rtt);
                flow_ack.write(slot, trk.isn);
                flow_link.write(slot, link);
                flow_mark.write(slot, trk.isn);
                flow_mark_t.write(slot, now32);
                flow_tail.write(slot, 8w0);
            } else if (trk.tracked && !synack) {
                bit<32> state;
                flow_state.read(state, slot);
                if (closing) {
                    // the server closes (or resets) the flow: uncounted at once, never shaped again
                    bit<16> own_link;
                    flow_link.read(own_link, slot);
                    uncount(state, (bit<32>)own_link);
                    state = (state & ~(FLOW_COUNTED | FLOW_FRESH)) | FLOW_CLOSED;
                    flow_state.write(slot, state);
                }
                bool shaped = state & (FLOW_SHAPE | FLOW_CLOSED) == FLOW_SHAPE;
                if (shaped) {
                    trk.flags = trk.flags | TRACK_SHAPED;
                } else if (trk.cls == CLASS_TCP_START) {
                    trk.cls = CLASS_TCP_EST;                // a flow IWA does not shape: the standing-queue control's
                    trk.flags = trk.flags & ~TRACK_STARTING;
                }
                if (tcp_payload > 0 && shaped && state & FLOW_ACKED != 0) {
                    bit<32> edge;
                    bit<32> end;
                    flow_edge.read(edge, slot);
                    flow_end.read(end, slot);
                    bit<32> seq_end = hdr.tcp.seqNo + (bit<32>)tcp_payload;
                    if (seq_before(edge, seq_end)) {
                        trk.flags = trk.flags | TRACK_BEYOND;
                    }
                    if (trk.cls == CLASS_TCP_START && !seq_before(hdr.tcp.seqNo, end)) {
                        trk.cls = CLASS_TCP_EST;            // past its start phase
                        trk.flags = trk.flags & ~TRACK_STARTING;
                    }
                    if (trk.flags & TRACK_RTX == 0) {
                        // a short end: shorter than a full segment (an MSS less the most option bytes: Linux's
                        // full segments with timestamps are 1448 B) and at least an MSS before the edge, the last
                        // of what the server had (a window fill ends at the edge, and Nagle holds back less than
                        // an MSS left: shaper.py, short_end and full_segment)
                        bool short_end = (bit<32>)tcp_payload < (bit<32>)cfg.mss_bytes - TCP_OPT_BYTES &&
                                         !seq_before(edge, seq_end + (bit<32>)cfg.mss_bytes);
                        flow_tail.write(slot, short_end ? 8w1 : 8w0);
                    }
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
            flow_syn_t.write(slot, now32);
            g.syn = true;
            return;
        }
        if (!trk.tracked) {
            return;
        }
        bit<32> state;
        bit<32> edge;
        flow_state.read(state, slot);
        flow_edge.read(edge, slot);
        if (closing) {
            // the client closes (or resets) the flow: uncounted at once, never shaped again
            bit<16> own_link;
            flow_link.read(own_link, slot);
            uncount(state, (bit<32>)own_link);
            state = (state & ~(FLOW_COUNTED | FLOW_FRESH)) | FLOW_CLOSED;
            flow_state.write(slot, state);
        }
        bit<8> scale = (bit<8>)(state & FLOW_SCALE_MASK);
        bit<32> own = hdr.tcp.ackNo + ((bit<32>)hdr.tcp.window << scale);    // the client's own right edge
        if (state & FLOW_CLOSED != 0) {
            // a closed flow's windows pass as the client wrote them: the edge the server now has
            g.tracked = true;
            if (f & (TCP_FLAG_ACK | TCP_FLAG_RST) == TCP_FLAG_ACK) {
                g.flags = TRACK_TRACKED;
                if (seq_before(edge, own)) {
                    g.advance = own - edge;
                    edge = own;
                    flow_edge.write(slot, edge);
                }
                g.edge = edge;
            }
            return;
        }
        if (f & (TCP_FLAG_SYN | TCP_FLAG_ACK) != TCP_FLAG_ACK) {
            return;
        }

        // an ACK of a tracked, open flow
        bit<32> end;
        bit<32> rtt;
        bit<32> lead;
        bit<32> last_ack;
        bit<32> mark;
        bit<32> mark_t;
        flow_end.read(end, slot);
        flow_rtt.read(rtt, slot);
        flow_srtt.read(lead, slot);
        flow_ack.read(last_ack, slot);
        flow_mark.read(mark, slot);
        flow_mark_t.read(mark_t, slot);
        bit<32> ack = hdr.tcp.ackNo;
        bit<32> acked = seq_before(last_ack, ack) ? ack - last_ack : 0;
        g.tracked = true;
        g.flags = TRACK_TRACKED;
        bool released = false;
        bool first = state & FLOW_ACKED == 0;
        if (first) {
            // the handshake's ACK: RTT at the switch (client side + server side)
            rtt = ns32((trk.age > 0xFFFFFFFF ? 0xFFFFFFFF : trk.age) + (bit<64>)lead);
            released = state & FLOW_ANNOUNCED != 0;
            state = (state | FLOW_ACKED) & ~FLOW_ANNOUNCED;
            g.flags = g.flags | TRACK_FIRST_ACK;
        }
        // the span at the link's rate and target now: on a radio, a flow that started in a slow slot is not
        // held to that slot's path once the link is faster (shaper.py: _ack)
        bit<64> span_q32;
        span_bytes.apply(rate_class, ns32((bit<64>)rtt + (bit<64>)cfg.target_ns), span_q32);
        bit<32> span = (bit<32>)(span_q32 >> 32);
        if (first) { end = trk.isn + span; }
        bit<32> new_edge = seq_before(edge, own) ? own : edge;
        bool shaping = iwa_on && state & FLOW_SHAPE != 0 && !seq_before(own, edge);
        iwa_epoch.read(epoch, at);
        if (iwa_on && state & FLOW_SHAPE != 0) {
            // the link's epoch, and this flow among its active ones (shaper.py: LinkShaping.count)
            roll();
            bit<16> stamp = (bit<16>)(state >> FLOW_STAMP_SHIFT);
            if (state & FLOW_COUNTED == 0 || stamp != epoch) {
                a_cur = a_cur + 1;
                if (state & FLOW_COUNTED != 0 && stamp == epoch - 1) {
                    state = state & ~FLOW_FRESH;    // continuing: already in act_old
                } else {
                    a_new = a_new + 1;
                    state = state | FLOW_FRESH;
                }
                // a new epoch: it may pause again
                state = (state & 0xFFFF & ~FLOW_PAUSED) | FLOW_COUNTED | ((bit<32>)epoch << FLOW_STAMP_SHIFT);
                iwa_act_cur.write(at, a_cur);
                iwa_act_new.write(at, a_new);
            }
            nflows = a_old + a_new;
        } else if (iwa_on) {
            iwa_reserve_cur.read(r_cur, at);
            iwa_reserve_old.read(r_old, at);
        }
        bool mine_is_cur = (state & FLOW_EPOCH != 0) == (epoch & 1 == 1);
        if (shaping) {
            if (seq_before(edge, end)) { g.flags = g.flags | TRACK_STARTING; }
            // the queue this ACK's data will find when it arrives: the virtual queue of what was granted, or
            // the queue now if more (traffic no window holds), and the frames reserved for flows still to start
            bit<64> vq_tat;
            iwa_vq_tat.read(vq_tat, at);
            bit<64> in_queue = queue_tat > now ? queue_tat - now : 0;   // the real queue
            bit<64> queued = in_queue;
            if (vq_tat > now && vq_tat - now > queued) { queued = vq_tat - now; }
            bit<64> used = (bit<64>)r_cur + (bit<64>)r_old + queued;
            bit<64> avail = (bit<64>)cfg.target_ns;
            bit<32> mine = mine_is_cur ? r_cur : r_old;
            if (released && mine > 0) { avail = avail + (bit<64>)mtu_ns; }    // its own frame, if still counted
            bit<64> room = avail > used ? avail - used : 0;
            bit<64> deficit = used > avail ? used - avail : 0;
            g.room_ns = ns32(room);
            // a client's segment that starts its server's next response: the first after a retraction that
            // carries a request or acknowledges new data, or (shaper.py: asks) a request that acknowledges all
            // the server sent while its window has not joined the virtual queue since the server last sent
            bool restart = state & FLOW_IDLE != 0 && (tcp_payload > 0 || acked > 0);
            bool request = !first && !restart && tcp_payload > 0 && !seq_before(ack, trk.seqhi) &&
                           !(state & FLOW_ASKED != 0 && acked == 0);
            if (acked > 0) { state = state & ~FLOW_ASKED; }   // its server sent more since
            // the server has nothing to send (shaper.py: server_idle): it left its window unused, two server
            // RTTs after it was given the checkpoint not sent up to one MSS of it; or this ACK acknowledges all
            // it sent and the last of that was a short end (flow_tail)
            bit<8> tail;
            flow_tail.read(tail, slot);
            bool limited = (seq_before(trk.seqhi + (bit<32>)cfg.mss_bytes, mark) &&
                            (bit<64>)(now32 - mark_t) > 2 * (bit<64>)lead) ||
                           (tail == 1 && acked > 0 && !seq_before(ack, trk.seqhi));
            bool cutting = !first && !restart && !limited && !request && deficit != 0;
            // one conversion: the room in bytes, or (above target) the deficit
            bit<64> conv_q32;
            room_bytes.apply(rate_class, cutting ? ns32(deficit) : g.room_ns, conv_q32);
            bit<32> grant = (bit<32>)(conv_q32 >> 32);
            flow_share.apply(nflows, share_shift);
            bit<32> share = span >> share_shift;   // its share of the path and budget among the link's flows
            bit<32> base = edge;
            bool retract = false;
            if (first) {
                // a first window: the room (it joins the virtual queue as it is granted), at most the largest
                // initial window a standard TCP sends (RFC 6928): its server sends no more in the next round
                // trip (shaper.py: first_window)
                base = ack;
                if (grant > IW_MAX_BYTES) { grant = IW_MAX_BYTES; }
                state = state | FLOW_ASKED;
            } else if (restart) {
                grant = 0;         // a request after a retraction: its first window is the MSS it was left
            } else if (limited) {
                // no opening, and what it sends next starts a new start phase; once this very ACK acknowledges
                // all it sent, its window is retracted to one MSS (docs/iwa.md, "Restarts")
                grant = 0;
                end = trk.seqhi + span;
                retract = acked > 0 && !seq_before(ack, trk.seqhi);
            } else if (request) {
                grant = 0;         // a new start, with the window an end the switch could not see left it
                end = trk.seqhi + span;
            } else if (cutting) {
                // the queue its data will meet is above target: replace what left less the excess (the cut
                // leaves the virtual queue at once: the next ACK sees what is left of it)
                grant = acked - (grant < acked ? grant : acked);
            } else {
                // replacement for what left, plus the room, at most what was acknowledged again, and nothing
                // beyond replacement for a flow above its share, or above half of it while room is short
                bit<32> w = seq_before(edge, ack) ? 0 : edge - ack;
                bit<32> inc = grant < acked ? grant : acked;
                // a flow below half its share that cannot even double starves: for a round trip (its RTT at
                // the switch) the flows above half their shares do not grow (shaper.starves)
                bit<64> starved_t;
                iwa_starved_t.read(starved_t, at);
                if (w <= (share >> 1) && grant < acked) {
                    starved_t = now;
                    iwa_starved_t.write(at, now);
                }
                bool starving = starved_t != 0 && now - starved_t < (bit<64>)rtt;
                // the margin, only while the room is partly in use: a wholly free target has nothing to
                // misjudge (at EDGE, where the target is one frame, a lone flow never grew without this)
                // (half the share: the flows behind it, below half, still grow; shaper.margin_holds)
                if (w > share || (w > (share >> 1) && grant < (acked << 1) && room < (bit<64>)cfg.target_ns) ||
                    (w > (share >> 1) && starving)) {
                    inc = 0;
                }
                grant = acked + inc;
            }
            bit<32> want = base + grant;
            if (seq_before(own, want)) { want = own; }
            bit<32> floor = ack + (bit<32>)cfg.mss_bytes;           // never below one MSS
            if (seq_before(own, floor)) { floor = own; }
            // at its floor (docs/iwa.md, "At the floor"; shaper.py: at_floor) and the queue still above target:
            // no window can hold it less, so its start phase ends and its data is CoDel's (the floor limit)
            bool floored = seq_before(want, floor);
            if (floored && cutting && seq_before(ack, end)) { end = ack; }
            bool shut = false;
            bool beyond = share < (bit<32>)cfg.mss_bytes;   // the floor limit: each flow's share below one MSS
            // no room: beyond the floor limit, and what was granted (or the real queue) more than a frame above target
            bool full = beyond && queued > (bit<64>)cfg.target_ns + (bit<64>)mtu_ns;
            // a floor more would overflow the buffer: what was granted beyond the floors' share of it (the
            // floor cap: refmodel/params.py floor_cap_ns; 0: no cap)
            bool over = cfg.floor_cap_ns != 0 && queued > (bit<64>)cfg.floor_cap_ns;
            if (floored && state & FLOW_SHUT != 0 && acked == 0) {
                // a shut window reopens to the MSS on an ACK of nothing new (a probe's answer, a request) once
                // there is room; while there is none it stays shut, but a probe's answer (no data) holds it only
                // once: the next reopens it, unless a floor more would overflow the buffer
                if (over || (full && (tcp_payload > 0 || state & FLOW_HELD == 0))) {
                    if (tcp_payload == 0) { state = state | FLOW_HELD; }
                    want = ack;
                    shut = true;
                } else {
                    want = floor;
                }
            } else if (floored && first && (full || over)) {
                // a first window that finds no room, or would overflow the buffer: shut, so its server waits
                // for its probe instead of adding its MSS to a full queue
                want = ack;
                shut = true;
            } else if (floored) {
                // it pauses (its edge stays), shut (a zero window) once this ACK acknowledges all it sent,
                // until its server's zero-window probe: if this ACK acknowledged data, the real queue is more
                // than a frame above target, and the flow did not pause yet this epoch or the link is beyond
                // its floor limit
                if (cutting && acked != 0 && in_queue > (bit<64>)cfg.target_ns + (bit<64>)mtu_ns &&
                        (beyond || state & FLOW_PAUSED == 0)) {
                    state = state | FLOW_PAUSED;
                    shut = !seq_before(ack, trk.seqhi);
                    // (an edge behind the ACK, after a shut or a retraction the server's data overtook: the ACK)
                    want = shut || seq_before(edge, ack) ? ack : edge;
                } else {
                    want = floor;
                }
            }
            state = shut ? state | FLOW_SHUT : state & ~(FLOW_SHUT | FLOW_HELD);
            if (retract) {
                want = floor;
                state = state | FLOW_IDLE;
            } else if (seq_before(want, edge) && !shut) {
                want = edge;                                 // never moves the right edge left (but to shut it)
            }
            bit<32> unit = (bit<32>)1 << scale;
            bit<32> field = ((want - ack) + unit - 1) >> scale;      // round up: never below want
            new_edge = ack + (field << scale);
            if (field < (bit<32>)hdr.tcp.window) {
                g.rewrite = true;
                g.window = (bit<16>)field;
            }
            bit<32> charge = seq_before(edge, new_edge) ? new_edge - edge : 0;    // what it opened: queue to come
            if (restart || request) {
                // the server's next response starts: the window it now has is queue to come one server RTT from
                // now, back to back (the grants that opened it left the virtual queue long ago), so it joins the
                // virtual queue now, and the other flows' ACKs in that server RTT make room for it (shaper.py)
                state = (state & ~FLOW_IDLE) | FLOW_ASKED;
                charge = seq_before(ack, new_edge) ? new_edge - ack : 0;
            }
            if (first || restart || request || !seq_before(trk.seqhi + (bit<32>)cfg.mss_bytes, mark)) {
                // a new start, or it reached the checkpoint: the next one is what a server with more to send
                // must reach, the data this ACK freed (at least one MSS) or the new edge if nearer, plus
                // the one-MSS tolerance (shaper.py: checkpoint)
                // (after the handshake's ACK: its initial window, at least IW_MIN_SEGMENTS), counted in full
                // segments, an MSS less the most option bytes (three with timestamps are 4344 B, not 3 MSS)
                bit<32> seg = (bit<32>)cfg.mss_bytes - TCP_OPT_BYTES;
                bit<32> need = acked > seg ? acked : seg;
                if (first) { need = IW_MIN_SEGMENTS * seg; }
                bit<32> near = trk.seqhi + (bit<32>)cfg.mss_bytes + need;
                flow_mark.write(slot, seq_before(near, new_edge) ? near : new_edge);
                flow_mark_t.write(slot, now32);
            }
            if (charge != 0) {
                // served at the link rate from now: the queue its data builds one server RTT on
                bit<64> adv_q16;
                grant_ns.apply(rate_class, charge, adv_q16);
                iwa_vq_tat.write(at, (vq_tat > now ? vq_tat : now) + (adv_q16 >> BYTE_TIME_FRAC));
            }
        } else {
            state = state & ~(FLOW_SHUT | FLOW_HELD);   // it leaves with the client's own window: open
        }
        if (seq_before(edge, new_edge)) { g.advance = new_edge - edge; }
        g.edge = new_edge;
        flow_state.write(slot, state);
        flow_edge.write(slot, new_edge);
        flow_end.write(slot, end);
        flow_rtt.write(slot, rtt);
        if (seq_before(last_ack, ack)) { flow_ack.write(slot, ack); }
        if (iwa_on && released) {                                   // from the generation it was reserved in
            if (mine_is_cur) {
                iwa_reserve_cur.write(at, r_cur > mtu_ns ? r_cur - mtu_ns : 0);
            } else {
                iwa_reserve_old.write(at, r_old > mtu_ns ? r_old - mtu_ns : 0);
            }
        }
    }
}

#endif
