/* IWA, the initial-window-aware AQM (docs/iwa.md), its downstream decision.
 * Its main lever is upstream and loss-free: start_shaper.p4 sizes the windows
 * of starting flows to the queue room the audio's budget leaves. Here:
 *   - everything no window holds is CoDel's (bottleneck.p4 applies AqmCodel
 *     to it): datagrams, flows IWA does not shape, frames it cannot parse, and
 *     shaped flows past their start phase, so no traffic meets a plain FIFO;
 *   - the safety net: new data of a starting flow beyond the window it was
 *     given (a sender that ignores the window) is dropped while its sojourn
 *     exceeds the target; a mark would not shrink that queue, so ECN or not,
 *     it is a drop;
 *   - a shaped flow's retransmissions and control segments pass; the buffer
 *     limit applies to everything.
 * refmodel/iwa.py is the executable twin. */
#ifndef _AQM_IWA_P4_
#define _AQM_IWA_P4_

control AqmIwa(in prediction_t pred, in iwa_cfg_t cfg, in track_t trk, out verdict_t v) {
    apply {
        bool above = pred.sojourn_ns > (bit<64>)cfg.target_ns;
        v.drop = false;
        v.early = false;
        v.reason = REASON_NONE;
        if (pred.over_limit) {
            v.drop = true;
            v.reason = REASON_LIMIT;
        } else if (trk.cls == CLASS_TCP_START && trk.flags & TRACK_BEYOND != 0 && above) {
            v.drop = true;
            v.reason = REASON_IWA_SURPLUS;
        } else if (trk.cls == CLASS_TCP_RTX && above) {
            v.reason = REASON_IWA_RTX;
        }
        v.s1 = ((bit<64>)trk.slot << 32) | (bit<64>)trk.progress;
        v.s2 = 0;
    }
}

#endif
