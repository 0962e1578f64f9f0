/* IWA, the initial-window-aware AQM (docs/iwa.md), its downstream decision.
 * Its main lever is upstream and loss-free: start_shaper.p4 sizes the windows
 * of starting flows to the queue room the audio's budget leaves. Here:
 *   - everything no window holds is CoDel's (bottleneck.p4 applies AqmCodel
 *     to it): datagrams, flows IWA does not shape, frames it cannot parse, and
 *     shaped flows past their start phase, so no traffic meets a plain FIFO;
 *   - the safety net: new data of a starting flow beyond the window it was
 *     given (a sender that ignores the window) is dropped while its sojourn
 *     exceeds the target; a mark would not shrink that queue, so ECN or not,
 *     it is a drop; so is a full-size frame of new data no window holds at
 *     all (QUIC and other datagrams, TCP whose SYN was not seen) beyond its
 *     share of the link, which only the target keeps from the audio's budget;
 *   - on a link whose rate changes, the budget cap: a full-size frame of new
 *     data that would leave more than the cap of queue behind it is dropped
 *     (what a rate drop left in flight, granted at the old rate; the cap is
 *     the audio's budget, never nearer above the target than its margin);
 *   - a shaped flow's retransmissions and control segments pass; the buffer
 *     limit applies to everything.
 * refmodel/iwa.py is the executable twin. */
#ifndef _AQM_IWA_P4_
#define _AQM_IWA_P4_

control AqmIwa(in prediction_t pred, in iwa_cfg_t cfg, in track_t trk, in bool small, in bit<16> link,
               in bit<8> unheld_shift, out verdict_t v) {
    // per link: the virtual link-free time (ns) of the frames no window holds, at their share (refmodel/iwa.py);
    // 64 bits: a 32-bit time wraps in 4.3 s, and a silence of 2.1 s made an old time look 2 s in the future
    register<bit<64>>(N_LINKS) iwa_unheld;

    apply {
        bool above = pred.sojourn_ns > (bit<64>)cfg.target_ns;
        v.drop = false;
        v.early = false;
        v.reason = REASON_NONE;
        bool new_data = trk.cls != CLASS_TCP_CTRL && trk.cls != CLASS_TCP_RTX;
        if (pred.over_limit) {
            v.drop = true;
            v.reason = REASON_LIMIT;
        } else if (cfg.budget_cap_ns != 0 && !small && new_data &&
                   pred.tat_new - pred.now > (bit<64>)cfg.budget_cap_ns) {
            // the budget cap (a link whose rate changes): what a rate drop left in flight, which no window can
            // recall, never queues ahead of the audio beyond its budget (refmodel/iwa.py)
            v.drop = true;
            v.reason = REASON_IWA_CAP;
        } else if (trk.cls == CLASS_TCP_START && trk.flags & TRACK_BEYOND != 0 && above) {
            v.drop = true;
            v.reason = REASON_IWA_SURPLUS;
        } else if (!small && new_data && trk.flags & TRACK_SHAPED == 0) {
            // new data no window holds (QUIC, unshaped TCP): dropped above the target when all of it together
            // would queue beyond it on its own at its share of the link, 1/2^unheld_shift (one flow beside the
            // link's active shaped flows: start_shaper.p4); its admitted frames join that virtual queue
            bit<64> tat;
            iwa_unheld.read(tat, (bit<32>)link);
            bit<64> own = tat > pred.now ? tat - pred.now : 0;
            if (above && own > (bit<64>)cfg.target_ns) {
                v.drop = true;
                v.reason = REASON_IWA_UNHELD;
            } else {
                // + its frame at its share of the link; what queued beyond the target while the real queue was
                // below it is forgotten (at most one frame is kept above it: no more than the next drop needs)
                bit<64> from = pred.tat > pred.now ? pred.tat : pred.now;
                bit<64> kept = own > (bit<64>)cfg.target_ns ? (bit<64>)cfg.target_ns : own;
                iwa_unheld.write((bit<32>)link, pred.now + kept + ((pred.tat_new - from) << unheld_shift));
            }
        } else if (trk.cls == CLASS_TCP_RTX && above) {
            v.reason = REASON_IWA_RTX;
        }
        v.s1 = ((bit<64>)trk.slot << 32) | (bit<64>)trk.progress;
        v.s2 = 0;
    }
}

#endif
