/* PIE (RFC 8033) per access link on Tofino: the v1model program's PIE (../include/aqm_pie.p4,
 * refmodel/pie.py) with its update where the RFC has it, on a timer: the packet generator's tick
 * of the link. refmodel/tofino_pie.py is the executable twin of these steps, and
 * tests/test_tofino_pie.py shows they decide as the v1model program's PIE does when its updates
 * come at the same instants.
 *
 * Why the tick. The update reads p, computes a chain of products and writes p back: no stateful
 * ALU holds that chain between its read and its write. So a data packet only reads (the gate: the
 * probability its draw is tested against), and the tick takes two passes: the first reads p and
 * computes the new one, its resubmission writes it. Every tick of a PIE link is an update: the
 * packet generator's period is PIE's tupdate. Four registers per link:
 *   pie_p       p (Q31)                      pie_read (tick); pie_write (the tick's second pass)
 *   pie_gate    the gate (Q31)               gate_read (data); gate_write (the tick's second pass)
 *   pie_old     qdelay_old                   pie_swap (tick): returns it, stores this qdelay
 *   pie_burst   the burst allowance spent    burst_reset / burst_add (the tick's second pass)
 * The gate is p, or 0 while the RFC's low-delay rule holds (qdelay_old < target/2 and p < 0.2),
 * or BURST (bit 31: negative, below every draw) while the burst allowance lasts.
 *
 * The update's arithmetic (the first pass): qdelay = tat' - now, what q_tick returns; each of
 * alpha * (qdelay - target) and beta * (qdelay - qdelay_old) is one exact table per coefficient
 * (pie_term_a, pie_term_b: the controller writes, per profile of (alpha, beta), the product of the
 * difference's 7 leading bits, shifted by their place less the RFC's scale shift for the current
 * p, in Q31, floored, saturated at +-1), keyed by the sign, the leading bits (pie_lead_*, a TCAM of
 * constant rows) and that exponent; the shift comes from p's range (pie_scale: ternary prefixes the
 * controller writes, bf-p4c taking no range match on a 32-bit key). Then
 * p' = (p + bump) + max(min(term_a + term_b, cap), -(p + bump)) with saturating adds: the RFC's 2 %
 * cap above p = 10 %, +2 % above 250 ms of delay, the clamp to [0, 1); then the 1/64 decay of a queue
 * that stayed empty. The second pass takes the burst allowance, and writes p and the gate.
 *
 * Differences from the v1model program, all bounded:
 *   - updates come every tupdate, whether packets arrive or not (the RFC's timer; the v1model
 *     program updates on the first packet at least tupdate after the previous update, once after
 *     a quiet spell);
 *   - p is Q31 (pie.py's Q32 / 2; the drop test rand >> 1 < p is pie.py's rand < 2p), each term
 *     floored on its own: an update's step within 2 units of 2^-31 of pie.py's;
 *   - a data packet between a tick's two passes sees the previous p;
 *   - the record's s1 is the gate (BURST while the allowance lasts), s2 is 0. */
#ifndef _TNA_PIE_P4_
#define _TNA_PIE_P4_

const bit<32> PIE_GATE_BURST = 0x80000000;   // the gate while the burst allowance lasts
const bit<32> PIE_GATE_OPEN  = 0xC0000000;   // gate_write: the gate is p (no gate is this: p < 2^31)
const int<32> PIE_Q31_TWO    = 42949673;     // 0.02 in Q31
const int<32> PIE_Q31_FIFTH  = 429496730;    // 0.2
const int<32> PIE_250MS      = 250000000;
const bit<16> PIE_QLOW       = 2;            // pass2.count: qdelay < target / 2
const bit<16> PIE_OLDLOW     = 4;            // qdelay_old < target / 2
const bit<16> PIE_PLOW       = 8;            // the new p < 0.2
const bit<8>  PIE_E_OFFSET   = 11;           // the term tables' exponent key: e - shift + 11

/* Declared inside the ingress control, as PHANTOM_QUEUE: a RegisterAction reads the packet's
 * metadata directly there. */
#define PIE_STATE(md) \
    Register<bit<32>, link_id_t>(N_LINKS, 0) pie_p; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_p) pie_read = { \
        void apply(inout bit<32> p, out bit<32> was) { \
            was = p; \
        } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_p) pie_write = { \
        void apply(inout bit<32> p) { \
            p = md.pass2.base; \
        } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, PIE_GATE_BURST) pie_gate; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_gate) gate_read = { \
        void apply(inout bit<32> gate, out bit<32> was) { \
            was = gate; \
        } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_gate) gate_write = { \
        void apply(inout bit<32> gate) { \
            if (md.pie_wg == PIE_GATE_OPEN) { \
                gate = md.pass2.base; \
            } else { \
                gate = md.pie_wg; \
            } \
        } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) pie_old; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_old) pie_swap = { \
        void apply(inout bit<32> old, out bit<32> was) { \
            was = old; \
            old = md.pie_q; \
        } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) pie_burst; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_burst) burst_reset = { \
        void apply(inout bit<32> used, out bit<32> now_used) { \
            used = 0; \
            now_used = 0; \
        } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(pie_burst) burst_add = { \
        void apply(inout bit<32> used, out bit<32> now_used) { \
            if (used < md.pie.max_burst) { \
                used = used + (bit<32>)md.pie.tupdate; \
            } \
            now_used = used; \
        } \
    };

/* x's 7 leading bits m and their place e (x' = m << e), as ../include/mantissa.p4, each place an
 * action of its own: a Tofino shifts by constants only. m is 32 bits wide (a shift of x, not a slice:
 * a 7-bit slice at 25 places ties m's every bit to x's, which PHV allocation cannot place), and the
 * term tables' key is the whole word (below 128). */
#define PIE_LEAD_ACTION(X, M, E, K) action lead_##X##_##K() { M = X >> K; E = K; }
#define PIE_LEAD_ACTIONS(X, M, E) \
    action lead_##X##_0() { M = X; E = 0; } \
    PIE_LEAD_ACTION(X, M, E, 1) PIE_LEAD_ACTION(X, M, E, 2) PIE_LEAD_ACTION(X, M, E, 3) \
    PIE_LEAD_ACTION(X, M, E, 4) PIE_LEAD_ACTION(X, M, E, 5) PIE_LEAD_ACTION(X, M, E, 6) \
    PIE_LEAD_ACTION(X, M, E, 7) PIE_LEAD_ACTION(X, M, E, 8) PIE_LEAD_ACTION(X, M, E, 9) \
    PIE_LEAD_ACTION(X, M, E, 10) PIE_LEAD_ACTION(X, M, E, 11) PIE_LEAD_ACTION(X, M, E, 12) \
    PIE_LEAD_ACTION(X, M, E, 13) PIE_LEAD_ACTION(X, M, E, 14) PIE_LEAD_ACTION(X, M, E, 15) \
    PIE_LEAD_ACTION(X, M, E, 16) PIE_LEAD_ACTION(X, M, E, 17) PIE_LEAD_ACTION(X, M, E, 18) \
    PIE_LEAD_ACTION(X, M, E, 19) PIE_LEAD_ACTION(X, M, E, 20) PIE_LEAD_ACTION(X, M, E, 21) \
    PIE_LEAD_ACTION(X, M, E, 22) PIE_LEAD_ACTION(X, M, E, 23) PIE_LEAD_ACTION(X, M, E, 24)
/* |d| < 2^31: its leading one is at bit 30 at most */
#define PIE_LEAD_TABLE(NAME, X) \
    table NAME { \
        key = { X : ternary @name("x"); } \
        actions = { \
            lead_##X##_0; lead_##X##_1; lead_##X##_2; lead_##X##_3; lead_##X##_4; lead_##X##_5; \
            lead_##X##_6; lead_##X##_7; lead_##X##_8; lead_##X##_9; lead_##X##_10; lead_##X##_11; \
            lead_##X##_12; lead_##X##_13; lead_##X##_14; lead_##X##_15; lead_##X##_16; lead_##X##_17; \
            lead_##X##_18; lead_##X##_19; lead_##X##_20; lead_##X##_21; lead_##X##_22; lead_##X##_23; \
            lead_##X##_24; \
        } \
        const default_action = lead_##X##_0(); \
        size = 32; \
        const entries = { \
            32w0x40000000 &&& 32w0xC0000000 : lead_##X##_24(); \
            32w0x20000000 &&& 32w0xE0000000 : lead_##X##_23(); \
            32w0x10000000 &&& 32w0xF0000000 : lead_##X##_22(); \
            32w0x08000000 &&& 32w0xF8000000 : lead_##X##_21(); \
            32w0x04000000 &&& 32w0xFC000000 : lead_##X##_20(); \
            32w0x02000000 &&& 32w0xFE000000 : lead_##X##_19(); \
            32w0x01000000 &&& 32w0xFF000000 : lead_##X##_18(); \
            32w0x00800000 &&& 32w0xFF800000 : lead_##X##_17(); \
            32w0x00400000 &&& 32w0xFFC00000 : lead_##X##_16(); \
            32w0x00200000 &&& 32w0xFFE00000 : lead_##X##_15(); \
            32w0x00100000 &&& 32w0xFFF00000 : lead_##X##_14(); \
            32w0x00080000 &&& 32w0xFFF80000 : lead_##X##_13(); \
            32w0x00040000 &&& 32w0xFFFC0000 : lead_##X##_12(); \
            32w0x00020000 &&& 32w0xFFFE0000 : lead_##X##_11(); \
            32w0x00010000 &&& 32w0xFFFF0000 : lead_##X##_10(); \
            32w0x00008000 &&& 32w0xFFFF8000 : lead_##X##_9(); \
            32w0x00004000 &&& 32w0xFFFFC000 : lead_##X##_8(); \
            32w0x00002000 &&& 32w0xFFFFE000 : lead_##X##_7(); \
            32w0x00001000 &&& 32w0xFFFFF000 : lead_##X##_6(); \
            32w0x00000800 &&& 32w0xFFFFF800 : lead_##X##_5(); \
            32w0x00000400 &&& 32w0xFFFFFC00 : lead_##X##_4(); \
            32w0x00000200 &&& 32w0xFFFFFE00 : lead_##X##_3(); \
            32w0x00000100 &&& 32w0xFFFFFF00 : lead_##X##_2(); \
            32w0x00000080 &&& 32w0xFFFFFF80 : lead_##X##_1(); \
        } \
    }

/* A tick's first pass: p's new value and the flags its second pass needs. One dependent step per
 * action (a Tofino action runs in one stage). Every field an ALU operation touches joins one group of
 * PHV containers (codel.p4's CodelFirstPass says more), so the differences use three copies of qdelay,
 * made by the hash unit: one for alpha's term, one for beta's, one for the flags. */
control PieUpdate(inout tna_metadata_t md, inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    int<32> q_b;        // qdelay, beta's copy
    int<32> q_f;        // qdelay, the flags' copy
    int<32> old_f;      // qdelay_old, the flags' copy
    int<32> p_old;      // p as pie_read returned it (a copy)
    int<32> dq;         // qdelay - target, and its negation
    int<32> ndq;
    int<32> dqo;        // qdelay - qdelay_old, and its negation
    int<32> ndqo;
    bit<32> xa;         // |dq|, |dqo|
    bit<32> xb;
    bit<32> sa;         // their signs (1: negative), whole words: a key on one bit of dq would slice it
    bit<32> sb;
    bit<32> ma;
    bit<8>  ea;
    bit<32> mb;
    bit<8>  eb;
    bit<8>  shc;        // 11 - the scale shift: the term tables' exponent key is e + shc
    bit<8>  eka;
    bit<8>  ekb;
    int<32> cap;        // the step's cap: 2 % from p = 0.1, else none
    int<32> bump;       // +2 % above 250 ms of delay
    int<32> pb;         // p + bump
    int<32> neg_pb;
    int<32> ta;
    int<32> tb;
    int<32> step;
    int<32> p;
    int<32> d;          // the decay: p >> 6 when qdelay and qdelay_old are 0
    int<32> q_or_old;   // zero when both are (one gateway test of 4 bytes)
    int<32> f250;       // flags, from a difference's sign: 1 when qdelay > 250 ms,
    int<32> fq;         //   qdelay < target / 2,
    int<32> fold;       //   qdelay_old < target / 2,
    int<32> fp;         //   the new p < 0.2
    bit<32> f250_bit;
    bit<32> fq_bit;
    bit<32> fold_bit;
    bit<32> fp_bit;

    action set_scale(bit<8> sh_key, bit<32> cap_q31) { shc = sh_key; cap = (int<32>)cap_q31; }
    // the RFC's scale of the step by p: 11 - its shift (the term tables' exponent key offset) and the cap
    // (2 % from p = 0.1). p's ranges as ternary prefixes, which the controller writes
    // (refmodel/tofino_pie.py: scale_rows; bf-p4c takes no range match on a 32-bit key)
    table pie_scale {
        key = { md.pie_p : ternary @name("p"); }
        actions = { set_scale; }
        default_action = set_scale(11, 2147483647);
        size = PIE_SCALE_ROWS;
    }

    PIE_LEAD_ACTIONS(xa, ma, ea)
    PIE_LEAD_TABLE(pie_lead_a, xa)
    PIE_LEAD_ACTIONS(xb, mb, eb)
    PIE_LEAD_TABLE(pie_lead_b, xb)

    action set_ta(bit<32> t) { ta = (int<32>)t; }
    action set_tb(bit<32> t) { tb = (int<32>)t; }
    // alpha * (qdelay - target) and beta * (qdelay - qdelay_old), scaled, Q31 (refmodel/tofino_pie.py:
    // term_row); a missing row is 0
    table pie_term_a {
        key = {
            md.pie.profile : exact @name("profile");
            sa : exact @name("neg");
            eka : exact @name("e");
            ma : exact @name("m");
        }
        actions = { set_ta; }
        default_action = set_ta(0);
        size = PIE_PROFILES * PIE_TERM_ENTRIES;
    }
    table pie_term_b {
        key = {
            md.pie.profile : exact @name("profile");
            sb : exact @name("neg");
            ekb : exact @name("e");
            mb : exact @name("m");
        }
        actions = { set_tb; }
        default_action = set_tb(0);
        size = PIE_PROFILES * PIE_TERM_ENTRIES;
    }

    action differences_a() {
        dq = (int<32>)md.pie_q - md.pie.target;
        ndq = md.pie.target - (int<32>)md.pie_q;
    }
    action differences_b() {
        dqo = q_b - (int<32>)md.pie_old;
        ndqo = (int<32>)md.pie_old - q_b;
    }
    action differences_f() {
        f250 = PIE_250MS - q_f;
        fq = q_f - md.pie.half;
        fold = old_f - md.pie.half;
        q_or_old = q_f | old_f;
    }
    action flag_bits() {
        f250_bit = (bit<32>)f250 >> 31;
        fq_bit = (bit<32>)fq >> 31;
        fold_bit = (bit<32>)fold >> 31;
    }
    action magnitude_a() { xa = (bit<32>)max(dq, ndq); sa = (bit<32>)dq >> 31; }
    action magnitude_b() { xb = (bit<32>)max(dqo, ndqo); sb = (bit<32>)dqo >> 31; }
    action exponent_a() { eka = ea + shc; }
    action exponent_b() { ekb = eb + shc; }
    action with_bump() { pb = p_old |+| bump; }
    action negated() { neg_pb = 0 - pb; }
    action sum() { step = ta |+| tb; }
    action cap_step() { step = min(step, cap); }
    action clamp_step() { step = max(step, neg_pb); }
    action new_p() { p = pb |+| step; }
    action decay_step() { d = p >> 6; }
    action decayed() { p = p - d; }
    action p_diff() { fp = p - PIE_Q31_FIFTH; }
    action p_bit() { fp_bit = (bit<32>)fp >> 31; }

    action second_pass(bit<16> flags) {
        md.pass2.setValid();
        md.pass2.op = PASS2_PIE;
        md.pass2.reason = REASON_NONE;
        md.pass2.count = flags;
        ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
    }
    // the second pass's flags from the three conditions (each 0 or 1)
    table pie_flags {
        key = { fq_bit : exact; fold_bit : exact; fp_bit : exact; }
        actions = { second_pass; }
        default_action = second_pass(0);
        size = 8;
        const entries = {
            (0, 0, 1) : second_pass(PIE_PLOW);
            (0, 1, 0) : second_pass(PIE_OLDLOW);
            (0, 1, 1) : second_pass(PIE_OLDLOW | PIE_PLOW);
            (1, 0, 0) : second_pass(PIE_QLOW);
            (1, 0, 1) : second_pass(PIE_QLOW | PIE_PLOW);
            (1, 1, 0) : second_pass(PIE_QLOW | PIE_OLDLOW);
            (1, 1, 1) : second_pass(PIE_QLOW | PIE_OLDLOW | PIE_PLOW);
        }
    }

    apply {
        @in_hash { q_b = (int<32>)md.pie_q; }
        @in_hash { q_f = (int<32>)md.pie_q; }
        @in_hash { old_f = (int<32>)md.pie_old; }
        @in_hash { p_old = (int<32>)md.pie_p; }
        pie_scale.apply();
        differences_a();
        differences_b();
        differences_f();
        flag_bits();
        magnitude_a();
        magnitude_b();
        bump = 0;
        if (f250_bit != 0) {
            bump = PIE_Q31_TWO;
        }
        with_bump();
        negated();
        pie_lead_a.apply();
        pie_lead_b.apply();
        exponent_a();
        exponent_b();
        pie_term_a.apply();
        pie_term_b.apply();
        sum();
        cap_step();
        clamp_step();
        new_p();
        d = 0;
        if (q_or_old == 0) {
            decay_step();
        }
        decayed();
        p_diff();
        p_bit();
        pie_flags.apply();
        // p through the hash unit: an ALU move would tie PIE's arithmetic to the queue's (pass2.base
        // also carries the backlog), more fields than one group of PHV containers holds
        @in_hash { md.pass2.base = (bit<32>)p; }
    }
}

/* The tick's second pass, between the burst allowance (burst_reset / burst_add, which return what is
 * spent) and gate_write: the gate. p is written as the first pass computed it (pass2.base): no ALU
 * touches it here, which would tie it to the queue's fields (pass2.base carries the backlog too). */
control PieGate(inout tna_metadata_t md, in bit<32> used) {
    int<32> left;     // the burst allowance left, clamped: non-zero while it lasts
    action difference() { left = (int<32>)md.pie.max_burst - (int<32>)used; }
    action clamp() { left = max(left, 0); }
    apply {
        difference();
        clamp();
        if (left != 0) {
            md.pie_wg = PIE_GATE_BURST;
        } else if (md.pass2.count & (PIE_QLOW | PIE_PLOW) == (PIE_QLOW | PIE_PLOW)) {
            md.pie_wg = 0;                 // the RFC's low-delay rule
        } else {
            md.pie_wg = PIE_GATE_OPEN;     // the gate is p
        }
    }
}

/* A data packet that fits the buffer: a drop when its draw is below the gate and the queue holds
 * two frames or more (refmodel/tofino_pie.py: decide). */
control PieDecide(in bit<2> ip_ecn, inout tna_metadata_t md,
                  inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    int<32> above;    // gate - draw, clamped: non-zero when the draw is below the gate
    int<32> short;    // backlog - two frames, clamped: non-zero when the queue is shorter
    int<32> draw;     // the packet's draw, 31 bits (p is Q31)
    bit<32> gate;     // copies through the hash unit (PieUpdate says why)
    bit<32> backlog;
    action halve() { draw = (int<32>)(md.rand >> 1); }
    action differences() {
        above = (int<32>)gate - draw;
        short = (int<32>)backlog - md.pie.mtu2;
    }
    action clamps() {
        above = max(above, 0);
        short = min(short, 0);
    }
    action drop() {
        md.decision = DECISION_DROP;
        md.reason = REASON_PIE;
        md.pass2.setValid();
        md.pass2.op = PASS2_REFUND;
        md.pass2.reason = REASON_PIE;
        md.pass2.count = 0;
        md.pass2.base = md.backlog_ns;
        ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
    }
    action mark() {
        md.decision = DECISION_MARK;
        md.pass2.op = PASS2_MARK;     // forwarded: no refund
    }
    apply {
        @in_hash { gate = md.pie_gate; }
        @in_hash { backlog = md.backlog_ns; }
        @in_hash { md.s1 = md.pie_gate; }
        if (md.pie_gate & PIE_GATE_BURST != 0) {
            md.reason = REASON_PIE_BURST;
        } else {
            halve();
            differences();
            clamps();
            if (above != 0 && short == 0) {
                drop();
                if (md.cfg.ecn == 1 && ip_ecn != 0) {
                    mark();
                }
            }
        }
    }
}

#endif
