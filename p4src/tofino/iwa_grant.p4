/* The grant of an upstream ACK's pass 1 (refmodel/tofino_iwa.py: TnaShaper._grant and _opening, shaper.py's
 * room_of, growth, bounded), included in iwa_upstream.p4 (ingress, then resubmitted) or with -DIWA_GRANT_EGRESS=1
 * in iwa_egress.p4 (egress, then recirculated). Its result is the pass-2 header's fields: md.iwa.op, md.iwa.fld,
 * md.iwa.scale, md.iwa.vq_ns and iwa_word. Its steps and tables: iwa_grant_steps.p4; the ACK number: IWA_ACK. */
md.iwa.op = IWA_OP_EDGE;
md.iwa.new_edge = md.iwa.edge;
if ((int<32>)(md.iwa.own - md.iwa.edge) > 0) {
    md.iwa.new_edge = md.iwa.own;
}
md.iwa.fld = md.iwa.win32;
bit<32> waiting = 0;
iwa_word = 0;                          // pass 2's word: MARK's checkpoint (the twin's UNCOUNT uses it too)
if (md.iwa.shaping == 1) {
    // the next checkpoint's near end (shaper.checkpoint): what a server with more to send must reach, the data
    // this ACK freed (at least one MSS) beyond what it sent, plus the one-MSS tolerance; worked out here, beside
    // the room, so that only its comparison with the new edge waits for the window
    // (counted in full segments, an MSS less the most option bytes: shaper.full_segment)
    bit<32> need = md.iwa.cfg.mss - TCP_OPT_BYTES;
    if (md.iwa.first_ack == 1) {
        need = md.iwa.cfg.iw_min;              // its initial window: IW_MIN_SEGMENTS full segments (the knob)
    } else if (md.iwa.acked > need) {
        need = md.iwa.acked;
    }
    bit<32> near = iwa_seqhi_mss + need;      // seqhi + mss + need (the first add in iwa_app_1)
    // the room (shaper.room_of): the target (and a first ACK's own frame) less the grants' virtual queue or
    // the queue if more, less the reserve
    iwa_room_1();
    iwa_room_2();
    iwa_room_3();
    md.iwa.avail = md.iwa.cfg.target_ns;
    if (released == 1) {
        if (mine_cur == 1 && md.iwa.res_cur != 0) {
            md.iwa.avail = md.iwa.cfg.target_ns + md.iwa.mtu_ns;
        } else if (mine_cur == 0 && md.iwa.res_old != 0) {
            md.iwa.avail = md.iwa.cfg.target_ns + md.iwa.mtu_ns;
        }
    }
    iwa_room_4();
    iwa_room_5();
    iwa_room_6();
    room_bytes.apply(md.cfg.rate_class, md.iwa.room, md.iwa.room_b, iwa_m_room, iwa_e_room, iwa_mk_room);
    deficit_bytes.apply(md.cfg.rate_class, md.iwa.deficit, md.iwa.deficit_b, iwa_m_def, iwa_e_def,
                      iwa_mk_def);
    md.iwa.w = 0;
    if ((int<32>)(md.iwa.edge - IWA_ACK) > 0) {
        md.iwa.w = md.iwa.edge - IWA_ACK;
    }
    bit<32> nm1 = md.iwa.nflows |-| 1;
    share_of.apply(nm1, md.iwa.span, md.iwa.share);
    md.iwa.cutting = 0;
    md.iwa.base = md.iwa.edge;
    md.iwa.grant = 0;
    if (md.iwa.first_ack == 1) {
        md.iwa.base = IWA_ACK;   // a first window: the room, at most RFC 6928's (shaper.first_window)
        md.iwa.grant = min(md.iwa.room_b, IW_MAX_BYTES);
    } else if (md.iwa.restart == 1) {
        waiting = md.iwa.w;            // a restart's window: queue to come
    } else if (md.iwa.idle_branch == 1) {
        // the server left its window unused: no opening
    } else if (md.iwa.deficit != 0) {
        // above target: replace what left less the excess
        iwa_cut_1();
        iwa_cut_2();
        md.iwa.cutting = 1;
    } else {
        // replacement and growth (shaper.growth)
        bit<32> inc = min(md.iwa.room_b, md.iwa.acked);
        iwa_half_share();
        if (md.iwa.w > md.iwa.share) {
            inc = 0;
        } else if (md.iwa.w > md.iwa.half_share && md.iwa.room_b < (md.iwa.acked << 1) &&
                   md.iwa.room < md.iwa.cfg.target_ns) {
            inc = 0;                   // the margin (shaper.margin_holds)
        }
        md.iwa.grant = md.iwa.acked + inc;
    }
    // the bounds (shaper.bounded): never beyond the client's own edge, never below one MSS beyond the ACK
    md.iwa.want = md.iwa.base + md.iwa.grant;
    if ((int<32>)(md.iwa.own - md.iwa.want) < 0) {
        md.iwa.want = md.iwa.own;
    }
    md.iwa.floor = IWA_ACK + md.iwa.cfg.mss;
    if ((int<32>)(md.iwa.own - md.iwa.floor) < 0) {
        md.iwa.floor = md.iwa.own;
    }
    md.iwa.floored = 0;
    if ((int<32>)(md.iwa.want - md.iwa.floor) < 0) {
        md.iwa.want = md.iwa.floor;
        md.iwa.floored = 1;
        if (md.iwa.cutting == 1 && (int<32>)(IWA_ACK - md.iwa.end) < 0) {
            md.iwa.op = md.iwa.op | IWA_OP_END_AT_ACK;   // the floor limit: its data is CoDel's from now
        }
    }
    // (shaper.at_floor's pause and shut window are not in this build: a window at its floor is open)
    if (md.iwa.state & (FLOW_SHUT | FLOW_HELD) != 0) {
        md.iwa.op = md.iwa.op | IWA_OP_OPEN;
    }
    if (md.iwa.retract == 1) {
        md.iwa.want = md.iwa.floor;    // the edge moves left: set, not max
        md.iwa.op = md.iwa.op | IWA_OP_RETRACT;
    } else if ((int<32>)(md.iwa.want - md.iwa.edge) < 0) {
        md.iwa.want = md.iwa.edge;     // never moves the right edge left
    }
    md.iwa.fld_up = md.iwa.want - IWA_ACK;
    round_up.apply(md.iwa.scale, md.iwa.fld_up, md.iwa.fld, IWA_UP_T);   // ingress: deficit_bytes's mk, read before want
    if (md.iwa.fld > md.iwa.win32) {
        md.iwa.fld = md.iwa.win32;
    }
    md.iwa.fld_pk = iwa_pack_fld.get({md.iwa.fld});   // for the packing (iwa_grant_steps.p4: iwa_pack_fld)
    new_window.apply(md.iwa.scale, md.iwa.fld, md.iwa.win_bytes);
    md.iwa.new_edge = IWA_ACK + md.iwa.win_bytes;
    if (md.iwa.first_ack == 1 || md.iwa.restart == 1 ||
            iwa_short == 0) {                  // seqhi + mss >= mark (iwa_app_1..3)
        md.iwa.op = md.iwa.op | IWA_OP_MARK;   // a new start, or the server reached its checkpoint
    }
    iwa_word = md.iwa.new_edge;                // the next checkpoint: the new edge, or the near end if nearer
    if ((int<32>)(near - md.iwa.new_edge) < 0) {
        iwa_word = near;
    }
} else if (md.iwa.state & (FLOW_SHUT | FLOW_HELD) != 0) {
    md.iwa.op = md.iwa.op | IWA_OP_OPEN;       // it leaves with the client's own window: open
}
md.iwa.advance = 0;
if ((int<32>)(md.iwa.new_edge - md.iwa.edge) > 0) {
    md.iwa.advance = md.iwa.new_edge - md.iwa.edge;
}
md.iwa.vq_ns = 0;
md.iwa.vq_bytes = md.iwa.advance + waiting;
if (md.iwa.shaping == 1 && md.iwa.vq_bytes != 0) {
#if IWA_GRANT_EGRESS
    // the bytes and the gap go to the second pass, which converts them to time before iwa_vq's stage (the
    // product's three stages are off egress's chain)
#else
    vq_time.apply(md.cfg.rate_class, md.iwa.vq_bytes, md.iwa.vq_ns, iwa_m_room, iwa_e_room, iwa_mk_room);   // room_bytes's temporaries
    iwa_vq_plus_gap();
#endif
    md.iwa.op = md.iwa.op | IWA_OP_VQ;
}
