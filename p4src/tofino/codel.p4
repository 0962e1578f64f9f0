/* CoDel (RFC 8289) per access link on Tofino: the v1model program's state machine
 * (../include/aqm_codel.p4, refmodel/codel.py) cut into stateful-ALU steps, each register
 * touched once per pass. refmodel/tofino_codel.py is the executable twin of these steps, and
 * tests/test_tofino_codel.py shows they make the v1model program's decisions, packet for packet.
 *
 * As there, a packet is judged once, at t = now + sojourn (its predicted dequeue), with
 * below = sojourn < target or backlog <= one MTU (both from the queue's tat': CodelFirstPass).
 * CoDel's times are in 16 ns units (CODEL_TIME_SHIFT, as there): 2^31 of them (34 s) hold
 * 16 intervals of look-back beside any buffer the queue takes (under 2^31 ns).
 * Four registers per link:
 *   codel_fa     first_above (0: none)             fa_clear (below) / fa_check: returns ok;
 *                                                  fa_tick (tick)
 *   codel_drop   dropping. After a judged packet the RFC's machine leaves dropping equal
 *                to that packet's ok, so it is ok  drop_set (ok): returns was dropping /
 *                                                  drop_clear
 *   codel_dn     {drop_next, count | flags}        dn_continue (ok, was dropping): a drop
 *                                                  when t >= drop_next, count + 1;
 *                                                  dn_enter (ok, was not): a drop, "recent"?;
 *                                                  dn_pass2 (second pass); dn_tick (tick)
 *   codel_lc     count - lastcount                 lc_inc (a continuing drop) / lc_read
 *                                                  (entry); second pass: lc_zero (entry)
 * A drop's new drop_next is drop_next + interval/sqrt(count) (continuing) or t + that (entry):
 * a product no stage makes, so the step comes from the control-law table in the packet's
 * second pass (the resubmission that takes its frame's time back from the queue). Until then
 * the link's codel_dn is PENDING (an entry's drop_next holds t meanwhile): no other packet
 * of the link drops by continuing, where the v1model program, which does it all at once,
 * would have used the new drop_next.
 * Entry's count is count - lastcount when above 1 and the last drop was recent
 * (t < drop_next + 16 intervals), else 1. codel_lc keeps count - lastcount itself (+1 per
 * continuing drop, 0 after an entry), so no difference of two registers is needed; dn_enter
 * flags NOT_RECENT.
 * Serial time: a tick pulls a first_above or drop_next older than 16 intervals up to that
 * bound (ok stays ok, not recent stays not recent, for every later packet), so that stored
 * times stay between now - 16 intervals - a tick period and now + the buffer + an interval:
 * within 2^31 units (refmodel/tofino_codel.py: codel_knobs).
 *
 * Differences from the v1model program, all bounded:
 *   - the controller refuses a link whose 17 intervals, buffer and tick period (1 s at most)
 *     exceed 2^31 units of 16 ns (34 s): intervals up to about 1.8 s;
 *   - the second pass carries count in 16 bits: a count above 65535 is 65535 (where the
 *     control law's table ends anyway);
 *   - a packet of the same link between a drop's two passes is not dropped by continuing
 *     (PENDING); an entry in that window (the link's dropping state ended and began again
 *     within a microsecond) drops, and the later second pass sets the state. A lost second
 *     pass would leave the link PENDING;
 *   - first_above = t + interval is 0 (no interval running) once in 2^32 units. */
#ifndef _TNA_CODEL_P4_
#define _TNA_CODEL_P4_

/* Flags in codel_dn.count (counts stay below 2^16): */
const bit<32> CODEL_PENDING    = 0x80000000;   // a drop awaits its second pass
const bit<32> CODEL_FRESH      = 0x40000000;   // this packet is that drop (in what dn_* return)
const bit<32> CODEL_NOT_RECENT = 0x20000000;   // an entry long after the last drop: count 1
const bit<32> CODEL_FLAGS      = 0xE0000000;

struct codel_dn_t {
    time_t  drop_next;
    int<32> count;               // | CODEL_FLAGS while a drop's second pass is due
}

/* Declared inside the ingress control, as PHANTOM_QUEUE: a RegisterAction reads the packet's
 * metadata directly there. Every action of one register reads at most two packet words:
 * codel_a and codel_b mean one thing in the first pass and another in the second. */
#define CODEL_STATE(md) \
    Register<time_t, link_id_t>(N_LINKS, 0) codel_fa; \
    RegisterAction<time_t, link_id_t, bit<1>>(codel_fa) fa_clear = { \
        void apply(inout time_t fa, out bit<1> ok) { \
            fa = 0; \
            ok = 0; \
        } \
    }; \
    RegisterAction<time_t, link_id_t, bit<1>>(codel_fa) fa_check = { \
        void apply(inout time_t fa, out bit<1> ok) { \
            if (fa == 0) { \
                fa = md.codel_tfa; \
                ok = 0; \
            } else if (fa - md.codel_a <= 0) { \
                ok = 1; \
            } else { \
                ok = 0; \
            } \
        } \
    }; \
    RegisterAction<time_t, link_id_t, bit<1>>(codel_fa) fa_tick = { \
        void apply(inout time_t fa) { \
            if (fa != 0 && fa - md.codel_tfa < 0) { \
                fa = md.codel_tfa; \
            } \
        } \
    }; \
    Register<bit<8>, link_id_t>(N_LINKS, 0) codel_drop; \
    RegisterAction<bit<8>, link_id_t, bit<8>>(codel_drop) drop_set = { \
        void apply(inout bit<8> dropping, out bit<8> was) { \
            was = dropping; \
            dropping = 1; \
        } \
    }; \
    RegisterAction<bit<8>, link_id_t, bit<8>>(codel_drop) drop_clear = { \
        void apply(inout bit<8> dropping) { \
            dropping = 0; \
        } \
    }; \
    Register<codel_dn_t, link_id_t>(N_LINKS, {0, 0}) codel_dn; \
    RegisterAction<codel_dn_t, link_id_t, int<32>>(codel_dn) dn_continue = { \
        void apply(inout codel_dn_t s, out int<32> count) { \
            if (s.count >= 0 && s.drop_next - md.codel_a <= 0) { \
                s.count = s.count + (int<32>)(CODEL_PENDING | CODEL_FRESH | 1); \
            } \
            count = s.count; \
        } \
    }; \
    RegisterAction<codel_dn_t, link_id_t, int<32>>(codel_dn) dn_enter = { \
        void apply(inout codel_dn_t s, out int<32> count) { \
            if (s.drop_next - (time_t)md.codel_b > 0) { \
                s.count = s.count | (int<32>)(CODEL_PENDING | CODEL_FRESH); \
            } else { \
                s.count = s.count | (int<32>)(CODEL_PENDING | CODEL_FRESH | CODEL_NOT_RECENT); \
            } \
            s.drop_next = md.codel_a; \
            count = s.count; \
        } \
    }; \
    RegisterAction<codel_dn_t, link_id_t, int<32>>(codel_dn) dn_pass2 = { \
        void apply(inout codel_dn_t s) { \
            s.drop_next = s.drop_next + md.codel_a; \
            s.count = (int<32>)md.codel_b; \
        } \
    }; \
    RegisterAction<codel_dn_t, link_id_t, int<32>>(codel_dn) dn_tick = { \
        void apply(inout codel_dn_t s) { \
            if (s.drop_next - md.codel_a < 0) { \
                s.drop_next = md.codel_a; \
            } \
        } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) codel_lc; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(codel_lc) lc_inc = { \
        void apply(inout bit<32> since) { \
            since = since + 1; \
        } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(codel_lc) lc_read = { \
        void apply(inout bit<32> since, out bit<32> old) { \
            old = since; \
        } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(codel_lc) lc_zero = { \
        void apply(inout bit<32> since) { \
            since = 0; \
        } \
    };

/* The packet words the registers read in a first pass: t, t + interval, t - 16 intervals, and
 * how far busy is beyond CoDel's below-target bound. */
control CodelFirstPass(inout tna_metadata_t md) {
    /* The first pass, from the queue's tat' (q_admit) rather than its sojourn, four stages
     * sooner. With busy = tat' - now (queue.p4):
     *   below = sojourn < target or backlog <= MTU
     *         = busy - bucket < target or busy - tx <= MTU
     *         = busy <= max(target + bucket - 1, tx + MTU)
     * and, when not below, sojourn = busy - bucket = tat' - (now + bucket), so CoDel's
     * t = (now >> 4) + (sojourn >> 4) (../include/aqm_codel.p4: 16 ns units). (An idle
     * link's packet is always below: busy <= 0 there.) The controller writes the per-link
     * offsets of t + interval and t - 16 intervals from t, in 16 ns units (codel_cfg). */
    int<32> busy;
    int<32> limit;
    int<32> sojourn;
    /* CoDel's own copies of the queue's tat', now, tx and bucket, made by the hash unit: an ALU
     * operation between two fields ties them to one group of PHV containers, and the queue's
     * and CoDel's together are too many for one (bf-p4c: "PHV allocation was not successful").
     * The two chains (below? from busy, and t from the sojourn) have a pair each: one group for
     * all of CoDel's fields has no room beside PIE's on Tofino 2. */
    time_t tat;
    time_t now1;
    time_t tat_t;       // the t chain's
    time_t now_t;
    bit<32> tx;
    bit<32> bucket;
    time_t now_c;       // now >> 4: the global timestamp's bits 35..4
    time_t ends;        // now + bucket
    action first_steps() {
        busy = tat - now1;
        limit = (int<32>)(tx + md.cfg.mtu_ns);
        ends = now_t + (time_t)bucket;
    }
    action threshold() {
        limit = max(limit, md.codel.below_busy);
        sojourn = tat_t - ends;
    }
    action beyond() {
        md.codel_over = busy - limit;
        sojourn = sojourn >> CODEL_TIME_SHIFT;
    }
    // a signed max, so the gateway tests for zero only (a sign test splits the field: queue.p4)
    action clamp() {
        md.codel_over = max(md.codel_over, 0);   // zero: below
        md.codel_a = now_c + sojourn;            // t
    }
    action times() {
        md.codel_tfa = md.codel_a + md.codel.fa_offset;                 // t + interval
        md.codel_b = (bit<32>)(md.codel_a + md.codel.recent_offset);    // t - 16 intervals
    }

    apply {
        @in_hash { tat = md.tat; }
        @in_hash { now1 = md.now; }
        @in_hash { tat_t = md.tat; }
        @in_hash { now_t = md.now; }
        @in_hash { tx = md.tx_ns; }
        @in_hash { now_c = md.now_c; }
        @in_hash { bucket = md.cfg.bucket_ns; }
        first_steps();
        threshold();
        beyond();
        clamp();
        times();
    }
}

/* ... and in a CoDel second pass: the control law's step (what dn_pass2 adds to drop_next) and
 * the count it writes. */
control CodelSecondPass(inout tna_metadata_t md) {
    action set_step(bit<32> step) { md.codel_a = (time_t)step; }   // in 16 ns units
    // interval / sqrt(count) by the link's law profile (the controller gives links of one
    // interval one profile), the v1model program's ranges (refmodel/params.py: codel_law_table)
    table codel_law {
        key = {
            md.codel.law : exact @name("law");
            md.pass2.count : range @name("law_count");
        }
        actions = { set_step; }
        default_action = set_step(100000000);
        size = CODEL_LAWS * CODEL_LAW_ENTRIES;
    }

    apply {
        codel_law.apply();
        // the count, through the hash unit (CodelDecide says why)
        @in_hash { md.codel_b = (bit<32>)md.pass2.count; }
    }
}

/* A tick: the oldest first_above and drop_next fa_tick and dn_tick let stand, 16 intervals
 * before now. A later packet's t - 16 intervals is past it: still not recent, and
 * still ok. */
control CodelTick(inout tna_metadata_t md) {
    time_t now_c;   // CoDel's copy (CodelFirstPass says why)
    action back() {
        md.codel_a = now_c + md.codel.recent_offset;
    }
    action back_fa() {
        md.codel_tfa = md.codel_a | 1;   // never 0: first_above 0 means "none"
    }
    apply {
        @in_hash { now_c = md.now_c; }
        back();
        back_fa();
    }
}

/* The first pass's verdict from what the registers returned: a drop when dn_* flagged this
 * packet FRESH; its count (continuing: dn_continue's; entering: count - lastcount from
 * codel_lc when above 1 and recent, else 1) is the control law's key in its second pass,
 * which takes the frame's time back from the queue and sets CoDel's next drop time. An ECN
 * mark instead of the drop takes the same second pass without the refund. */
control CodelDecide(in bit<2> ip_ecn, inout tna_metadata_t md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    bit<32> count;

    action drop(bit<8> op) {
        md.decision = DECISION_DROP;
        md.reason = REASON_CODEL;
        md.pass2.setValid();
        md.pass2.op = op | PASS2_REFUND;
        md.pass2.reason = REASON_CODEL;
        md.pass2.base = md.backlog_ns;
        ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
    }
    action continuing() {
        count = md.codel_r & ~CODEL_FLAGS;        // the new count
        drop(PASS2_CODEL_STEP);
    }
    action entering_recent() {
        count = max(md.codel_lc, 1);              // count - lastcount when above 1, else 1
        drop(PASS2_CODEL_ENTER);
    }
    action entering_anew() {
        count = 1;
        drop(PASS2_CODEL_ENTER);
    }
    action saturate() {
        count = min(count, 65535);                // the second pass carries 16 bits
    }
    action mark() {
        md.decision = DECISION_MARK;
        md.pass2.op = md.pass2.op ^ (PASS2_REFUND | PASS2_MARK);   // forwarded: no refund
    }

    apply {
        if (md.codel_r & CODEL_FRESH != 0) {      // dn_* counted a drop for this packet
            if (md.codel_was == 1) {
                continuing();
            } else if (md.codel_r & CODEL_NOT_RECENT == 0) {
                entering_recent();
            } else {
                entering_anew();
            }
            saturate();
            // through the hash unit: a plain 32 -> 16-bit move would slice every field of CoDel's
            // arithmetic alike, which PHV allocation cannot satisfy (bottleneck_tna.p4: now)
            @in_hash { md.pass2.count = (bit<16>)count; }
            if (md.cfg.ecn == 1 && ip_ecn != 0) {
                mark();
            }
        }
    }
}

#endif
