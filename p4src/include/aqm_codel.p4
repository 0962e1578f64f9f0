/* CoDel (RFC 8289), run per packet at its predicted dequeue time.
 * FIFO order makes release times monotonic, so evaluating each packet once, in
 * arrival order, at t = release with its predicted sojourn is the RFC's
 * dequeue-side state machine (refmodel/codel.py explains the two deviations).
 * One state per access link (registers indexed by the packet's link); the
 * control law's entries are a link's own (link exact, higher priority) or
 * every other link's (link wildcarded).
 * Its times (t, first_above, drop_next, interval, steps) are in units of
 * 2^CODEL_TIME_SHIFT ns, t = (now >> 4) + (sojourn >> 4): the TNA program
 * (../tofino/codel.p4) keeps them in 32 bits, which then span 34 s. */
#ifndef _AQM_CODEL_P4_
#define _AQM_CODEL_P4_

/* decide = false (IWA: a packet CoDel may not drop, i.e. anything but an
 * established flow's data) only observes: below target it ends the interval
 * and the dropping state, as the RFC's state machine does for every dequeued
 * packet (refmodel/codel.py: observe). */
control AqmCodel(in prediction_t pred, in codel_cfg_t cfg, in bit<32> mtu_ns, in bit<16> link, in bool decide,
                 out verdict_t v) {
    register<bit<64>>(N_LINKS) codel_first_above;
    register<bit<8>>(N_LINKS)  codel_dropping;
    register<bit<64>>(N_LINKS) codel_drop_next;
    register<bit<32>>(N_LINKS) codel_count;
    register<bit<32>>(N_LINKS) codel_lastcount;

    bit<32> law_count = 0;
    bit<64> law_step = 0;

    // interval / sqrt(count), precomputed by the controller (within +-1 %).
    action set_step(bit<32> step_ns) { law_step = (bit<64>)(step_ns >> CODEL_TIME_SHIFT); }
    table codel_control_law {
        key = { link : ternary; law_count : range; }
        actions = { set_step; }
        default_action = set_step(100000000);
        size = N_LINKS * LOOKUP_ENTRIES;
    }

    apply {
        bit<64> first_above;
        bit<8>  dropping;
        bit<64> drop_next;
        bit<32> count;
        bit<32> lastcount;
        bit<32> at = (bit<32>)link;
        codel_first_above.read(first_above, at);
        codel_dropping.read(dropping, at);
        codel_drop_next.read(drop_next, at);
        codel_count.read(count, at);
        codel_lastcount.read(lastcount, at);

        v.drop = false;
        v.early = false;
        v.reason = REASON_NONE;
        if (!decide) {
            if (pred.sojourn_ns < (bit<64>)cfg.target_ns || pred.backlog_ns <= (bit<64>)mtu_ns) {
                codel_first_above.write(at, 0);
                codel_dropping.write(at, 0);
            }
        } else if (pred.over_limit) {
            // tail-dropped: never enters the queue, so CoDel never sees it
            v.drop = true;
            v.reason = REASON_LIMIT;
        } else {
            bit<64> t = (pred.now >> CODEL_TIME_SHIFT) + (pred.sojourn_ns >> CODEL_TIME_SHIFT);
            bit<64> interval = (bit<64>)(cfg.interval_ns >> CODEL_TIME_SHIFT);
            bool ok_to_drop = false;
            if (pred.sojourn_ns < (bit<64>)cfg.target_ns || pred.backlog_ns <= (bit<64>)mtu_ns) {
                first_above = 0;
            } else if (first_above == 0) {
                first_above = t + interval;
            } else {
                ok_to_drop = t >= first_above;
            }

            // The control law (a table) is applied once, after either branch:
            // drop_next = law_base + interval / sqrt(count).
            bit<64> law_base = drop_next;
            if (dropping == 1) {
                if (!ok_to_drop) {
                    dropping = 0;
                } else if (t >= drop_next) {
                    v.drop = true;
                    count = count + 1;
                }
            } else if (ok_to_drop) {
                v.drop = true;
                dropping = 1;
                bit<32> delta = count - lastcount;
                bool recent = t < drop_next + 16 * interval;
                if (delta > 1 && delta < 0x80000000 && recent) {
                    count = delta;
                } else {
                    count = 1;
                }
                law_base = t;
                lastcount = count;
            }
            if (v.drop) {
                law_count = count;
                codel_control_law.apply();
                drop_next = law_base + law_step;
            }
            if (v.drop) {
                v.early = true;
                v.reason = REASON_CODEL;
            }
            codel_first_above.write(at, first_above);
            codel_dropping.write(at, dropping);
            codel_drop_next.write(at, drop_next);
            codel_count.write(at, count);
            codel_lastcount.write(at, lastcount);
        }
        v.s1 = ((bit<64>)dropping << 32) | (bit<64>)count;
        v.s2 = drop_next << CODEL_TIME_SHIFT;   // ns (to 16 ns)
    }
}

#endif
