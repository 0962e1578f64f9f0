/* The byte-accurate bottleneck queue: arithmetic and two lookups, no state.
 * The state (tat, the packet-limit ring) lives in bottleneck.p4, which reads it
 * before and writes it after the AQM has decided. See refmodel/queue.py for the
 * derivation:
 *   tx      = len * byte_time    (two tables: no multiplication, see below)
 *   backlog = max(0, tat - now)
 *   tat'    = max(tat, now) + tx
 *   release = max(now, tat' - bucket)     (Linux tbf with burst = bucket)
 *   sojourn = release - now                                              */
#ifndef _QUEUE_MODEL_P4_
#define _QUEUE_MODEL_P4_

control QueuePredict(in bit<64> now, in bit<64> length, in bit<64> tat, in bit<64> ring_nth,
                     in queue_cfg_t cfg, out prediction_t pred) {
    /* The transmit time without multiplying two run-time values (a Tofino stage cannot):
     * len = 64 * hi + lo, and each rate class has two tables the controller fills
     * with hi's and lo's share of len * byte_time, each floored (refmodel/arith.py:
     * tx_split). The sum is the product rounded down or 1 ns less. The TNA program
     * (p4src/tofino/link.p4) has the same two tables. A link's rate class comes from
     * bottleneck_cfg; a rate change fills a free class, then points the link at it. */
    bit<32> tx_hi = 0;
    bit<32> tx_lo = 0;
    bit<10> len_hi = (bit<10>)(length >> TX_LO_BITS);
    bit<6>  len_lo = (bit<6>)length;
    action set_tx_hi(bit<32> ns) { tx_hi = ns; }
    action add_tx_lo(bit<32> ns) { tx_lo = ns; }   // the TNA name: there it adds to the hi share
    table tx_time_hi {
        key = { cfg.rate_class : exact @name("rate_class"); len_hi : exact; }
        actions = { set_tx_hi; }
        default_action = set_tx_hi(0);
        size = RATE_CLASSES * TX_HI_ENTRIES;
    }
    table tx_time_lo {
        key = { cfg.rate_class : exact @name("rate_class"); len_lo : exact; }
        actions = { add_tx_lo; }
        default_action = add_tx_lo(0);
        size = RATE_CLASSES * (1 << TX_LO_BITS);
    }

    apply {
        // A frame beyond the tables cannot be timed; it is over the limit (no access link carries one).
        bool too_long = length > TX_MAX_FRAME;
        if (!too_long) {
            tx_time_hi.apply();
            tx_time_lo.apply();
        }
        bit<64> tx = (bit<64>)tx_hi + (bit<64>)tx_lo;
        pred.now = now;
        pred.length = length;
        pred.tat = tat;
        pred.backlog_ns = 0;
        if (tat > now) {
            pred.backlog_ns = tat - now;
            pred.tat_new = tat + tx;
        } else {
            pred.tat_new = now + tx;
        }
        pred.release_ns = now;
        if (pred.tat_new > now + (bit<64>)cfg.bucket_ns) {
            pred.release_ns = pred.tat_new - (bit<64>)cfg.bucket_ns;
        }
        pred.sojourn_ns = pred.release_ns - now;

        // bfifo: the backlog plus this frame must fit in limit bytes.
        // pfifo: the limit_pkts-th most recent admitted packet must be gone.
        pred.over_limit = too_long;
        if (cfg.limit_ns != 0 && pred.tat_new - now > (bit<64>)cfg.limit_ns) {
            pred.over_limit = true;
        }
        if (cfg.limit_pkts != 0 && ring_nth > now) {
            pred.over_limit = true;
        }
    }
}

#endif
