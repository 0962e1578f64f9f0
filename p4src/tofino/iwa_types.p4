/* IWA's types on Tofino 2 (iwa.p4): the pass-2 header, the SYN option layouts the parser knows, the words
 * of a packet. refmodel/tofino_iwa.py is the twin; tests/test_tofino_iwa_p4.py checks the header's layout and
 * the op encodings against it. */
#ifndef _TNA_IWA_TYPES_P4_
#define _TNA_IWA_TYPES_P4_

/* Flow slots per pipe (-DIWA_SLOT_BITS=k: 2^k slots; every per-flow register has that many cells). */
#ifndef IWA_SLOT_BITS
#define IWA_SLOT_BITS 16
#endif
#define IWA_FLOW_SLOTS (1 << IWA_SLOT_BITS)
typedef bit<IWA_SLOT_BITS> flow_slot_t;

/* An upstream ACK's second pass (refmodel/tofino_iwa.py: Pass2): op 12 bits, the window field 16, the scale 4,
 * the virtual queue's addition 32 and a word 32 (the twin's UNCOUNT: a displaced flow's state): 96 bits, the resubmit header the
 * queue's pass2_h also is in this build. Its ACK number, slot and link come from the packet, parsed again. */
header iwa_pass2_h {
    bit<12> op;
    bit<16> field;
    bit<4>  scale;
    bit<32> vq_ns;
    bit<32> word;
}
/* On the wire it travels as the queue's pass2_h (types.p4: 8, 8, 16, 32, 32 bits), whose bits these are:
 * bf-p4c takes only byte-sized fields into a resubmit header (a 12-bit op "is not byte-sized"). In the
 * metadata the fields are this struct's. */
struct iwa_pass2_t {
    bit<12> op;
    bit<16> field;
    bit<4>  scale;
    bit<32> vq_ns;
    bit<32> word;
}

/* -DIWA_GRANT_EGRESS=1: the grant in egress (docs/tofino.md, "The grant in egress"). An upstream ACK's first pass
 * reads and updates the state in ingress and bridges what the grant needs (iwa_bridge_h) to the egress of its
 * pipe's recirculation port; egress works out the grant, puts the pass-2 header in front of the packet
 * (iwa_recirc_h, then the 96 bits as pass2_h) and recirculates it; its second ingress pass writes, as a
 * resubmitted ACK's does. Ingress keeps the reads and egress's own stages take the grant's chain; it does not
 * compile yet (2026-11-30: ingress 24 and egress 25 stages by bf-p4c's dependency graph, egress's PHV short:
 * docs/tofino.md, "The grant in egress"). */
#ifndef IWA_GRANT_EGRESS
#define IWA_GRANT_EGRESS 0
#endif
#if IWA_GRANT_EGRESS
/* What the grant reads of pass 1 (iwa_grant.p4's inputs), byte-aligned. The flags are one byte each. */
header iwa_bridge_h {
    bit<8>  kind;                // BRIDGE_IWA
    bit<16> port;                // the ACK's ingress port: its second pass is routed from it
    bit<8>  rate_class;
    bit<8>  scale;
    bit<8>  shaping;
    bit<8>  first_ack;
    bit<8>  restart;
    bit<8>  idle_branch;
    bit<8>  retract;
    bit<8>  released;            // a first ACK's own frame is given back (the reserve's)
    bit<8>  mine_cur;            // ... to the current generation
    bit<8>  reached;             // seqhi + mss >= mark: the server reached its checkpoint (iwa_short == 0)
    bit<32> ack;
    bit<32> own;
    bit<32> edge;
    bit<32> win32;
    bit<32> acked;
    bit<32> mss;
    bit<32> iw_min;
    bit<32> seqhi_mss;
    bit<32> res_cur;
    bit<32> res_old;
    bit<32> target_ns;
    bit<32> mtu_ns;
    bit<32> vq;
    int<32> now;
    bit<32> backlog;
    bit<32> nflows;
    bit<32> span;
    bit<32> end;
    bit<32> state;
}
/* In front of a recirculated ACK (its second pass), before the 96 bits the parser takes as pass2_h. The mark
 * tells it from a tick on the same port: a generator's header starts with two zero bits. */
const bit<8> IWA_RECIRC_MARK = 0xFF;
header iwa_recirc_h {
    bit<8>  mark;                // IWA_RECIRC_MARK
    bit<16> port;                // the ACK's ingress port
    bit<32> gap;                 // max(now - vq, 0) as the grant saw it: the second pass adds it to vq's time
}
/* What egress writes: the mark, port and gap, then iwa_pass2_h's fields (op 12, field 16, scale 4, vq 32, word
 * 32), vq in bytes (the second pass converts it: bytes_to_ns, then adds the gap) */
header iwa_recirc_out_h {
    bit<8>  mark;
    bit<16> port;
    bit<32> gap;
    bit<12> op;
    bit<16> field;
    bit<4>  scale;
    bit<32> vq_ns;
    bit<32> word;
}
#endif

/* Op (refmodel/tofino_iwa.py: Op, the same bits) */
const bit<12> IWA_OP_EDGE       = 1;
const bit<12> IWA_OP_RETRACT    = 2;
const bit<12> IWA_OP_MARK       = 4;
const bit<12> IWA_OP_END_AT_ACK = 8;
const bit<12> IWA_OP_VQ         = 16;
const bit<12> IWA_OP_STARVE     = 32;   // the twin's; not yet acted on here (docs/tofino.md: starved flows)
const bit<12> IWA_OP_UNCOUNT    = 128;
const bit<12> IWA_OP_PAUSE      = 256;
const bit<12> IWA_OP_SHUT       = 512;
const bit<12> IWA_OP_HELD       = 1024;
const bit<12> IWA_OP_OPEN       = 2048;

/* A SYN's (or SYN-ACK's) TCP options in the layouts Linux, Windows and macOS send, each a fixed header the
 * parser takes whole (no loop): the window-scale option (NOP, 3, 3, shift) at a known place.
 *   12 bytes  Windows:  MSS, NOP, WS, NOP, NOP, SACK_PERM          (01 03 03 at bytes 4..6: b)
 *             Linux without timestamps: MSS, NOP, NOP, SACK_PERM, NOP, WS   (01 03 03 at 8..10: c)
 *   20 bytes  Linux:    MSS, SACK_PERM, TS, NOP, WS                (01 03 03 at 16..18)
 *   24 bytes  macOS:    MSS, NOP, WS, NOP, NOP, TS, SACK_PERM, EOL, EOL  (01 03 03 at 4..6)
 * Other layouts are not parsed: the flow is not shaped (its SYN is not remembered), and its data is the
 * standing-queue control's. */
/* (The parser matches at most 4 bytes a state: it tests the WS option's kind and length bytes, 3 and 3.) */
header tcp_opt12_h {
    bit<32> a;
    bit<8>  b_nop;
    bit<8>  b_kind;
    bit<8>  b_len;
    bit<8>  b_shift;
    bit<8>  c_nop;
    bit<8>  c_kind;
    bit<8>  c_len;
    bit<8>  c_shift;
}
header tcp_opt20_h {
    bit<32> a;
    bit<32> b;
    bit<32> c;
    bit<32> d;
    bit<8>  e_nop;
    bit<8>  e_kind;
    bit<8>  e_len;
    bit<8>  e_shift;
}
header tcp_opt24_h {
    bit<32> a;
    bit<8>  b_nop;
    bit<8>  b_kind;
    bit<8>  b_len;
    bit<8>  b_shift;
    bit<32> c;
    bit<32> d;
    bit<32> e;
    bit<32> f;
}

/* The per-flow state's bits that the P4 keeps in registers of their own (iwa.p4 says why) */
const bit<32> IWA_STAMP_NONE = 0xFFFFFFFF;   // flow_count: not counted (closed, or never)

/* A link's IWA knobs (iwa_cfg) */
struct iwa_cfg_t {
    bit<1>  on;
    bit<32> target_ns;
    int<32> hold_ns;
    bit<32> mss;
    bit<32> iw_min;              // IW_MIN_SEGMENTS MSS, the least initial window in bytes: the controller's product
    bit<32> age_c;               // the flow tracker's slot age, in the coarse clock's units (2^16 ns)
}

struct iwa_md_t {
    iwa_cfg_t cfg;
    /* the parser's */
    bit<8>    ws_shift;
    bit<1>    ws_seen;
    bit<8>    ws_where;          // which layout's byte holds the shift (1: opt12.b, 2: opt12.c, 3: opt20, 4: opt24)
    bit<1>    opts_known;        // the options' layout is one the parser knows (or there are none)
    bit<16>   csum_res;          // the TCP checksum's residual without the window field
    bit<1>    rewrite;           // the window was rewritten: the deparser updates the checksum
    /* the flow tracker */
    bit<32>   h;                 // CRC-32 of server, client, ports, proto
    flow_slot_t slot;
    int<32>   now_c;             // the coarse clock (2^16 ns), the slots' age
    int<32>   ft_after;          // now_c - age: a slot seen since is live
    int<32>   ft_seen;           // what a touch writes: now_c, or ft_dead (a FIN or RST)
    bit<32>   sig;               // the slot's signature after this packet
    bit<32>   first;             // a SYN-ACK's seq + 1
    bit<32>   isn;
    bit<32>   seqhi;             // before this segment
    bit<32>   seq_end;
    bit<32>   start;
    bit<1>    tracked;
    bit<1>    new_flow;
    bit<1>    closing;           // FIN or RST
    /* the start shaper, pass 1 */
    bit<32>   link_w;            // flow_link: link | SHAPE << 16 | scale << 20 | CLOSED << 24
    link_id_t flink;             // the flow's link (flow_link's)
    bit<32>   state;             // flow_state before this ACK (a SYN-ACK: the state it writes)
    bit<32>   st_or;             // what state_or sets
    bit<32>   syn_rec;
    bit<8>    syn_low;
    int<32>   now;               // IWA's copies of the clock and of the link's MTU time, through the hash unit:
    bit<32>   mtu_ns;            // md.now would join IWA's arithmetic to the queue's in one PHV group
    bit<32>   win32;             // the packet's window field, 32 bits, through the hash unit (ties no PHV group)
    bit<32>   field32;           // pass 2's window field, 32 bits
    bit<1>    payload;           // the segment carries data (iwa_payload)           // the SYN record's low byte: SYN_SEEN, SYN_WS, the shift (IwaSynRecord)
    bit<32>   syn_t;
    bit<32>   lead;              // flow_srtt
    bit<32>   mark;
    bit<32>   mark_t;
    bit<32>   edge;              // flow_edge before this ACK
    bit<32>   edge_in;           // what flow_edge's actions write or compare
    bit<32>   last_ack;
    bit<32>   ack;               // the ACK number where the packet's header is not parsed (the grant in egress)
    bit<32>   acked;
    bit<32>   own;               // ack + (window << scale)
    bit<32>   win_bytes;         // window << scale
    bit<8>    scale;
    bit<1>    shape;
    bit<1>    closed;
    bit<1>    counting;
    bit<1>    shaping;
    bit<1>    first_ack;
    bit<1>    active;            // payload or acked
    bit<1>    app_limited;
    bit<1>    retract_cond;
    bit<8>    idle_old;          // flow_idle before this ACK
    bit<1>    restart;
    bit<1>    idle_branch;
    bit<1>    retract;
    int<32>   epoch_ago1;        // now - hold, now - 2 hold: the epoch's roll
    int<32>   epoch_ago2;
    bit<32>   epoch;             // the link's epoch after the roll
    bit<32>   epoch_prev;
    bit<8>    step;              // the roll's step
    bit<32>   count_r;           // flow_count: 0 already counted this epoch, 1 counted now (FRESH in count_hi)
    bit<32>   count_hi;
    bit<32>   stamp;             // flow_count's stamp before a close (the uncount)          // flow_count's bits after the count (FLOW_FRESH, FLOW_PAUSED)
    bit<32>   cur_before;
    bit<32>   act_a;             // iwa_act's words
    bit<32>   act_b;
    bit<32>   act_old;
    bit<32>   act_new;
    bit<32>   nflows;
    bit<32>   res_a;             // iwa_reserve's words
    bit<32>   res_b;
    bit<32>   res_cur;
    bit<32>   res_old;
    bit<32>   span;
    bit<32>   span_ns;
    bit<32>   span_in;
    bit<32>   end_in;
    bit<32>   end;
    bit<32>   vq;
    bit<32>   backlog;
    /* the grant */
    int<32>   vq_ahead;
    bit<32>   granted;
    bit<32>   avail;
    bit<32>   used;
    bit<32>   room;
    bit<32>   deficit;
    bit<32>   room_b;            // ns_to_bytes(room)
    bit<32>   deficit_b;
    bit<32>   w;                 // edge - ack
    bit<32>   share;
    bit<32>   half_share;
    bit<32>   grant;
    bit<32>   base;
    bit<32>   want;
    bit<32>   floor;
    bit<1>    floored;
    bit<1>    cutting;
    bit<32>   fld_up;
    bit<32>   fld;
    bit<32>   fld_pk;            // fld through the hash unit: the pass-2 packing's copy (iwa_steps.p4)
    bit<32>   new_edge;
    bit<32>   advance;
    bit<32>   vq_bytes;
    bit<32>   vq_ns;
    int<32>   vq_from_now;
    bit<12>   op;
    /* downstream */
    bit<32>   dn_state;
    bit<32>   dn_edge;
    bit<32>   dn_end;
    bit<8>    tflags;
    int<32>   unheld_own;
}

#endif
