/* IWA's grant in egress (-DIWA_GRANT_EGRESS=1; iwa_types.p4 says why): an upstream ACK's first pass bridged
 * what the grant reads (iwa_bridge_h) to the egress of its pipe's recirculation port; this control works the
 * grant out with the same file as ingress would (iwa_grant.p4, its steps iwa_grant_steps.p4), and puts the
 * pass-2 header in front of the packet (iwa_recirc_out_h), which recirculates: its second pass writes in
 * ingress (iwa_upstream.p4), as a resubmitted ACK's does. No register here: the grant only computes.
 * refmodel/tofino_iwa.py: TnaShaper._grant, with the second pass later by the recirculation (lag_ns). */
#ifndef _TNA_IWA_EGRESS_P4_
#define _TNA_IWA_EGRESS_P4_

#undef IWA_ACK
#define IWA_ACK md.iwa.ack

control IwaGrantEgress(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t md) {
#include "iwa_grant_steps.p4"
    bit<1> released;
    bit<1> mine_cur;
    int<32> iwa_short;            // 0: the server reached its checkpoint (pass 1's test, bridged)
    bit<32> iwa_seqhi_mss;

    // the bridged flags into the grant's names (parallel moves: one action, beside the room's first step); the
    // words are the parser's (TnaEgressParser: parse_iwa_bridge), which costs no stage
    action from_bridge() {
        md.iwa.shaping = hdr.iwa_b.shaping[0:0];
        md.iwa.first_ack = hdr.iwa_b.first_ack[0:0];
        md.iwa.restart = hdr.iwa_b.restart[0:0];
        md.iwa.idle_branch = hdr.iwa_b.idle_branch[0:0];
        md.iwa.retract = hdr.iwa_b.retract[0:0];
        released = hdr.iwa_b.released[0:0];
        mine_cur = hdr.iwa_b.mine_cur[0:0];
        iwa_seqhi_mss = hdr.iwa_b.seqhi_mss;
    }

    apply {
        from_bridge();
        iwa_short = 1;
        if (hdr.iwa_b.reached == 1) {
            iwa_short = 0;
        }
#include "iwa_grant.p4"
        // the second pass's header, in front of the packet's own
        hdr.iwa_r.setValid();
        hdr.iwa_r.mark = IWA_RECIRC_MARK;
        hdr.iwa_r.port = hdr.iwa_b.port;
        hdr.iwa_r.op = md.iwa.op;
        hdr.iwa_r.field = md.iwa.fld_pk[15:0];   // the copy: a slice of fld itself splits its PHV group
        hdr.iwa_r.scale = md.iwa.scale[3:0];
        hdr.iwa_r.vq_ns = md.iwa.vq_bytes;       // bytes here: the second pass converts them and adds the gap
        hdr.iwa_r.gap = (bit<32>)iwa_vq_gap;
        hdr.iwa_r.word = iwa_word;
        hdr.iwa_b.setInvalid();
    }
}

#endif
