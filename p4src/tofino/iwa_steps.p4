/* IWA's arithmetic steps, one dependent operation an action (bf-p4c: "action spanning multiple stages" when
 * an action's statements depend on each other), declared in TnaIngress's body (bottleneck_tna.p4) and called
 * in order from iwa_upstream.p4, as codel.p4's first_steps .. times. The grant's are iwa_grant_steps.p4. */
int<32> iwa_dack;
bit<32> iwa_span_a;
bit<32> iwa_span_b;
// pass 1: what the ACK acknowledged, and the epoch's roll times
action iwa_acked_1() {
    iwa_dack = (int<32>)(hdr.tcp.ackNo - md.iwa.last_ack);
    md.iwa.epoch_ago1 = md.iwa.now - md.iwa.cfg.hold_ns;
}
action iwa_acked_2() {
    md.iwa.acked = (bit<32>)max(iwa_dack, 0);
    md.iwa.epoch_ago2 = md.iwa.epoch_ago1 - md.iwa.cfg.hold_ns;
}
// a first ACK's start phase: now - start + lead + target
action iwa_span_1() {
    iwa_span_a = (bit<32>)md.iwa.now - md.iwa.start;
    iwa_span_b = md.iwa.lead + md.iwa.cfg.target_ns;
}
action iwa_span_2() { md.iwa.span_ns = iwa_span_a + iwa_span_b; }
// the pass-2 header's packing and unpacking (iwa_types.p4: op 12, field 16, scale 4 in the queue's 8, 8, 16),
// through identity hashes: as ALU moves the slices split every field their PHV group touches at bits 12 and 16
Hash<bit<8>>(HashAlgorithm_t.IDENTITY) iwa_pack_op;
Hash<bit<8>>(HashAlgorithm_t.IDENTITY) iwa_pack_reason;
Hash<bit<16>>(HashAlgorithm_t.IDENTITY) iwa_pack_count;
Hash<bit<12>>(HashAlgorithm_t.IDENTITY) iwa_unpack_op;
Hash<bit<16>>(HashAlgorithm_t.IDENTITY) iwa_unpack_field;
Hash<bit<4>>(HashAlgorithm_t.IDENTITY) iwa_unpack_scale;
Hash<bit<8>>(HashAlgorithm_t.IDENTITY) iwa_unpack_scale8;
Hash<bit<8>>(HashAlgorithm_t.IDENTITY) iwa_link_scale;
Hash<bit<32>>(HashAlgorithm_t.IDENTITY) iwa_unpack_field32;
Hash<bit<32>>(HashAlgorithm_t.IDENTITY) iwa_pack_word;
// the packet's window field as 32 bits, its own action: as `@in_hash { md.iwa.win32 = (bit<32>)hdr.tcp.window; }`
// among the other @in_hash copies, with pass 1's tail it became an ALU move, which cut win32's whole group at 16
Hash<bit<32>>(HashAlgorithm_t.IDENTITY) iwa_win_hash;
action iwa_win32() { md.iwa.win32 = iwa_win_hash.get({16w0, hdr.tcp.window}); }
// a segment with data (as tcp_class: the total length beyond the IPv4 and TCP headers), one range lookup
action iwa_has_payload() { md.iwa.payload = 1; }
action iwa_no_payload() { md.iwa.payload = 0; }
table iwa_payload {
    key = {
        hdr.tcp.dataOffset : exact @name("data_offset");
        hdr.ipv4.totalLen  : range @name("total_len");
    }
    actions = { iwa_has_payload; iwa_no_payload; }
    default_action = iwa_no_payload();
    size = 16;
    const entries = {
        (5, 41 .. 65535) : iwa_has_payload(); (6, 45 .. 65535) : iwa_has_payload();
        (7, 49 .. 65535) : iwa_has_payload(); (8, 53 .. 65535) : iwa_has_payload();
        (9, 57 .. 65535) : iwa_has_payload(); (10, 61 .. 65535) : iwa_has_payload();
        (11, 65 .. 65535) : iwa_has_payload(); (12, 69 .. 65535) : iwa_has_payload();
        (13, 73 .. 65535) : iwa_has_payload(); (14, 77 .. 65535) : iwa_has_payload();
        (15, 81 .. 65535) : iwa_has_payload();
    }
}
// pass 1's tests, each a difference then its min or max with 0 (a gateway tests a field for zero: a sign test
// or a compare of two 32-bit fields is "too complex")
action iwa_set_counting() { md.iwa.counting = 1; }
action iwa_not_counting() { md.iwa.counting = 0; }
table iwa_counting {
    key = { md.iwa.cfg.on : exact @name("on"); md.iwa.shape : exact @name("shape"); }
    actions = { iwa_set_counting; iwa_not_counting; }
    const default_action = iwa_not_counting();
    size = 4;
    const entries = { (1, 1) : iwa_set_counting(); }
}
int<32> iwa_t_old;
int<32> iwa_roll1;
int<32> iwa_roll2;
action iwa_roll_1() {
    iwa_roll2 = iwa_t_old - md.iwa.epoch_ago2;
    iwa_roll1 = iwa_t_old - md.iwa.epoch_ago1;
}
action iwa_roll_2() {
    iwa_roll2 = min(iwa_roll2, 0);    // nonzero: t_old < now - 2 hold
    iwa_roll1 = min(iwa_roll1, 0);
}
int<32> iwa_oe;
int<32> iwa_oe_neg;
int<32> iwa_oe_pos;
action iwa_oe_1() { iwa_oe = (int<32>)(md.iwa.own - md.iwa.edge); }
action iwa_oe_2() {
    iwa_oe_neg = min(iwa_oe, 0);      // zero: own >= edge
    iwa_oe_pos = max(iwa_oe, 0);      // nonzero: own > edge
}
int<32> iwa_short;
int<32> iwa_late;
int<32> iwa_lead2;
int<32> iwa_caught;
bit<32> iwa_seqhi_mss;                // seqhi + mss: the grant's checkpoint adds to it (one add an action)
// seqhi + mss twice, on purpose: iwa_short = iwa_seqhi_mss - mark in iwa_app_2 instead fails PHV allocation
// (bf-p4c 9.13.4, the default tofino2-iwa build, tried 2026-11-28 and again 2026-11-29)
action iwa_app_1() {
    iwa_short = (int<32>)(md.iwa.seqhi + md.iwa.cfg.mss);
    iwa_seqhi_mss = md.iwa.seqhi + md.iwa.cfg.mss;
    iwa_late = md.iwa.now - (int<32>)md.iwa.mark_t;
    iwa_lead2 = (int<32>)(md.iwa.lead << 1);
    iwa_caught = (int<32>)(hdr.tcp.ackNo - md.iwa.seqhi);
}
action iwa_app_2() {
    iwa_short = iwa_short - (int<32>)md.iwa.mark;
    iwa_late = iwa_late - iwa_lead2;
    iwa_caught = min(iwa_caught, 0);  // zero: ack >= seqhi
}
action iwa_app_3() {
    iwa_short = min(iwa_short, 0);    // nonzero: seqhi + mss < mark (short of the checkpoint)
    iwa_late = max(iwa_late, 0);      // nonzero: now - mark_t > 2 lead
}
// FLOW_EPOCH (0x80) ^ the epoch's low bit, as a lookup: an ALU XOR wants both bits at one container position,
// which splits the state and the epoch (and epoch_prev with it) where no PHV allocation fits them
bit<1> iwa_par;
action iwa_par_0() { iwa_par = 0; }
action iwa_par_1() { iwa_par = 1; }
table iwa_parity {
    key = { md.iwa.state[7:7] : exact @name("epoch_flag"); md.iwa.epoch[0:0] : exact @name("epoch_low"); }
    actions = { iwa_par_0; iwa_par_1; }
    const default_action = iwa_par_1();
    size = 4;
    const entries = { (0, 0) : iwa_par_0(); (1, 1) : iwa_par_0(); }
}
action iwa_unpack_1() {
    md.iwa2.op = iwa_unpack_op.get({md.pass2.op, md.pass2.reason[7:4]});
    md.iwa.scale = iwa_unpack_scale8.get({4w0, md.pass2.count[3:0]});
}
action iwa_unpack_2() { md.iwa2.field = iwa_unpack_field.get({md.pass2.reason[3:0], md.pass2.count[15:4]}); }
action iwa_unpack_3() { md.iwa.field32 = iwa_unpack_field32.get({16w0, md.pass2.reason[3:0], md.pass2.count[15:4]}); }
#if !IWA_GRANT_EGRESS   // the resubmitted second pass's header (egress packs its own: iwa_egress.p4)
action iwa_pack_1(bit<12> op) {
    md.pass2.op = iwa_pack_op.get({op[11:4]});
    md.pass2.reason = iwa_pack_reason.get({op[3:0], md.iwa.fld_pk[15:12]});
}
action iwa_pack_2() { md.pass2.count = iwa_pack_count.get({md.iwa.fld_pk[11:0], md.iwa.scale[3:0]}); }
action iwa_pack_3() { md.pass2.step = iwa_pack_word.get({iwa_word}); }   // iwa_word: iwa_grant_steps.p4
#endif
// pass 2: what state_or sets for SHUT and HELD
action iwa_set_st_or(bit<32> v) { md.iwa.st_or = v; }
table iwa_st_or {
    key = { md.iwa2.op : ternary @name("op"); }
    actions = { iwa_set_st_or; }
    const default_action = iwa_set_st_or(0);
    size = 4;
    const entries = {
        12w0x600 &&& 12w0x600 : iwa_set_st_or(FLOW_SHUT | FLOW_HELD);
        12w0x200 &&& 12w0x200 : iwa_set_st_or(FLOW_SHUT);
        12w0x400 &&& 12w0x400 : iwa_set_st_or(FLOW_HELD);
    }
}
