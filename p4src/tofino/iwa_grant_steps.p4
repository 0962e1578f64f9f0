/* The grant's arithmetic (iwa_grant.p4): the tables and the steps it applies, one dependent operation an action,
 * declared in the body of the control that runs the grant: TnaIngress (bottleneck_tna.p4), or with
 * -DIWA_GRANT_EGRESS=1 IwaGrantEgress (iwa_egress.p4). Both name the grant's words md.iwa and the ACK number
 * IWA_ACK. */
IwaProduct() room_bytes;      // ns_to_bytes(room)
IwaProduct() deficit_bytes;   // ns_to_bytes(deficit)
// (vq_time, bytes_to_ns(advance + waiting), is TnaIngress's: with the grant in egress the second pass applies it)
// the products' temporaries (IwaProduct): vq_time's follow room_bytes's (vq_bytes waits for the grant,
// which waits for room_b), so the two share theirs
bit<32> iwa_m_room; bit<8> iwa_e_room; bit<32> iwa_mk_room;   // room_bytes, then vq_time
bit<32> iwa_m_def;  bit<8> iwa_e_def;  bit<32> iwa_mk_def;    // iwa_mk_def: then round_up's t in ingress
#if IWA_GRANT_EGRESS
// egress has the containers: round_up's temporary is its own (shared with deficit_bytes's mk, bf-p4c 9.13.4 split
// it at bit 16 there, and round_up's actions then needed too many sources)
bit<32> iwa_t_up;
#define IWA_UP_T iwa_t_up
#else
#define IWA_UP_T iwa_mk_def
#endif
IwaScaleDown() new_window;    // the field the ACK leaves with << scale
IwaScaleUp() round_up;        // the field that covers want - ack
IwaShare() share_of;
int<32> iwa_slack;
int<32> iwa_nslack;
bit<32> iwa_used_a;
bit<32> iwa_cut;
bit<32> iwa_word;             // the grant's word: MARK's checkpoint
// the grant's room (shaper.room_of)
int<32> iwa_vq_gap;
action iwa_room_1() {
    md.iwa.vq_ahead = (int<32>)md.iwa.vq - md.iwa.now;
    iwa_vq_gap = md.iwa.now - (int<32>)md.iwa.vq;
    iwa_used_a = md.iwa.res_cur + md.iwa.res_old;
}
action iwa_room_2() {
    md.iwa.vq_ahead = max(md.iwa.vq_ahead, (int<32>)md.iwa.backlog);
    iwa_vq_gap = max(iwa_vq_gap, 0);     // what pass 2's vq_add adds beyond the grant's time (iwa.p4)
}
action iwa_room_3() { md.iwa.granted = (bit<32>)max(md.iwa.vq_ahead, 0); }
#if !IWA_GRANT_EGRESS
action iwa_vq_plus_gap() { md.iwa.vq_ns = md.iwa.vq_ns + (bit<32>)iwa_vq_gap; }
#endif
action iwa_room_4() { md.iwa.used = iwa_used_a + md.iwa.granted; }
action iwa_room_5() {
    iwa_slack = (int<32>)(md.iwa.avail - md.iwa.used);
    iwa_nslack = (int<32>)(md.iwa.used - md.iwa.avail);
}
action iwa_room_6() {
    md.iwa.room = (bit<32>)max(iwa_slack, 0);
    md.iwa.deficit = (bit<32>)max(iwa_nslack, 0);
}
// above target: the acked bytes less the excess (all of them at most)
action iwa_cut_1() { iwa_cut = min(md.iwa.acked, md.iwa.deficit_b); }
action iwa_cut_2() { md.iwa.grant = md.iwa.acked - iwa_cut; }
// the margin's threshold: half the flow's share (shaper.margin_holds)
action iwa_half_share() { md.iwa.half_share = md.iwa.share >> 1; }
// the field the ACK leaves with, whole, into a word of its own: the packing's 4- and 12-bit slices of md.iwa.fld
// itself split its PHV group (every word the grant's arithmetic ties to it, with the ACK number's no-split
// header word) at bits 12 and 16, where no allocation fits; a slice of the copy splits only the copy
Hash<bit<32>>(HashAlgorithm_t.IDENTITY) iwa_pack_fld;
