/* RED with ns-2 semantics in byte mode (gentle off, wait off, no ECN bit).
 * The average is kept in ns of drain time: bytes times one constant, so the
 * algorithm is unchanged and needs no division. refmodel/red.py explains the
 * integer forms; both must stay identical. Every register holds one cell per
 * access link (index: the packet's link); the idle-decay table's entries are
 * a link's own (link matched exactly, at a higher priority) or every other
 * link's (link wildcarded: what the single-link controller writes). */
#ifndef _AQM_RED_P4_
#define _AQM_RED_P4_

control AqmRed(in prediction_t pred, in red_cfg_t cfg, in bit<16> link, in bit<32> rand, out verdict_t v) {
    register<bit<64>>(N_LINKS) red_avg;
    register<bit<32>>(N_LINKS) red_count1;   // count_bytes / mean_pktsize (quotient)
    register<bit<32>>(N_LINKS) red_rem;      // count_bytes % mean_pktsize (remainder)
    register<bit<8>>(N_LINKS)  red_old;

    bit<64> decay_q24 = 1 << RED_W_FRAC;
    bit<32> idle_key = 0;

    // ns-2's (1 - w_q)^m for m = ptc * idle time, precomputed by the controller.
    action set_decay(bit<32> factor_q24) { decay_q24 = (bit<64>)factor_q24; }
    table red_idle_decay {
        key = { link : ternary; idle_key : range; }
        actions = { set_decay; }
        const default_action = set_decay(1 << RED_W_FRAC);
        size = N_LINKS * LOOKUP_ENTRIES;
    }

    apply {
        bit<64> avg;
        bit<32> count1;
        bit<32> rem;
        bit<8>  old;
        bit<32> mps = (bit<32>)cfg.mean_pktsize;
        bit<32> at = (bit<32>)link;
        red_avg.read(avg, at);
        red_count1.read(count1, at);
        red_rem.read(rem, at);
        red_old.read(old, at);

        // The link has been idle since tat: decay the average as ns-2 does.
        if (pred.backlog_ns == 0) {
            bit<64> idle = 0;
            if (pred.now > pred.tat) { idle = pred.now - pred.tat; }
            bit<64> key = idle >> IDLE_KEY_SHIFT;
            if (key > 0xFFFFFFFF) { key = 0xFFFFFFFF; }
            idle_key = (bit<32>)key;
            red_idle_decay.apply();
            avg = (avg * decay_q24) >> RED_W_FRAC;
        }
        // EWMA towards the instantaneous backlog
        if (pred.backlog_ns >= avg) {
            avg = avg + (((pred.backlog_ns - avg) * (bit<64>)cfg.wq_q24) >> RED_W_FRAC);
        } else {
            avg = avg - (((avg - pred.backlog_ns) * (bit<64>)cfg.wq_q24) >> RED_W_FRAC);
        }
        // count_bytes += length, kept as quotient and remainder: no run-time division
        // (exact while frames are at most 2 * mean_pktsize)
        rem = rem + (bit<32>)pred.length;
        if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
        if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }

        bool forced = false;
        bool early = false;
        if (avg >= (bit<64>)cfg.thmin_ns && pred.backlog_ns > 0) {
            if (avg >= (bit<64>)cfg.thmax_ns) {
                forced = true;
            } else if (old == 0) {
                // just crossed th_min: count_bytes = this packet's size
                count1 = 0;
                rem = (bit<32>)pred.length;
                if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
                if (rem >= mps) { rem = rem - mps; count1 = count1 + 1; }
                old = 1;
            } else {
                // p_b in Q32, then ns-2's modify_p as an overflow-free comparison
                bit<64> pb = ((avg - (bit<64>)cfg.thmin_ns) * cfg.slope_q56) >> RED_SLOPE_TO_PROB;
                bit<64> cp = (bit<64>)count1 * pb;
                if (cp >= 4294967296) {
                    early = true;
                } else {
                    bit<64> u16 = (bit<64>)(rand >> 16);
                    bit<64> lhs = u16 * (bit<64>)cfg.mean_pktsize * (4294967296 - cp);
                    bit<64> rhs = (pb * pred.length) << 16;
                    early = lhs <= rhs;
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
        v.s1 = avg;
        v.s2 = (bit<64>)count1 * (bit<64>)mps + (bit<64>)rem;   // count_bytes
    }
}

#endif
