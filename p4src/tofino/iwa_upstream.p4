/* (-DIWA_OMIT_SYN, _PASS1, _PASS2, _GRANT, _P1_TAIL leave a part out: how the compile was bisected, docs/tofino.md.)
 * IWA's upstream packet (client -> server), included in TnaIngress's apply (bottleneck_tna.p4), where the
 * register actions of IWA_STATE (iwa.p4) are declared. refmodel/tofino_iwa.py: TnaShaper.upstream (pass 1:
 * _read and _grant; pass 2: _pass2), in the same order, each register once a pass. */
iwa_knobs.apply(md);
md.iwa.h = flow_hash_up.get({hdr.ipv4.dstAddr, hdr.ipv4.srcAddr, hdr.tcp.dstPort, hdr.tcp.srcPort,
                             hdr.ipv4.protocol});
md.iwa.slot = (flow_slot_t)md.iwa.h;
@in_hash { md.iwa.now_c = (int<32>)ig_prsr_md.global_tstamp[47:16]; }
md.iwa.closing = 0;
iwa_win32();   // (bit<32>)window through the hash unit, an action of its own (iwa_steps.p4)
@in_hash { md.iwa.now = (int<32>)ig_prsr_md.global_tstamp[31:0]; }
@in_hash { md.iwa.mtu_ns = md.cfg.mtu_ns; }
iwa_payload.apply();
if (hdr.tcp.flags & (TCP_FLAG_FIN | TCP_FLAG_RST) != 0) {
    md.iwa.closing = 1;
}
if (md.second == 1) {
#ifndef IWA_OMIT_PASS2
    // ---- pass 2 (TnaShaper._pass2): what depends on the room, from the header pass 1 left. The parser
    // took its 96 bits as the queue's pass2_h (8, 8, 16, 32, 32: bf-p4c's PHV wants the parser's fields
    // byte-aligned); they are iwa_pass2_h's (12, 16, 4, 32, 32) ----
    // (through the hash unit, as pass 1 packs them: iwa_grant.p4)
    // (one action each: a stage's actions take at most 32 bits from the hash unit)
    iwa_unpack_1();
    iwa_unpack_2();
    iwa_unpack_3();
    @in_hash { md.iwa2.vq_ns = md.pass2.base; }
    @in_hash { md.iwa2.word = md.pass2.step; }
    p2_window.apply(md.iwa.scale, md.iwa.field32, md.iwa.win_bytes);
    md.iwa.edge_in = hdr.tcp.ackNo + md.iwa.win_bytes;
    if (md.iwa2.op & IWA_OP_RETRACT != 0) {
        edge_set.execute(md.iwa.slot);
    } else if (md.iwa2.op & IWA_OP_EDGE != 0) {
        md.iwa.edge = edge_max.execute(md.iwa.slot);
    }
    if (md.iwa2.op & IWA_OP_MARK != 0) {
        mark_write.execute(md.iwa.slot);
    }
    if (md.iwa2.op & IWA_OP_END_AT_ACK != 0) {
        md.iwa.end_in = hdr.tcp.ackNo;
        md.iwa.end = end_set.execute(md.iwa.slot);
    }
    // SHUT and HELD from the op in one lookup, before the branch: flow_state's actions share a stage, so
    // what state_or writes must not be worked out under the gateway that also picks state_open (bf-p4c: "no
    // more tables are placeable")
    iwa_st_or.apply();
    if (md.iwa2.op & IWA_OP_OPEN != 0) {
        state_open.execute(md.iwa.slot);
    } else if (md.iwa2.op & (IWA_OP_SHUT | IWA_OP_HELD) != 0) {
        state_or.execute(md.iwa.slot);
    }
    if (md.iwa2.op & IWA_OP_PAUSE != 0) {
        count_pause.execute(md.iwa.slot);
    }
    if (md.iwa2.op & IWA_OP_VQ != 0) {
#if IWA_GRANT_EGRESS
        // egress sent bytes and the gap: their time here, before iwa_vq's stage
        vq_time.apply(md.cfg.rate_class, md.iwa2.vq_ns, md.iwa.vq_ns, iwa_m_vq, iwa_e_vq, iwa_mk_vq);
        iwa_p2_gap();
#else
        md.iwa.vq_ns = md.iwa2.vq_ns;
#endif
        vq_add.execute(md.link);
    }
    // the window the ACK leaves with, and its checksum (the deparser: the parser's residual + the window)
    if (md.iwa2.field != hdr.tcp.window) {
        hdr.tcp.window = md.iwa2.field;
        md.iwa.rewrite = 1;
    }
#endif
} else if (hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK) == TCP_FLAG_SYN) {
    // ---- the client's SYN: its signature, window scale and time (a layout the parser does not know: not
    // remembered, so the flow is never shaped and its data is the standing-queue control's) ----
#ifndef IWA_OMIT_SYN
    if (md.iwa.opts_known == 1) {
        syn_record.apply(hdr, md);
        md.iwa.syn_rec = md.iwa.h[31:8] ++ md.iwa.syn_low;
        syn_write.execute(md.iwa.slot);
    }
#endif
} else {
#ifndef IWA_OMIT_PASS1
    // ---- pass 1: the flow tracker, then the shaper's reads and atomic updates (TnaShaper._read) ----
    if (md.iwa.closing == 1) {
        md.iwa.sig = ft_close.execute(md.iwa.slot);
    } else {
        md.iwa.sig = ft_read.execute(md.iwa.slot);
    }
    md.iwa.tracked = 0;
    if (md.iwa.sig == md.iwa.h) {
        md.iwa.tracked = 1;
    }
    if (md.iwa.tracked == 1) {
        if (md.iwa.closing == 1) {
            md.iwa.link_w = link_close.execute(md.iwa.slot);
        } else {
            md.iwa.link_w = link_read.execute(md.iwa.slot);
        }
        md.iwa.scale = iwa_link_scale.get({4w0, md.iwa.link_w[23:20]});
        @in_hash { md.iwa.shape = md.iwa.link_w[16:16]; }
        @in_hash { md.iwa.closed = md.iwa.link_w[24:24]; }
        own_window.apply(md.iwa.scale, md.iwa.win32, md.iwa.win_bytes);
        md.iwa.own = hdr.tcp.ackNo + md.iwa.win_bytes;
        md.iwa.edge_in = md.iwa.own;
        if (md.iwa.closed == 1) {
            // a closed flow: its windows pass as the client wrote them, its edge follows (TnaShaper._unshaped)
            if (hdr.tcp.flags & (TCP_FLAG_ACK | TCP_FLAG_RST) == TCP_FLAG_ACK) {
                md.iwa.edge = edge_max.execute(md.iwa.slot);
            }
            if (md.iwa.closing == 1) {
                // the FIN or RST that closed it: uncounted on its own link (TnaShaper._close, _uncount)
                md.iwa.st_or = FLOW_CLOSED;
                md.iwa.state = state_or.execute(md.iwa.slot);
                md.iwa.stamp = count_clear.execute(md.iwa.slot, md.iwa.count_hi);
            }
        } else if (hdr.tcp.flags & (TCP_FLAG_SYN | TCP_FLAG_ACK) == TCP_FLAG_ACK) {
            iwa_counting.apply();   // cfg.on and SHAPE (a table: as an expression bf-p4c folds it into every gateway)
            md.iwa.lead = srtt_read.execute(md.iwa.slot);
            md.iwa.mark = mark_read.execute(md.iwa.slot, md.iwa.mark_t);
            md.iwa.edge = edge_read.execute(md.iwa.slot);
            md.iwa.last_ack = ack_max.execute(md.iwa.slot);
            md.iwa.seqhi = seqhi_read.execute(md.iwa.slot);
            md.iwa.isn = isn_read.execute(md.iwa.slot);
            md.iwa.start = start_read.execute(md.iwa.slot);
            // what it acknowledged, and the epoch's roll times (iwa_epoch_t, then iwa_epoch with the step between)
            iwa_acked_1();
            iwa_acked_2();
            md.iwa.step = 0;
            if (md.iwa.counting == 1) {
                iwa_t_old = epoch_t_roll.execute(md.link);
                iwa_roll_1();      // t_old - (now - 2 hold), t_old - (now - hold)
                iwa_roll_2();      // their min with 0: a gateway tests for zero only
                if (iwa_roll2 != 0) {
                    md.iwa.step = 2;
                } else if (iwa_roll1 != 0) {
                    md.iwa.step = 1;
                }
                md.iwa.epoch = epoch_step.execute(md.link);
            } else {
                md.iwa.epoch = epoch_read.execute(md.link);
            }
            md.iwa.epoch_prev = md.iwa.epoch - 1;
            md.iwa.shaping = 0;
            iwa_oe_1();            // own - edge
            iwa_oe_2();            // its min and max with 0
            if (md.iwa.counting == 1) {
                if (iwa_oe_neg == 0) {
                    md.iwa.shaping = 1;
                }
            }
            md.iwa.st_or = FLOW_ACKED;
            md.iwa.state = state_or.execute(md.iwa.slot);
            md.iwa.first_ack = 0;
            if (md.iwa.state & FLOW_ACKED == 0) {
                md.iwa.first_ack = 1;
            }
            md.iwa.count_r = 0;
            md.iwa.count_hi = 0;
            if (md.iwa.counting == 1) {
                md.iwa.count_r = count_ack.execute(md.iwa.slot, md.iwa.count_hi);
            }
            // the server left its window unused? (shaper.app_limited) and what flow_idle does with it
            md.iwa.app_limited = 0;
            iwa_app_1();           // seqhi + mss, now - mark_t, 2 lead, ack - seqhi
            iwa_app_2();           // seqhi + mss - mark, now - mark_t - 2 lead
            iwa_app_3();           // their min / max with 0
            if (iwa_short != 0) {
                if (iwa_late != 0) {
                    md.iwa.app_limited = 1;
                }
            }
            md.iwa.active = 0;
            md.iwa.retract_cond = 0;
            if (md.iwa.shaping == 1 && md.iwa.first_ack == 0) {
                if (md.iwa.payload == 1 || md.iwa.acked != 0) {
                    md.iwa.active = 1;
                }
                if (md.iwa.app_limited == 1 && iwa_caught == 0) {
                    if (md.iwa.acked != 0) {
                        md.iwa.retract_cond = 1;
                    }
                }
            }
            md.iwa.idle_old = idle_ack.execute(md.iwa.slot);
            md.iwa.restart = 0;
            md.iwa.idle_branch = 0;
            md.iwa.retract = 0;
            if (md.iwa.idle_old == 1 && md.iwa.active == 1) {
                md.iwa.restart = 1;
            } else if (md.iwa.shaping == 1 && md.iwa.first_ack == 0 && md.iwa.app_limited == 1) {
                md.iwa.idle_branch = 1;
                md.iwa.retract = md.iwa.retract_cond;
            }
#ifndef IWA_OMIT_P1_TAIL
            // the link's counts (iwa_act_cur, iwa_act)
            md.iwa.nflows = 0;
            md.iwa.act_b = 0;
            if (md.iwa.count_r == 1 && md.iwa.count_hi & FLOW_FRESH != 0) {
                md.iwa.act_b = 1;     // counted now, and not active in the epoch before: fresh
            }
            if (md.iwa.counting == 1) {
                md.iwa.act_a = 0;
                if (md.iwa.count_r != 0) {
                    md.iwa.act_a = 1;
                }
                if (md.iwa.step != 0) {
                    md.iwa.cur_before = act_cur_roll.execute(md.link);
                } else {
                    md.iwa.cur_before = act_cur_add.execute(md.link);
                }
                if (md.iwa.step == 1) {
                    md.iwa.act_a = md.iwa.cur_before;
                    md.iwa.act_old = act_roll.execute(md.link, md.iwa.act_new);
                } else if (md.iwa.step == 2) {
                    md.iwa.act_a = 0;
                    md.iwa.act_old = act_roll.execute(md.link, md.iwa.act_new);
                } else {
                    md.iwa.act_old = act_add.execute(md.link, md.iwa.act_new);
                }
                md.iwa.nflows = md.iwa.act_old + md.iwa.act_new;
            }
            // the reserve: rolled, and a first ACK's own frame given back to the generation it was reserved in
            // its frame is in the current generation: the parity it was reserved with is the epoch's
            bit<1> mine_cur = 0;
            iwa_parity.apply();    // FLOW_EPOCH (0x80) ^ the epoch's low bit
            if (iwa_par == 0) {
                mine_cur = 1;
            }
            md.iwa.res_a = 0;
            md.iwa.res_b = 0;
            bit<1> released = 0;
            if (md.iwa.first_ack == 1 && md.iwa.state & FLOW_ANNOUNCED != 0) {
                released = 1;
            }
            if (md.iwa.cfg.on == 1) {
                if (released == 1) {
                    if (mine_cur == 1) {
                        md.iwa.res_a = md.iwa.mtu_ns;
                    } else {
                        md.iwa.res_b = md.iwa.mtu_ns;
                    }
                }
                if (md.iwa.step == 1) {
                    md.iwa.res_a = 0;
                    md.iwa.res_cur = res_roll1.execute(md.link, md.iwa.res_old);
                } else if (md.iwa.step == 2) {
                    md.iwa.res_a = 0;
                    md.iwa.res_cur = res_roll2.execute(md.link, md.iwa.res_old);
                } else {
                    md.iwa.res_cur = res_keep.execute(md.link, md.iwa.res_old);
                }
            }
            // the start phase (flow_span, flow_end)
            if (md.iwa.first_ack == 1) {
                iwa_span_1();
                iwa_span_2();
                span_bytes.apply(md.cfg.rate_class, md.iwa.span_ns, md.iwa.span_in, iwa_m_span, iwa_e_span,
                                 iwa_mk_span);
                md.iwa.span = span_set.execute(md.iwa.slot);
                md.iwa.end_in = md.iwa.isn + md.iwa.span;
                md.iwa.end = end_set.execute(md.iwa.slot);
            } else {
                md.iwa.span = span_read.execute(md.iwa.slot);
                if (md.iwa.idle_branch == 1) {
                    md.iwa.end_in = md.iwa.seqhi + md.iwa.span;
                    md.iwa.end = end_idle.execute(md.iwa.slot);
                } else {
                    md.iwa.end = end_read.execute(md.iwa.slot);
                }
            }
            md.iwa.vq = (bit<32>)vq_read.execute(md.link);
            md.iwa.backlog = (bit<32>)q_tick.execute(md.link);   // the link's queue now (queue.p4)

            // ---- the grant (TnaShaper._grant), from what pass 1 read ----
#ifndef IWA_OMIT_GRANT
#if IWA_GRANT_EGRESS
            // ---- to egress, which works out the grant and recirculates the ACK (iwa_egress.p4) ----
            bit<8> reached = 0;
            if (iwa_short == 0) {
                reached = 1;           // seqhi + mss >= mark
            }
            hdr.bridge.setInvalid();
            hdr.iwa_b.setValid();
            hdr.iwa_b.kind = BRIDGE_IWA;
            hdr.iwa_b.port = (bit<16>)ig_intr_md.ingress_port;
            hdr.iwa_b.rate_class = md.cfg.rate_class;
            hdr.iwa_b.scale = md.iwa.scale;
            hdr.iwa_b.shaping = (bit<8>)md.iwa.shaping;
            hdr.iwa_b.first_ack = (bit<8>)md.iwa.first_ack;
            hdr.iwa_b.restart = (bit<8>)md.iwa.restart;
            hdr.iwa_b.idle_branch = (bit<8>)md.iwa.idle_branch;
            hdr.iwa_b.retract = (bit<8>)md.iwa.retract;
            hdr.iwa_b.released = (bit<8>)released;
            hdr.iwa_b.mine_cur = (bit<8>)mine_cur;
            hdr.iwa_b.reached = reached;
            hdr.iwa_b.ack = hdr.tcp.ackNo;
            hdr.iwa_b.own = md.iwa.own;
            hdr.iwa_b.edge = md.iwa.edge;
            hdr.iwa_b.win32 = md.iwa.win32;
            hdr.iwa_b.acked = md.iwa.acked;
            hdr.iwa_b.mss = md.iwa.cfg.mss;
            hdr.iwa_b.iw_min = md.iwa.cfg.iw_min;
            hdr.iwa_b.seqhi_mss = iwa_seqhi_mss;
            hdr.iwa_b.res_cur = md.iwa.res_cur;
            hdr.iwa_b.res_old = md.iwa.res_old;
            hdr.iwa_b.target_ns = md.iwa.cfg.target_ns;
            hdr.iwa_b.mtu_ns = md.iwa.mtu_ns;
            hdr.iwa_b.vq = md.iwa.vq;
            hdr.iwa_b.now = md.iwa.now;
            hdr.iwa_b.backlog = md.iwa.backlog;
            hdr.iwa_b.nflows = md.iwa.nflows;
            hdr.iwa_b.span = md.iwa.span;
            hdr.iwa_b.end = md.iwa.end;
            hdr.iwa_b.state = md.iwa.state;
            // the recirculation port of this pipe (TICK_PORT: the generator's, whose ticks the mark tells apart)
            ig_tm_md.ucast_egress_port = ig_intr_md.ingress_port[8:7] ++ (bit<7>)TICK_PORT;
#else
#include "iwa_grant.p4"
            // the second pass (TnaShaper._resubmit): the 96-bit header, op 12, field 16, scale 4, vq 32, word 32, in the
            // queue's pass2_h's byte-sized fields (iwa_types.p4)
            bit<12> op = md.iwa.op;
            md.pass2.setValid();
            // (through the hash unit: the slices, written as ALU moves, split every field their PHV group touches at bits
            // 12 and 16, and the actions that write them need more sources than an ALU has)
            iwa_pack_1(op);
            iwa_pack_2();
            @in_hash { md.pass2.base = md.iwa.vq_ns; }
            iwa_pack_3();   // the word, through the hash unit in an action of its own: as `@in_hash { md.pass2.step = word; }`
                            // beside base's, bf-p4c 9.13.4 made it an ALU move (its action read the word's slices), which tied
                            // pass2_h's 16-bit halves of the word to the grant's whole PHV group (split at bit 16)
            ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
#endif
#endif
#endif  // IWA_OMIT_P1_TAIL (the counts, the reserve, the start phase, the link's reads and the grant)
        }
    }
#endif
}
