/* The access link's queue, per link: the byte-accurate twin of its shaper
 * (../include/queue_model.p4 derives it). One register, q_tat: when the link
 * finishes sending what it has admitted. Each pass of a packet touches it once,
 * through one of four RegisterActions (a stateful ALU's limit), which read two words
 * of the packet between them (another limit): now and tx.
 *   q_admit   a downstream packet: tat' = tat + tx when the link is busy (tat > now),
 *             else tat' = now; tat' returned
 *   q_add     a second pass: tat' = tat + tx (the link was idle)
 *   q_refund  a second pass: tat' = tat - tx (the frame was dropped)
 *   q_tick    the packet generator: tat' = max(tat, now), so that an idle link's
 *             tat never falls 2^31 ns behind now (serial time, types.p4); returns
 *             tat' - now, the queue's delay (PIE's update: pie.p4)
 * IWA's upstream read of the backlog will need a fifth: it takes q_tick's place and ticks
 * move to a second register (docs/tofino.md).
 *
 * Why two passes, sometimes. The model is tat' = max(tat, now) + tx. A Tofino stateful
 * ALU takes two words from the packet (now and tx) and adds a packet word only to the
 * register's own value (bf-asm: "Can't reference phv in first operand"), so the idle
 * branch cannot be now + tx. An idle link's packet therefore stores now, and its second
 * pass adds its tx. A packet of the same link arriving between the two passes sees the
 * link idle too, and the link ends up busy until now2 + tx1 + tx2 rather than
 * now1 + tx1 + tx2: at most the time between the two passes too long.
 * A packet dropped after q_admit (the AQMs need the backlog q_admit gives, and decide
 * after it) takes its tx back in its second pass. The refunded tat equals the tat the
 * v1model program keeps (it never commits a dropped packet); a packet arriving between
 * the two passes sees at most one frame's tx too much. refmodel/tofino_queue.py is the executable
 * twin; tests/test_tofino_queue.py shows both bounds and the v1model queue's decisions. */
#ifndef _TNA_QUEUE_P4_
#define _TNA_QUEUE_P4_

/* Declared inside the ingress control (PHANTOM_QUEUE(md)): a RegisterAction reads the
 * packet's metadata directly there, where a control parameter would cost a PHV copy and a
 * stage of the twelve. */
/* With RED (Tofino 2, red.p4) q_admit also returns the tat it found: an idle link's idle time. */
#if WITH_RED
#define Q_ADMIT_BEFORE , out time_t before
#define Q_ADMIT_KEEP before = tat;
#else
#define Q_ADMIT_BEFORE
#define Q_ADMIT_KEEP
#endif
#define PHANTOM_QUEUE(md) \
    Register<time_t, link_id_t>(N_LINKS, 0) q_tat; \
    RegisterAction<time_t, link_id_t, time_t>(q_tat) q_admit = { \
        void apply(inout time_t tat, out time_t updated Q_ADMIT_BEFORE) { \
            Q_ADMIT_KEEP \
            if (tat - md.now > 0) { \
                tat = tat + (time_t)md.tx_ns; \
            } else { \
                tat = md.now; \
            } \
            updated = tat; \
        } \
    }; \
    RegisterAction<time_t, link_id_t, time_t>(q_tat) q_add = { \
        void apply(inout time_t tat) { \
            tat = tat + (time_t)md.tx_ns; \
        } \
    }; \
    RegisterAction<time_t, link_id_t, time_t>(q_tat) q_refund = { \
        void apply(inout time_t tat) { \
            tat = tat - (time_t)md.tx_ns; \
        } \
    }; \
    RegisterAction<time_t, link_id_t, time_t>(q_tat) q_tick = { \
        void apply(inout time_t tat, out time_t delay) { \
            if (tat - md.now < 0) { \
                tat = md.now; \
            } \
            delay = tat - md.now; \
        } \
    };

/* What the queue predicts for a packet (pure arithmetic on metadata, as
 * ../include/queue_model.p4):
 *   busy    = tat' - now = max(0, tat - now) + tx   (q_admit's tat' = now: idle, busy = tx)
 *   backlog = busy - tx
 *   sojourn = max(0, busy - bucket)     (the link starts sending it at now + sojourn)
 *   over    = busy > limit              (no limit: the controller writes 2^31 - 1)
 * and decides what the buffer does (bfifo, every AQM's tail drop): a frame that does not
 * fit is dropped, in its second pass if its time was added; an idle link's frame that fits
 * goes on to its second pass, which adds its time. A second pass comes here too, with the
 * backlog its first pass saw, for the record. */
control QueuePredictTna(inout tna_metadata_t md, inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // One dependent step per action: a Tofino action runs in one stage, and the chain must
    // fit in 12. The ALU's signed max and min clamp; a gateway then only tests for zero.
    int<32> busy;
    int<32> t2;
    bit<1>  idle;

    action find_busy() { busy = md.tat - md.now; idle = 0; }
    action idle_link() { busy = (int<32>)md.tx_ns; idle = 1; }
    action busy_again() { busy = (int<32>)(md.backlog_ns + md.tx_ns); }
    action split() {
        md.backlog_ns = (bit<32>)(busy - (int<32>)md.tx_ns);
        t2 = busy - (int<32>)md.cfg.bucket_ns;                        // beyond the bucket
        md.q_short = (int<32>)md.cfg.limit_ns - busy;                 // room left in the buffer
    }
    action clamp() {
        md.sojourn_ns = (bit<32>)max(t2, 0);
        md.q_short = min(md.q_short, 0);                              // non-zero: it does not fit
    }
    action second_pass(bit<8> op) {
        md.pass2.setValid();
        md.pass2.op = op;
        md.pass2.reason = md.reason;
        md.pass2.count = 0;
        md.pass2.base = md.backlog_ns;
        ig_dprsr_md.resubmit_type = RESUBMIT_PASS2;
    }

    apply {
        if (md.second == 1) {
            busy_again();                   // the backlog the first pass saw, plus tx
        } else {
            find_busy();
            if (busy == 0) {
                idle_link();
            }
        }
        split();
        clamp();
        if (md.second == 1) {
            // the second pass: the decision was taken in the first
            md.reason = md.pass2.reason;
            if (md.pass2.op & PASS2_REFUND != 0) {
                md.decision = DECISION_DROP;
                ig_dprsr_md.drop_ctl = 1;
            } else if (md.pass2.op & PASS2_MARK != 0) {
                md.decision = DECISION_MARK;   // bottleneck_tna.p4 sets CE
            } else {
                md.decision = DECISION_PASS;
            }
        } else if (md.q_short != 0) {
            md.decision = DECISION_DROP;
            md.reason = REASON_LIMIT;
            if (idle == 1) {
                ig_dprsr_md.drop_ctl = 1;   // its time was never added: nothing to refund
            } else {
                second_pass(PASS2_REFUND);
            }
        } else {
            md.decision = DECISION_PASS;
            if (idle == 1) {
                second_pass(PASS2_ADD);
            }
        }
    }
}

#endif
