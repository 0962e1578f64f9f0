/* The access bottleneck on Tofino 1 (tna) and Tofino 2 (t2na): many access links
 * in one pipe, each a byte-accurate phantom queue (docs/tofino-design.md).
 *
 * Where a packet goes (one ingress pass; a second pass when its link was idle or it is dropped):
 *   TnaIngressParser        parser.p4: second-pass header or port metadata; a tick, or
 *                           Ethernet / IPv4 / TCP / UDP
 *   TnaIngress
 *     LinkMap               link.p4: which port; which link (the client's address, or a
 *                           tick's number); the link's knobs; the frame's transmit time
 *                           (two tables, no product)
 *     tick                  a packet-generator packet refreshes its link's queue and CoDel
 *                           state (so that no stored time falls behind serial time) and ends;
 *                           a PIE link's tick is PIE's update (pie.p4), in two passes
 *   upstream (client -> server): never queued; forwarded
 *   downstream (server -> client): through the link's modelled queue
 *     PHANTOM_QUEUE         queue.p4: q_admit commits the frame and returns tat'
 *     QueuePredictTna       queue.p4: backlog, sojourn, over the buffer? the decision
 *     AQM                   the buffer (bfifo; every AQM's tail drop), then CoDel when the
 *                           link's AQM is CoDel (codel.p4), PIE's gate when it is PIE (pie.p4),
 *                           RED's gate when it is RED (red.p4: every packet takes a second pass);
 *                           IWA follows (docs/tofino.md)
 *     second pass           resubmitted when the link was idle (q_add adds the frame's
 *                           time) or the frame is dropped (q_refund takes it back); a
 *                           CoDel drop's second pass also sets its next drop time; every
 *                           RED packet takes one (red.p4: the average, count_bytes, the gate)
 *   counters; TelemetryMirror (telemetry.p4: mirror header, I2E mirror to the monitor)
 *   TnaIngressDeparser      parser.p4
 *   TnaEgressParser         a mirror copy or a forwarded packet (the bridge byte says)
 *   TnaEgress               telemetry.p4's TelemetryRecord builds the 0x88B5 record frame
 *   TnaEgressDeparser
 *
 * As on BMv2, the modelled queue adds no delay itself: the access network does the
 * waiting, and the switch forwards at line rate. Shared with the v1model program:
 * ../include/constants.p4 (every number) and ../include/wire.p4 (the wire formats). */
/* Access links per pipe: a compile-time constant, defined before the shared constants
 * (whose N_LINKS is BMv2's). Every per-link register has N_LINKS cells; a link's knobs are
 * table entries. docs/tofino.md says how many fit (-DN_LINKS=2^k -DLINK_BITS=k). */
#ifndef N_LINKS
#define N_LINKS 16384
#endif
#ifndef LINK_BITS
#define LINK_BITS 16
#endif
/* CoDel (codel.p4) lengthens the chain: Tofino 2's 20 stages hold it beside the queue (15 in all; 20 with PIE),
 * Tofino 1's 12 the queue alone (11; with CoDel its PHV cannot be allocated), so there the program
 * is the buffer only (docs/tofino.md). -DWITH_CODEL=0 or 1 overrides. */
#ifndef WITH_CODEL
#if __TARGET_TOFINO__ == 2
#define WITH_CODEL 1
#else
#define WITH_CODEL 0
#endif
#endif
/* PIE (pie.p4) updates on the packet generator's ticks, in a chain of its own. Tofino 2 holds it
 * beside CoDel (20 of 20 stages); -DWITH_PIE=0 or 1 overrides. */
#ifndef WITH_PIE
#if __TARGET_TOFINO__ == 2
#define WITH_PIE 1
#else
#define WITH_PIE 0
#endif
#endif
/* RED (red.p4) takes every packet of its links through a second pass, with seven logs' and four
 * exponentials' chains. It compiles for Tofino 2 instead of CoDel and PIE (18 of 20 stages: `make build
 * TARGET=tofino2-red` passes -DWITH_RED=1 -DWITH_CODEL=0 -DWITH_PIE=0); beside them bf-p4c cannot allocate
 * the PHV (docs/tofino.md). */
#ifndef WITH_RED
#define WITH_RED 0
#endif
/* IWA (iwa.p4): the flow tracker, the start shaper in two passes (upstream ACKs are resubmitted) and CoDel
 * for what no window holds. `make build TARGET=tofino2-iwa` passes -DWITH_IWA=1 -DWITH_CODEL=1 -DWITH_PIE=0
 * (docs/tofino.md: what fits). */
#ifndef WITH_IWA
#define WITH_IWA 0
#endif
#ifndef RED_REST_ENTRIES
#define RED_REST_ENTRIES 32768   /* red.p4's red_rest: Log2(count1 p_b) >> 2 below 2^15 */
#endif
#define RED_EXP_ENTRIES 32768    /* red.p4's RedExp: l >> 2 below 2^15 */
#define WITH_TICK_STATE (WITH_CODEL || WITH_PIE)

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../include/constants.p4"
#include "../include/wire.p4"
#include "types.p4"
#include "parser.p4"
#include "link.p4"
#include "queue.p4"
#if WITH_CODEL
#include "codel.p4"
#endif
#if WITH_PIE
#include "pie.p4"
#endif
#if WITH_RED
#include "red.p4"
#endif
#if WITH_IWA
#include "iwa.p4"
#endif
#include "telemetry.p4"
#if WITH_IWA && IWA_GRANT_EGRESS
#include "iwa_egress.p4"
#endif

control TnaIngress(inout tna_headers_t hdr, inout tna_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    LinkMap() links;
    PHANTOM_QUEUE(md)
    QueuePredictTna() predict;
#if WITH_CODEL
    CODEL_STATE(md)
    CodelFirstPass() codel_first;
    CodelSecondPass() codel_second;
    CodelDecide() codel_decide;
    CodelTick() codel_tick;
#endif
#if WITH_PIE
    PIE_STATE(md)
    PieUpdate() pie_update;
    PieGate() pie_gate_of;
    PieDecide() pie_decide;
    bit<32> pie_used;
#endif
#if WITH_RED
    RED_STATE(md)
    RedFirstPass() red_first;
    RedDecide() red_decide;
    RedSecondPass() red_second;
#endif
#if WITH_IWA
    IWA_STATE(md)
    IwaCfg() iwa_knobs;
    IwaProduct() span_bytes;      // ns_to_bytes(age + lead + target)
    bit<32> iwa_m_span; bit<8> iwa_e_span; bit<32> iwa_mk_span;   // its temporaries
    IwaScaleDown() own_window;    // window << scale (pass 1)
    IwaScaleDown() p2_window;     // field << scale (pass 2)
    IwaSynRecord() syn_record;
    IwaProduct() vq_time;         // bytes_to_ns: the grant's (ingress), or the second pass's (the grant in egress)
#if IWA_GRANT_EGRESS
    // the second pass converts the bytes egress sends (iwa_egress.p4) and adds the gap
    bit<32> iwa_m_vq; bit<8> iwa_e_vq; bit<32> iwa_mk_vq;
    action iwa_p2_gap() { md.iwa.vq_ns = md.iwa.vq_ns + hdr.iwa_rc.gap; }
#else
#undef IWA_ACK
#define IWA_ACK hdr.tcp.ackNo
#include "iwa_grant_steps.p4"   // (before iwa_steps.p4: its packing reads the grant's word)
#endif
#include "iwa_steps.p4"
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash_dn;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_hash_up;
    Counter<bit<32>, bit<8>>(256, CounterType_t.PACKETS) iwa_events;   // op bits of the second passes
#endif
    TelemetryMirror() telemetry;
    Random<bit<32>>() rng;

    // class x decision, over all links (as the v1model program's class_decision) ...
    Counter<bit<64>, bit<6>>(COUNTER_SLOTS, CounterType_t.PACKETS_AND_BYTES) class_decision;
    // ... and each link's drops. (Every decision per link, N_LINKS x 4 counters, filled the stage
    // that holds them at 2^15 links: docs/tofino.md.)
    Counter<bit<32>, link_id_t>(N_LINKS, CounterType_t.PACKETS_AND_BYTES) link_drops;

    // A TCP segment carries data when the IPv4 total length exceeds the IPv4 and TCP headers
    // (20 + 4 * data offset): one range lookup, one stage, instead of a subtraction chain.
    action set_class(bit<8> cls) { md.cls = cls; }
    table tcp_class {
        key = {
            hdr.tcp.dataOffset : exact @name("data_offset");
            hdr.ipv4.totalLen  : range @name("total_len");
        }
        actions = { set_class; }
        default_action = set_class(CLASS_TCP_CTRL);
        size = 16;
        const entries = {
            (5, 41 .. 65535) : set_class(CLASS_TCP_EST);
            (6, 45 .. 65535) : set_class(CLASS_TCP_EST);
            (7, 49 .. 65535) : set_class(CLASS_TCP_EST);
            (8, 53 .. 65535) : set_class(CLASS_TCP_EST);
            (9, 57 .. 65535) : set_class(CLASS_TCP_EST);
            (10, 61 .. 65535) : set_class(CLASS_TCP_EST);
            (11, 65 .. 65535) : set_class(CLASS_TCP_EST);
            (12, 69 .. 65535) : set_class(CLASS_TCP_EST);
            (13, 73 .. 65535) : set_class(CLASS_TCP_EST);
            (14, 77 .. 65535) : set_class(CLASS_TCP_EST);
            (15, 81 .. 65535) : set_class(CLASS_TCP_EST);
        }
    }

    apply {
        // through the hash unit: a plain move would tie the 48-bit intrinsic field's layout to
        // every field the queue's arithmetic touches, which PHV allocation cannot satisfy
        @in_hash { md.now = (time_t)ig_prsr_md.global_tstamp[31:0]; }
        @in_hash { md.now_c = (time_t)ig_prsr_md.global_tstamp[35:4]; }   // CODEL_TIME_SHIFT
#if WITH_RED
        @in_hash { md.red.now = (time_t)ig_prsr_md.global_tstamp[31:0]; }   // red.p4's own copy
#endif
        md.length = 0;
        md.cls = CLASS_OTHER;
        md.decision = DECISION_BYPASS;
        md.reason = REASON_NONE;
        md.s1 = 0;
        md.s2 = 0;
        md.backlog_ns = 0;
        md.sojourn_ns = 0;
        md.tx_ns = 0;

        // A tick ends here, or (with CoDel or PIE, which need the link's knobs for it) after LinkMap.
        if (md.tick == 1) {
            md.link = (link_id_t)hdr.tick.packet_id;   // (a tick has no IPv4 header: link_of leaves it)
#if !WITH_TICK_STATE
            q_tick.execute(md.link);
            ig_dprsr_md.drop_ctl = 1;
            exit;
#endif
        }
#if WITH_IWA && IWA_GRANT_EGRESS
        // a recirculated ACK (its second pass) is routed from the port it came in on
        PortId_t in_port = ig_intr_md.ingress_port;
        if (hdr.iwa_rc.isValid()) {
            in_port = (PortId_t)hdr.iwa_rc.port;
        }
        links.apply(hdr, in_port, md, ig_tm_md);
#else
        links.apply(hdr, ig_intr_md.ingress_port, md, ig_tm_md);
#endif
        // A tick and a packet take exclusive branches (an exit would make every later table wait for the
        // tick's chain: bf-p4c then places the two one after the other), and so do the AQMs: a link runs
        // one, and PHV allocation overlays what the others' fields would hold (CoDel and PIE fit Tofino 2
        // together only so).
        if (md.tick == 1) {
#if WITH_TICK_STATE
            if (md.second == 1) {
#if WITH_PIE
                // a PIE tick's second pass (pie.p4): the burst allowance, p and the gate
                if (md.pass2.base == 0 && md.pass2.count & (PIE_QLOW | PIE_OLDLOW) == (PIE_QLOW | PIE_OLDLOW)) {
                    pie_used = burst_reset.execute(md.link);
                } else {
                    pie_used = burst_add.execute(md.link);
                }
                pie_gate_of.apply(md, pie_used);
                pie_write.execute(md.link);
                gate_write.execute(md.link);
#endif
                ig_dprsr_md.drop_ctl = 1;
            } else {
                md.pie_q = (bit<32>)q_tick.execute(md.link);     // the queue's delay, tat' - now
                if (md.cfg.aqm == AQM_PIE) {
#if WITH_PIE
                    // PIE's update (pie.p4: every tick is one): its first pass, resubmitted
                    md.pie_p = pie_read.execute(md.link);
                    md.pie_old = pie_swap.execute(md.link);
                    pie_update.apply(md, ig_dprsr_md);
#else
                    ig_dprsr_md.drop_ctl = 1;
#endif
                } else {
#if WITH_CODEL
                    // CoDel's stored times kept within serial time (codel.p4); a PIE link's are never read
                    codel_tick.apply(md);
                    fa_tick.execute(md.link);
                    dn_tick.execute(md.link);
#endif
                    ig_dprsr_md.drop_ctl = 1;
                }
            }
#endif
        } else {
            hdr.bridge.setValid();
            hdr.bridge.kind = BRIDGE_NORMAL;

#if WITH_IWA
            if (md.downstream == 0 && md.cfg.configured == 1 && hdr.tcp.isValid()) {
#ifndef IWA_OMIT_UPSTREAM
#include "iwa_upstream.p4"
#endif
            } else
#endif
            if (md.downstream == 1 && md.cfg.configured == 1 && hdr.ipv4.isValid()) {
                if (md.second == 1) {
                    // second pass (queue.p4): add the idle link's frame, or refund a drop
                    if (md.pass2.op & PASS2_ADD != 0) {
                        q_add.execute(md.link);
                    } else if (md.pass2.op & PASS2_REFUND != 0) {
                        q_refund.execute(md.link);
                    }
                    md.backlog_ns = md.pass2.base;
#if WITH_RED
                    if (md.cfg.aqm == AQM_RED && md.pass2.op & PASS2_RED != 0) {
                        // RED's second pass (red.p4): the step, the frame's bytes, the next packet's gate
                        if (md.pass2.count & RED_P2_DOWN != 0) {
                            md.red.avg2 = red_avg_down.execute(md.link);
                        } else {
                            md.red.avg2 = red_avg_up.execute(md.link);
                        }
                        if (md.pass2.count & RED_P2_LEN != 0) {
                            md.red.cb = red_bytes_len.execute(md.link);     // crossed th_min
                        } else if (md.pass2.count & RED_P2_SET != 0) {
                            md.red.cb = red_bytes_zero.execute(md.link);    // dropped
                        } else {
                            md.red.cb = red_bytes_add.execute(md.link);
                        }
                        red_second.apply(md);
                        red_gate_write.execute(md.link);
                        // (through the hash unit: a plain move would join the record's words to RED's groups)
                        @in_hash { md.s1 = md.red.avg2; }
                        @in_hash { md.s2 = md.red.cb; }
                    }
#endif
                } else {
                    md.rand = rng.get();
#if WITH_RED
                    md.tat = q_admit.execute(md.link, md.red.before);
                    if (md.cfg.aqm == AQM_RED) {
                        // RED's first pass reads its registers before the queue's prediction (red.p4):
                        // three copies of the average, one per group of RED's arithmetic (types.p4)
                        md.red.avg = red_avg_read.execute(md.link, md.red.x_avg, md.red.avg_d);
                        md.red.gate = red_gate_read.execute(md.link);
                    }
#else
                    md.tat = q_admit.execute(md.link);
#endif
                }
                predict.apply(md, ig_dprsr_md);   // the buffer: tail drop; a second pass where needed
                if (md.cfg.aqm == AQM_CODEL) {
#if WITH_CODEL
                    if (md.second == 1) {
                        // CoDel's second pass (codel.p4): the drop's new drop_next, from the control law
                        if (md.pass2.op & (PASS2_CODEL_STEP | PASS2_CODEL_ENTER) != 0) {
                            codel_second.apply(md);
                            dn_pass2.execute(md.link);
                            if (md.pass2.op & PASS2_CODEL_ENTER != 0) {
                                lc_zero.execute(md.link);
                            }
                        }
                    } else {
                        codel_first.apply(md);
                        if (md.q_short == 0) {
                            // the frame fits the buffer (a tail drop never enters the queue: CoDel never
                            // sees it)
                            if (md.codel_over == 0) {
                                md.codel_ok = fa_clear.execute(md.link);
                            } else {
                                md.codel_ok = fa_check.execute(md.link);
                            }
                            if (md.codel_ok == 1) {
                                md.codel_was = drop_set.execute(md.link);
                                if (md.codel_was == 1) {
                                    md.codel_r = (bit<32>)dn_continue.execute(md.link);
                                    if (md.codel_r & CODEL_FRESH != 0) {
                                        lc_inc.execute(md.link);
                                    }
                                } else {
                                    md.codel_r = (bit<32>)dn_enter.execute(md.link);
                                    md.codel_lc = lc_read.execute(md.link);
                                }
                                codel_decide.apply(hdr.ipv4.ecn, md, ig_dprsr_md);
                            } else {
                                drop_clear.execute(md.link);
                            }
                        }
                    }
#endif
                } else if (md.cfg.aqm == AQM_RED) {
#if WITH_RED
                    if (md.second == 0) {
                        // RED's first pass (red.p4): decide with the gate the previous packet left
                        red_first.apply(md);
                        md.red.above = 0;
                        md.red.forced = 0;
                        if (md.backlog_ns != 0 && md.red.gate != RED_T_BELOW) {
                            md.red.above = 1;
                            if (md.red.gate == RED_T_FORCED) {
                                md.red.forced = 1;
                            }
                        }
                        md.red.old = red_old_swap.execute(md.link);
                        red_decide.apply(md, ig_dprsr_md);
                    }
#endif
                } else if (md.cfg.aqm == AQM_PIE && md.second == 0 && md.q_short == 0) {
#if WITH_PIE
                    // a frame that fits the buffer: tested against the gate (pie.p4)
                    md.pie_gate = gate_read.execute(md.link);
                    pie_decide.apply(hdr.ipv4.ecn, md, ig_dprsr_md);
#endif
                }
                if (md.decision == DECISION_MARK) {
                    hdr.ipv4.ecn = 3;   // CE, in the pass that forwards the packet
                }
                if (md.second == 0 && md.decision == DECISION_DROP) {
                    link_drops.count(md.link);   // once per packet: in its first pass
                }
            }
            if (hdr.udp.isValid()) {
                md.cls = CLASS_UDP;
            } else if (hdr.tcp.isValid()) {
                tcp_class.apply();
            }
            if (md.second == 0) {
                class_decision.count(md.cls[3:0] ++ md.decision[1:0]);
            }
            // the record, from the pass that ends the packet's way through the switch
#if WITH_IWA && IWA_GRANT_EGRESS
            if (md.decision != DECISION_BYPASS && md.cfg.telemetry == 1 && ig_dprsr_md.resubmit_type == 0 &&
                    !hdr.iwa_b.isValid()) {   // (an ACK on its way to egress's grant comes back)
#else
            if (md.decision != DECISION_BYPASS && md.cfg.telemetry == 1 && ig_dprsr_md.resubmit_type == 0) {
#endif
                telemetry.apply(md, ig_dprsr_md);
            }
        }
    }
}

control TnaEgress(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    TelemetryRecord() record;
#if WITH_IWA && IWA_GRANT_EGRESS
    IwaGrantEgress() iwa_grant;
#endif
    apply {
        if (hdr.tmirror.isValid()) {
            record.apply(hdr);
        }
#if WITH_IWA && IWA_GRANT_EGRESS
        else if (hdr.iwa_b.isValid()) {
            iwa_grant.apply(hdr, md);
        }
#endif
    }
}

Pipeline(TnaIngressParser(), TnaIngress(), TnaIngressDeparser(),
         TnaEgressParser(), TnaEgress(), TnaEgressDeparser()) pipe;

Switch(pipe) main;
