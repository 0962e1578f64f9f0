/* IWA, the initial-window-aware AQM (docs/iwa.md). New data of a starting flow
 * beyond its first allowance_bytes is surplus, and is dropped (or ECN-marked)
 * while the queue delay it would see plus a reserve exceeds the target. The
 * reserve is the drain time of allowances that flows announced (SYN-ACK seen)
 * but have not sent yet, so the first flow of a parallel start cannot take the
 * room its siblings' first segments need; it is forgotten window_ns after the
 * last SYN-ACK. Datagrams (the audio), established flows, retransmissions and
 * control segments are never early-dropped; only the buffer limit applies.
 * refmodel/iwa.py is the executable twin. */
#ifndef _AQM_IWA_P4_
#define _AQM_IWA_P4_

control AqmIwa(in prediction_t pred, in iwa_cfg_t cfg, in bit<40> byte_time_q16, in track_t trk,
               out verdict_t v) {
    register<bit<32>>(1) iwa_pending;      // bytes of announced, unsent allowances
    register<bit<64>>(1) iwa_last_start;   // time of the last SYN-ACK

    apply {
        bit<32> pending;
        bit<64> last_start;
        iwa_pending.read(pending, 0);
        iwa_last_start.read(last_start, 0);
        if (pred.now - last_start > (bit<64>)cfg.window_ns) {
            pending = 0;
        }
        if (trk.flags & TRACK_NEW_FLOW != 0) {
            bit<33> sum = (bit<33>)pending + (bit<33>)cfg.allowance_bytes;
            pending = sum > 0xFFFFFFFF ? 0xFFFFFFFF : (bit<32>)sum;
            last_start = pred.now;
        }
        if (trk.cls == CLASS_TCP_START && trk.progress < cfg.allowance_bytes) {
            bit<32> used = cfg.allowance_bytes - trk.progress;
            if (trk.payload < used) { used = trk.payload; }
            pending = pending > used ? pending - used : 0;
        }
        iwa_pending.write(0, pending);
        iwa_last_start.write(0, last_start);
        bit<64> reserve_ns = ((bit<64>)pending * (bit<64>)byte_time_q16) >> BYTE_TIME_FRAC;

        bool above = pred.sojourn_ns + reserve_ns > (bit<64>)cfg.target_ns;
        v.drop = false;
        v.early = false;
        v.reason = REASON_NONE;
        if (pred.over_limit) {
            v.drop = true;
            v.reason = REASON_LIMIT;
        } else if (trk.cls == CLASS_TCP_START && above) {
            if (trk.progress >= cfg.allowance_bytes) {
                v.drop = true;
                v.early = true;
                v.reason = REASON_IWA_SURPLUS;
            } else {
                v.reason = REASON_IWA_ALLOWANCE;
            }
        } else if (trk.cls == CLASS_TCP_RTX && above) {
            v.reason = REASON_IWA_RTX;
        }
        v.s1 = ((bit<64>)trk.slot << 32) | (bit<64>)trk.progress;
        v.s2 = (bit<64>)pending;
    }
}

#endif
