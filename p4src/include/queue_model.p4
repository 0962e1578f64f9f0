/* The byte-accurate bottleneck queue: pure arithmetic, no state.
 * The state (tat, the packet-limit ring) lives in bottleneck.p4, which reads it
 * before and writes it after the AQM has decided. See refmodel/queue.py for the
 * derivation:
 *   tx      = len * byte_time
 *   backlog = max(0, tat - now)
 *   tat'    = max(tat, now) + tx
 *   release = max(now, tat' - bucket)     (Linux tbf with burst = bucket)
 *   sojourn = release - now                                              */
#ifndef _QUEUE_MODEL_P4_
#define _QUEUE_MODEL_P4_

control QueuePredict(in bit<64> now, in bit<64> length, in bit<64> tat, in bit<64> ring_nth,
                     in queue_cfg_t cfg, out prediction_t pred) {
    apply {
        bit<64> tx = (length * (bit<64>)cfg.byte_time_q16) >> BYTE_TIME_FRAC;
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
        pred.over_limit = false;
        if (cfg.limit_ns != 0 && pred.tat_new - now > (bit<64>)cfg.limit_ns) {
            pred.over_limit = true;
        }
        if (cfg.limit_pkts != 0 && ring_nth > now) {
            pred.over_limit = true;
        }
    }
}

#endif
