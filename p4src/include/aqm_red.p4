/* RED with ns-2 semantics in byte mode (gentle off, wait off, no ECN bit).
 * The average is kept in ns of drain time: bytes times one constant, so the
 * algorithm is unchanged and needs no division. Average and backlog are 32-bit.
 * Every product is a sum of logs (logexp.p4) with the link's factors given as
 * logs by the controller (red_cfg). refmodel/red.py explains the integer forms;
 * both must stay identical. Every register holds one cell per access link
 * (index: the packet's link); the idle-decay table's entries are a link's own
 * (link matched exactly, at a higher priority) or every other link's (link
 * wildcarded: what the single-link controller writes). */
#ifndef _AQM_RED_P4_
#define _AQM_RED_P4_

#include "logexp.p4"

control AqmRed(in prediction_t pred, in red_cfg_t cfg, in bit<16> link, in bit<32> rand, out verdict_t v) {
    register<bit<32>>(N_LINKS) red_avg;
    register<bit<32>>(N_LINKS) red_count1;   // count_bytes / mean_pktsize (quotient)
    register<bit<32>>(N_LINKS) red_rem;      // count_bytes % mean_pktsize (remainder)
    register<bit<8>>(N_LINKS)  red_old;

    // One instance per use (a table is applied once per packet)
    Log2() log_avg;    Exp2() exp_decayed;   // idle decay
    Log2() log_diff;   Exp2() exp_step;      // EWMA
    Log2() log_excess; Log2() log_count;  Exp2() exp_cp;  Log2() log_rest;  Log2() log_u;  Log2() log_size;

    int<32> decay = 0;
    bit<32> idle_key = 0;

    // log2 of ns-2's (1 - w_q)^m for m = ptc * idle time, precomputed by the controller; 0: no decay.
    action set_decay(bit<32> log_factor) { decay = (int<32>)log_factor; }
    table red_idle_decay {
        key = { link : ternary; idle_key : range; }
        actions = { set_decay; }
        const default_action = set_decay(0);
        size = N_LINKS * LOOKUP_ENTRIES;
    }

    apply {
        bit<32> avg;
        bit<32> count1;
        bit<32> rem;
        bit<8>  old;
        bit<32> mps = (bit<32>)cfg.mean_pktsize;
        bit<32> at = (bit<32>)link;
        red_avg.read(avg, at);
        red_count1.read(count1, at);
        red_rem.read(rem, at);
        red_old.read(old, at);
        bit<32> backlog = pred.backlog_ns > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)pred.backlog_ns;

        // The link has been idle since tat: decay the average as ns-2 does.
        if (backlog == 0) {
            bit<64> idle = 0;
            if (pred.now > pred.tat) { idle = pred.now - pred.tat; }
            bit<64> key = idle >> IDLE_KEY_SHIFT;
            if (key > 0xFFFFFFFF) { key = 0xFFFFFFFF; }
            idle_key = (bit<32>)key;
            red_idle_decay.apply();
            if (decay != 0) {
                int<32> l;
                log_avg.apply(avg, l);
                exp_decayed.apply(l + decay, avg);
            }
        }
        // EWMA towards the instantaneous backlog: step = |backlog - avg| * w_q
        {
            bool up = backlog >= avg;
            bit<32> diff = up ? backlog - avg : avg - backlog;
            int<32> l;
            bit<32> step = 0;
            if (diff != 0) {   // Log2(0) gives a step of 0 anyway: an idle link's packets skip the lookups
                log_diff.apply(diff, l);
                exp_step.apply(l + (int<32>)cfg.log_wq, step);
            }
            if (up) {
                avg = (0xFFFFFFFF - avg < step) ? 0xFFFFFFFF : avg + step;
            } else {
                avg = (step > avg) ? 0 : avg - step;
            }
        }
        // count_bytes += length, kept as quotient and remainder: no run-time division
        // (exact while frames are at most 2 * mean_pktsize)
        rem = rem + (bit<32>)pred.length;
        if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
        if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }

        bool forced = false;
        bool early = false;
        if (avg >= cfg.thmin_ns && backlog > 0) {
            if (avg >= cfg.thmax_ns) {
                forced = true;
            } else if (old == 0) {
                // just crossed th_min: count_bytes = this packet's size
                count1 = 0;
                rem = (bit<32>)pred.length;
                if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
                if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
                old = 1;
            } else {
                // ns-2's drop test u <= p_b / (1 - count1 p_b) * size / mps, every product a sum of logs
                bit<32> u16 = rand >> 16;
                if (u16 == 0) {
                    early = true;                           // u = 0 is below any probability
                } else if (avg != cfg.thmin_ns) {           // else p_b = 0: no early drop
                    int<32> l_excess;
                    int<32> l_count;
                    log_excess.apply(avg - cfg.thmin_ns, l_excess);
                    int<32> l_pb = l_excess + (int<32>)cfg.log_slope;     // log2 of p_b in Q32
                    log_count.apply(count1, l_count);
                    int<32> l_cp = l_count + l_pb;                        // LOG_ZERO's sum when count1 = 0
                    if (l_cp >= LOG_ONE_BITS) {
                        early = true;                       // count1 * p_b >= 1
                    } else {
                        bit<32> cp;
                        exp_cp.apply(l_cp, cp);
                        int<32> l_rest = LOG_ONE_BITS;      // log2 of (1 - count1 p_b) in Q32
                        if (cp != 0) { log_rest.apply(0 - cp, l_rest); }   // 2^32 - cp
                        int<32> l_u;
                        int<32> l_size;
                        log_u.apply(u16, l_u);
                        log_size.apply((bit<32>)pred.length, l_size);
                        early = l_u + (int<32>)cfg.log_mps + l_rest <= l_pb + l_size + (16 << LOG_FRAC);
                    }
                }
            }
        } else {
            old = 0;
        }
        if (pred.over_limit) { forced = true; }
        if (forced || early) {
            count1 = 0;
            rem = 0;
        }

        red_avg.write(at, avg);
        red_count1.write(at, count1);
        red_rem.write(at, rem);
        red_old.write(at, old);

        v.drop = forced || early;
        v.early = early && !forced;
        v.reason = REASON_NONE;
        if (pred.over_limit) {
            v.reason = REASON_LIMIT;
        } else if (forced) {
            v.reason = REASON_RED_FORCED;
        } else if (early) {
            v.reason = REASON_RED_EARLY;
        }
        v.s1 = (bit<64>)avg;
        v.s2 = ((bit<64>)count1 << 32) | (bit<64>)rem;   // count_bytes as quotient and remainder by mps
    }
}

#endif
