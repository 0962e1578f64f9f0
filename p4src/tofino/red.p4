/* RED (ns-2's, byte mode, as ../include/aqm_red.p4) per access link on Tofino 2, cut so that each
 * register is touched once per pass and nothing multiplies two run-time values.
 * refmodel/tofino_red.py: TnaRed is the executable twin of these steps, and tests/test_tofino_red.py
 * and tools/red_clock.py measure it against ns-2's RED (refmodel/red.py, which BMv2 matches).
 *
 * Every packet of a RED link takes two passes (docs/tofino.md, "RED's average on a Tofino": ticks changed
 * RED's drops, a second pass per packet does not):
 *   first pass   decides with what the previous packet's second pass left: the gate (red_gate), RED's
 *                early-drop test reduced to one signed word T, so that the packet drops when
 *                Log2(u) - Log2(size) <= T; and works out its own step of the average from red_avg
 *                (ns-2's idle decay, or the EWMA's w_q of the distance to the backlog);
 *   second pass  adds the step (red_avg), counts the frame (red_bytes: count_bytes, 0 after a drop,
 *                the length when the average crossed th_min) and works out the next packet's gate.
 * Four registers per link:
 *   red_avg     the average, ns of drain time      red_avg_read (first pass: 3 copies) / _up, _down
 *   red_gate    T, or RED_T_BELOW/ALWAYS/FORCED    red_gate_read (first) / red_gate_write (second)
 *   red_bytes   count_bytes                        red_bytes_add / _zero / _len (second)
 *   red_old     ns-2's old flag                    red_old_swap (first)
 * Logs and exponentials are ../include/logexp.p4's, the same numbers, in tables a Tofino holds:
 *   TNA_LOG2(N)  x's leading one (a TCAM of constant rows whose actions shift by constants: m = x >> e,
 *                l = e in Q12 + a constant), then LOG_ROWS[m] added to l: two stages;
 *   RedExp       one exact row per l >> 2 (Exp2 reads no more of l), the controller's: one stage after
 *                the key's shift.
 * Log2(1 - count1 p_b) is one table the controller writes too (red_rest: refmodel/tofino_red.py, rest_of).
 * What differs from the v1model's RED (refmodel/tofino_red.py measures each):
 *   - a packet is judged with the average and count_bytes the previous packet left;
 *   - count1 is the next packet's, taken at mean size: (count_bytes + mps) / mps, unfloored;
 *   - the idle decay is Exp2(Log2(idle) + log_halvings) halvings once idle >= dm packet times, where the
 *     v1model reads a range table per link;
 *   - a packet of the same link between the two passes meets the state without the first one's update,
 *     and a frame longer than an empty buffer (dropped with no second pass) never reaches red_avg. */
#ifndef _TNA_RED_P4_
#define _TNA_RED_P4_

/* The gate's words that are not a threshold (refmodel/tofino_red.py): every threshold lies between. */
const bit<32> RED_T_BELOW  = 0xC0000000;   // -2^30: avg < th_min
const bit<32> RED_T_ALWAYS = 0x40000000;   //  2^30: count1 p_b >= 1
const bit<32> RED_T_FORCED = 0x40000001;   //  avg >= th_max

/* RED's flags in the second pass's count field (a RED link runs no CoDel and no PIE) */
const bit<16> RED_P2_DOWN = 1;    // the step lowers the average
const bit<16> RED_P2_SET  = 2;    // count_bytes = 0 (a drop) ...
const bit<16> RED_P2_LEN  = 4;    // ... or the frame's length (the average crossed th_min)
const bit<8>  PASS2_RED   = 64;   // pass2.op: RED's second pass

/* Declared inside the ingress control (RED_STATE(md)), as the queue's (queue.p4 says why). */
#define RED_STATE(md) \
    Register<bit<32>, link_id_t>(N_LINKS, 0) red_avg; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_avg) red_avg_read = { \
        void apply(inout bit<32> a, out bit<32> r, out bit<32> r2, out bit<32> r3) { r = a; r2 = a; r3 = a; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_avg) red_avg_up = { \
        void apply(inout bit<32> a, out bit<32> r) { a = a |+| md.pass2.step; r = a; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_avg) red_avg_down = { \
        void apply(inout bit<32> a, out bit<32> r) { a = a |-| md.pass2.step; r = a; } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, RED_T_BELOW) red_gate; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_gate) red_gate_read = { \
        void apply(inout bit<32> g, out bit<32> r) { r = g; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_gate) red_gate_write = { \
        void apply(inout bit<32> g) { g = md.red.gate2; } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) red_bytes; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_bytes) red_bytes_add = { \
        void apply(inout bit<32> c, out bit<32> r) { c = c |+| (bit<32>)md.length; r = c; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_bytes) red_bytes_zero = { \
        void apply(inout bit<32> c, out bit<32> r) { c = 0; r = 0; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(red_bytes) red_bytes_len = { \
        void apply(inout bit<32> c, out bit<32> r) { c = (bit<32>)md.length; r = c; } \
    }; \
    Register<bit<8>, link_id_t>(N_LINKS, 0) red_old; \
    RegisterAction<bit<8>, link_id_t, bit<8>>(red_old) red_old_swap = { \
        void apply(inout bit<8> o, out bit<8> r) { \
            r = o; \
            if (md.red.above == 0) { \
                o = 0; \
            } else if (md.red.forced == 0) { \
                o = 1; \
            } \
        } \
    };

/* Log2(md.red.x_N) + C into md.red.l_N (C: 0 or a knob's field): x's leading one (a TCAM of constant rows
 * whose actions shift by constants: m = x >> e, l = C + e in Q12), then LOG_ROWS[m] added to l. */
#define RED_LEAD(N, C, K) action lead_##N##_##K() { md.red.m_##N = md.red.x_##N >> K; \
                                                  md.red.l_##N = C + (K << LOG_FRAC); }
#define TNA_LOG2(N, C) \
    action lead_##N##_0() { md.red.m_##N = md.red.x_##N; md.red.l_##N = C; } \
    RED_LEAD(N, C, 1)  RED_LEAD(N, C, 2)  RED_LEAD(N, C, 3)  RED_LEAD(N, C, 4)  RED_LEAD(N, C, 5) \
    RED_LEAD(N, C, 6)  RED_LEAD(N, C, 7)  RED_LEAD(N, C, 8)  RED_LEAD(N, C, 9)  RED_LEAD(N, C, 10) \
    RED_LEAD(N, C, 11) RED_LEAD(N, C, 12) RED_LEAD(N, C, 13) RED_LEAD(N, C, 14) RED_LEAD(N, C, 15) \
    RED_LEAD(N, C, 16) RED_LEAD(N, C, 17) RED_LEAD(N, C, 18) RED_LEAD(N, C, 19) RED_LEAD(N, C, 20) \
    RED_LEAD(N, C, 21) RED_LEAD(N, C, 22) \
    table red_lead_##N { \
        key = { md.red.x_##N : ternary @name("x"); } \
        actions = { \
            lead_##N##_0; lead_##N##_1; lead_##N##_2; lead_##N##_3; lead_##N##_4; lead_##N##_5; \
            lead_##N##_6; lead_##N##_7; lead_##N##_8; lead_##N##_9; lead_##N##_10; lead_##N##_11; \
            lead_##N##_12; lead_##N##_13; lead_##N##_14; lead_##N##_15; lead_##N##_16; lead_##N##_17; \
            lead_##N##_18; lead_##N##_19; lead_##N##_20; lead_##N##_21; lead_##N##_22; \
        } \
        const default_action = lead_##N##_0(); \
        size = 24; \
        const entries = { \
            32w0x80000000 &&& 32w0x80000000 : lead_##N##_22(); 32w0x40000000 &&& 32w0xC0000000 : lead_##N##_21(); \
            32w0x20000000 &&& 32w0xE0000000 : lead_##N##_20(); 32w0x10000000 &&& 32w0xF0000000 : lead_##N##_19(); \
            32w0x08000000 &&& 32w0xF8000000 : lead_##N##_18(); 32w0x04000000 &&& 32w0xFC000000 : lead_##N##_17(); \
            32w0x02000000 &&& 32w0xFE000000 : lead_##N##_16(); 32w0x01000000 &&& 32w0xFF000000 : lead_##N##_15(); \
            32w0x00800000 &&& 32w0xFF800000 : lead_##N##_14(); 32w0x00400000 &&& 32w0xFFC00000 : lead_##N##_13(); \
            32w0x00200000 &&& 32w0xFFE00000 : lead_##N##_12(); 32w0x00100000 &&& 32w0xFFF00000 : lead_##N##_11(); \
            32w0x00080000 &&& 32w0xFFF80000 : lead_##N##_10(); 32w0x00040000 &&& 32w0xFFFC0000 : lead_##N##_9(); \
            32w0x00020000 &&& 32w0xFFFE0000 : lead_##N##_8(); 32w0x00010000 &&& 32w0xFFFF0000 : lead_##N##_7(); \
            32w0x00008000 &&& 32w0xFFFF8000 : lead_##N##_6(); 32w0x00004000 &&& 32w0xFFFFC000 : lead_##N##_5(); \
            32w0x00002000 &&& 32w0xFFFFE000 : lead_##N##_4(); 32w0x00001000 &&& 32w0xFFFFF000 : lead_##N##_3(); \
            32w0x00000800 &&& 32w0xFFFFF800 : lead_##N##_2(); 32w0x00000400 &&& 32w0xFFFFFC00 : lead_##N##_1(); \
        } \
    }

/* LOG_ROWS (m -> log2 in Q12), the v1model's constant rows keyed on a whole word (a key on a slice of m
 * would slice every field of the arithmetic alike in the PHV; p4src/include/rows/log2_rows_word.p4), added
 * to l in the same action: l = l + Log2(m). A control per use; zero is Log2(0). */
control RedLog(in bit<32> m, inout int<32> l)(bit<32> zero) {
    action set_log(bit<32> v) { l = l + (int<32>)v; }
    table log2_rows {
        key = { m : exact @name("m"); }
        actions = { set_log; }
        const default_action = set_log(zero);
        size = 1024;
        const entries = {
#include "../include/rows/log2_rows_word.p4"
        }
    }
    apply { log2_rows.apply(); }
}

/* Exp2(l) for l = 4 * l4 + (0..3), 0 <= l < 2^17: one exact row per l4 (Exp2 reads no more of l), which
 * the controller writes (refmodel/tofino_red.py: exp_rows). A miss gives the constructor's ``miss``: 0 where
 * l can only be negative, a saturated value where it can only be too large. */
control RedExp(in int<32> l4, out bit<32> y)(bit<32> miss) {
    action set_exp(bit<32> v) { y = v; }
    table red_exp {
        key = { l4 : exact @name("l4"); }
        actions = { set_exp; }
        default_action = set_exp(miss);
        size = RED_EXP_ENTRIES;
    }
    apply { red_exp.apply(); }
}

/* The first pass: the step of the average and the test's sign. Reads md.red.avg and md.red.gate (the
 * registers' answers), md.red.backlog (a copy of the queue's backlog) and md.red.before (the tat q_admit
 * found). */
control RedFirstPass(inout tna_metadata_t md) {
    TNA_LOG2(u, 0)
    TNA_LOG2(len, 0)
    TNA_LOG2(avg, 0)
    TNA_LOG2(idle, md.red.cfg.log_halvings)
    TNA_LOG2(diff, md.red.cfg.log_wq)
    // u = 0 drops whatever the gate (ns-2: u is below any probability): its log is -2^29, below every
    // threshold a gate holds (LOG_ZERO and more), so that one sign decides
    RedLog(32w0xE0000000) log_u;
    RedLog(32w0xFF000000) log_len;
    RedLog(32w0xFF000000) log_avg;
    RedLog(32w0xFF000000) log_idle;
    RedLog(32w0xFF000000) log_diff;
    RedExp(32w0x7FFFFFFF) exp_half;   // its l is never negative (idle >= idle_min): a miss is too many halvings
    RedExp(0) exp_dec;
    RedExp(0) exp_dstep;
    RedExp(0) exp_step;

    action idle_time() { md.red.x_idle = (bit<32>)(md.red.now - md.red.before); }
    // short: idle < idle_min (the difference's sign), where ns-2's m is below the v1model table's first entry
    action idle_over() { md.red.no_decay = md.red.x_idle - (bit<32>)md.red.cfg.idle_min; }
    action idle_check() { md.red.no_decay = md.red.no_decay >> 31; }   // its sign: idle < idle_min
    // 0 when the queue is empty and the idle time long enough: one word for one gateway
    action decay_check() { md.red.no_decay = md.red.backlog2 | md.red.no_decay; }
    action differences() {
        md.red.up = (int<32>)(md.red.backlog - md.red.avg);
        md.red.x_diff = md.red.avg - md.red.backlog;
    }
    action distance() {
        md.red.x_diff = (bit<32>)max(md.red.up, (int<32>)md.red.x_diff);
        md.red.flags_b = (bit<32>)md.red.up >> 31;     // RED_P2_DOWN when the backlog is below
    }
    action avg_wq() { md.red.lw = md.red.l_avg + md.red.cfg.log_wq; }
    action decay_logs() {
        md.red.l_avg = md.red.l_avg - (int<32>)md.red.y_half;     // Log2 of the decayed average
        md.red.lw = md.red.lw - (int<32>)md.red.y_half;           // and of w_q times it
    }
    // Exp2's keys, l >> 2, in place
    action half_key() { md.red.l_idle = md.red.l_idle >> 2; }
    action step_key() { md.red.l_diff = md.red.l_diff >> 2; }
    action quarters() { md.red.l_avg = md.red.l_avg >> 2; md.red.lw = md.red.lw >> 2; }
    action decayed() { md.red.y_dec = md.red.y_dec |-| md.red.y_dstep; }
    action decay_step() { md.red.step_d = md.red.avg_d - md.red.y_dec; }
    // d = Log2(u) - Log2(size), then gate - d, then its sign (0: the packet drops), in place
    action test_left() { md.red.d = md.red.l_u - md.red.l_len; }
    action test_sides() { md.red.d = (int<32>)md.red.gate - md.red.d; }
    action test_sign() { md.red.d = (int<32>)((bit<32>)md.red.d >> 31); }

    apply {
        // copies through the hash unit, which join no group of RED's arithmetic to another's (types.p4)
        @in_hash { md.red.x_len = (bit<32>)md.length; }
        @in_hash { md.red.x_u = md.rand >> 16; }   // u: the draw's top 16 bits
        @in_hash { md.red.backlog = md.backlog_ns; }
        @in_hash { md.red.backlog2 = md.backlog_ns; }
        // the test's sign: Log2(u) - Log2(size) against the gate
        red_lead_u.apply();   log_u.apply(md.red.m_u, md.red.l_u);
        red_lead_len.apply(); log_len.apply(md.red.m_len, md.red.l_len);
        test_left();
        test_sides();
        test_sign();
        // Both steps, each in its own chain (a branch would make them wait for its condition); RedDecide
        // takes the idle decay's when the queue is empty and the link idle long enough (no_decay = 0).
        idle_time();
        idle_over();
        idle_check();
        decay_check();
        // ns-2's idle decay, then its step towards the empty queue: Log2(avg) less the halvings
        red_lead_idle.apply(); log_idle.apply(md.red.m_idle, md.red.l_idle);
        half_key();
        exp_half.apply(md.red.l_idle, md.red.y_half);
        red_lead_avg.apply();  log_avg.apply(md.red.m_avg, md.red.l_avg);
        avg_wq();
        decay_logs();
        quarters();
        exp_dec.apply(md.red.l_avg, md.red.y_dec);
        exp_dstep.apply(md.red.lw, md.red.y_dstep);
        decayed();
        decay_step();
        // the EWMA: w_q of |backlog - avg|, towards the backlog
        differences();
        distance();
        red_lead_diff.apply(); log_diff.apply(md.red.m_diff, md.red.l_diff);
        step_key();
        exp_step.apply(md.red.l_diff, md.red.y_step);
    }
}

/* The first pass's decision, after red_old_swap: a drop, a crossing of th_min, or nothing; every packet
 * that RED saw goes to its second pass with its step and flags. */
control RedDecide(inout tna_metadata_t md, inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    action second_pass() {
        md.pass2.setValid();
        md.pass2.op = md.pass2.op | PASS2_RED;
        md.pass2.reason = md.reason;
        md.pass2.base = md.backlog_ns;
        ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
    }
    action fresh() { md.pass2.op = 0; }
    action decay() { md.red.flags = (bit<32>)RED_P2_DOWN; md.pass2.step = md.red.step_d; }
    action ewma() { md.red.flags = md.red.flags_b; md.pass2.step = md.red.y_step; }
    action drop(bit<8> reason) {
        md.decision = DECISION_DROP;
        md.reason = reason;
        md.pass2.op = PASS2_REFUND;            // something was queued ahead: the link was busy
        md.red.flags = md.red.flags | (bit<32>)RED_P2_SET;
    }
    action cross() { md.red.flags = md.red.flags | (bit<32>)(RED_P2_SET | RED_P2_LEN); }
    action counted() { md.red.flags = md.red.flags | (bit<32>)RED_P2_SET; }

    apply {
        if (md.red.no_decay == 0) {
            decay();
        } else {
            ewma();
        }
        if (!md.pass2.isValid()) {
            fresh();                           // the queue left no second pass: RED's alone
        }
        if (md.q_short != 0) {
            // the buffer's tail drop: the v1model RED's over_limit, a forced drop
            if (md.backlog_ns != 0) {
                counted();
                second_pass();
            }   // else nothing was committed and no second pass comes: RED misses the frame
        } else {
            if (md.red.above == 1) {
                if (md.red.forced == 1) {
                    drop(REASON_RED_FORCED);
                } else if (md.red.old == 0) {
                    cross();
                } else if (md.red.d == 0) {   // u <= the probability (u = 0 included)
                    drop(REASON_RED_EARLY);
                }
            }
            second_pass();
        }
        // through the hash unit: a 32 -> 16-bit move would tie the flags' slices to every 32-bit field of
        // RED's arithmetic (codel.p4 does the same for CoDel's count)
        @in_hash { md.pass2.count = (bit<16>)md.red.flags; }
    }
}

/* The second pass, after red_avg and red_bytes: the next packet's gate from the average (avg2) and
 * count_bytes (cb). */
control RedSecondPass(inout tna_metadata_t md) {
    TNA_LOG2(ex, md.red.cfg.log_slope)
    TNA_LOG2(cnt, md.red.cfg.cp_offset)
    RedLog(32w0xFF000000) log_ex;
    RedLog(32w0xFF000000) log_cnt;

    action set_rest(bit<32> rest) { md.red.rest = (int<32>)rest; }
    // Log2(1 - count1 p_b) from Log2(count1 p_b) >> 2 (refmodel/tofino_red.py: rest_of), for
    // 0 <= cp < 2^17; the controller writes it. Below 0 count1 p_b < 1/2^32: Log2(1) = LOG_ONE_BITS.
    table red_rest {
        key = { md.red.cp4 : exact @name("cp4"); }
        actions = { set_rest; }
        default_action = set_rest(131072);
        size = RED_REST_ENTRIES;
    }
    action set_gate(bit<32> g) { md.red.gate2 = g; }
    action threshold() { md.red.gate2 = (bit<32>)(md.red.t1 - md.red.rest); }
    // the gate's word: below th_min (the default: below_w is not 0), forced (over_w is 0), count1 p_b >= 1
    // (cp >= 2^17: not negative, a bit set from 17 on), or the threshold
#define RED_ALWAYS(B) (0 &&& 0xFFFFFFFF, _, (1 << B) &&& (0x80000000 | (1 << B))) : set_gate(RED_T_ALWAYS);
    table red_mode {
        key = {
            md.red.below_w : ternary @name("below");
            md.red.over_w  : ternary @name("over");
            md.red.cp      : ternary @name("cp");
        }
        actions = { set_gate; threshold; }
        const default_action = set_gate(RED_T_BELOW);
        size = 16;
        const entries = {
            (0 &&& 0xFFFFFFFF, 0 &&& 0xFFFFFFFF, _) : set_gate(RED_T_FORCED);
            RED_ALWAYS(17) RED_ALWAYS(18) RED_ALWAYS(19) RED_ALWAYS(20) RED_ALWAYS(21) RED_ALWAYS(22)
            RED_ALWAYS(23) RED_ALWAYS(24) RED_ALWAYS(25) RED_ALWAYS(26) RED_ALWAYS(27) RED_ALWAYS(28)
            RED_ALWAYS(29) RED_ALWAYS(30)
            (0 &&& 0xFFFFFFFF, _, _) : threshold();
        }
    }

    action excess() {
        md.red.x_ex = md.red.avg2 - md.red.cfg.thmin;       // Log2 p_b's (when not below)
        md.red.below_w = md.red.cfg.thmin |-| md.red.avg2;   // 0 unless avg < th_min
        md.red.over_w = md.red.cfg.thmax |-| md.red.avg2;    // 0 when avg >= th_max
        md.red.x_cnt = md.red.cb |+| md.red.cfg.mps;
    }
    action sums() {
        md.red.cp = (bit<32>)(md.red.l_cnt + md.red.l_ex);        // Log2 (count1 p_b)
        md.red.t1 = md.red.l_ex + md.red.cfg.gate_offset;          // Log2 p_b - log2 mps + 16
    }
    action quarter() { md.red.cp4 = (bit<32>)((int<32>)md.red.cp >> 2); }

    apply {
        excess();
        red_lead_ex.apply();  log_ex.apply(md.red.m_ex, md.red.l_ex);        // Log2 p_b
        red_lead_cnt.apply(); log_cnt.apply(md.red.m_cnt, md.red.l_cnt);    // Log2 count1
        sums();
        quarter();
        red_rest.apply();
        red_mode.apply();
    }
}

#endif
