/* IWA (the initial-window-aware AQM: ../include/start_shaper.p4, flow_tracker.p4, aqm_iwa.p4) on Tofino 2:
 * the flow tracker, the start shaper in two passes and, for what no window holds, CoDel (codel.p4).
 * refmodel/tofino_iwa.py (TnaShaper) is the twin of the start shaper's cut: the same registers, each touched
 * once a pass, the same pass-2 header (iwa_types.p4: op 12, field 16, scale 4, vq 32, word 32) and op bits.
 *
 * Where the P4 splits a twin register (a stateful ALU has a few conditions and reads two words of the packet):
 *   flow_state    the flags (scale, SHAPE, ANNOUNCED, ACKED, EPOCH, CLOSED, SHUT, HELD) ...
 *   flow_count    ... the count stamp {epoch, FRESH | PAUSED} (the twin's top 16 bits and those two flags) ...
 *   flow_idle     ... and IDLE, whose test (restart) and set (retract) are one action of their own;
 *   iwa_epoch_t   the epoch's start, and iwa_epoch its number (the roll's step is worked out between them).
 * CLOSED stands for "uncounted" as well (the twin clears COUNTED and FRESH with it).
 *
 * The flow tracker (flows.py) keeps its slot's signature and liveness in one pair (ft_key: a slot is live
 * until seen + IWA_AGE_C, in units of 2^16 ns: the coarse clock the twin asks for), then flow_isn, flow_seqhi,
 * flow_start: each once a packet.
 *
 * Every register's RegisterActions are declared here, inside the ingress control (IWA_STATE(md)), as the
 * queue's and CoDel's are; bottleneck_tna.p4 calls them. */
#ifndef _TNA_IWA_P4_
#define _TNA_IWA_P4_

/* The flow tracker's slot age: 10 s (refmodel/params.py: IwaParams.age_ns) in 2^16 ns units */
#ifndef IWA_AGE_C
#define IWA_AGE_C 152588
#endif
const bit<32> IWA_LINK_SHAPE  = 0x10000;     // flow_link: link | SHAPE | scale << 20 | CLOSED
const bit<32> IWA_LINK_CLOSED = 0x1000000;

struct iwa_pair_t {
    bit<32> lo;
    bit<32> hi;
}
struct iwa_tpair_t {
    int<32> lo;
    int<32> hi;
}

#define IWA_STATE(md) \
    /* ---- the flow tracker ---- */ \
    Register<iwa_tpair_t, flow_slot_t>(IWA_FLOW_SLOTS, {0, 0}) ft_key; \
    RegisterAction<iwa_tpair_t, flow_slot_t, bit<32>>(ft_key) ft_install = { \
        void apply(inout iwa_tpair_t v, out bit<32> r) { \
            if (v.lo == (int<32>)md.iwa.h || v.hi - md.iwa.now_c <= 0) { \
                v.lo = (int<32>)md.iwa.h; \
                v.hi = IWA_AGE_C + md.iwa.now_c; \
            } \
            r = (bit<32>)v.lo; \
        } \
    }; \
    RegisterAction<iwa_tpair_t, flow_slot_t, bit<32>>(ft_key) ft_touch = { \
        void apply(inout iwa_tpair_t v, out bit<32> r) { \
            if (v.lo == (int<32>)md.iwa.h) { \
                v.hi = IWA_AGE_C + md.iwa.now_c; \
            } \
            r = (bit<32>)v.lo; \
        } \
    }; \
    RegisterAction<iwa_tpair_t, flow_slot_t, bit<32>>(ft_key) ft_close = { \
        void apply(inout iwa_tpair_t v, out bit<32> r) { \
            if (v.lo == (int<32>)md.iwa.h) { \
                v.hi = md.iwa.now_c; \
            } \
            r = (bit<32>)v.lo; \
        } \
    }; \
    RegisterAction<iwa_tpair_t, flow_slot_t, bit<32>>(ft_key) ft_read = { \
        void apply(inout iwa_tpair_t v, out bit<32> r) { r = (bit<32>)v.lo; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_isn; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_isn) isn_set = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = md.iwa.first; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_isn) isn_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<int<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_seqhi; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_seqhi) seqhi_set = { \
        void apply(inout int<32> v) { v = (int<32>)md.iwa.first; } \
    }; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_seqhi) seqhi_adv = { \
        void apply(inout int<32> v, out bit<32> r) { \
            r = (bit<32>)v; \
            if (v - (int<32>)md.iwa.seq_end < 0) { \
                v = (int<32>)md.iwa.seq_end; \
            } \
        } \
    }; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_seqhi) seqhi_read = { \
        void apply(inout int<32> v, out bit<32> r) { r = (bit<32>)v; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_start; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_start) start_set = { \
        void apply(inout bit<32> v) { v = (bit<32>)md.iwa.now; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_start) start_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    /* ---- the start shaper: per flow ---- */ \
    Register<iwa_pair_t, flow_slot_t>(IWA_FLOW_SLOTS, {0, 0}) flow_syn; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_syn) syn_write = { \
        void apply(inout iwa_pair_t v) { v.lo = md.iwa.syn_rec; v.hi = (bit<32>)md.iwa.now; } \
    }; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_syn) syn_read = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { r = v.lo; r2 = v.hi; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_srtt; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_srtt) srtt_write = { \
        void apply(inout bit<32> v) { v = md.iwa.lead; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_srtt) srtt_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_link; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_link) link_swap = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = md.iwa.link_w; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_link) link_close = { \
        void apply(inout bit<32> v, out bit<32> r) { v = v | IWA_LINK_CLOSED; r = v; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_link) link_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_state; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_state) state_swap = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = md.iwa.state; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_state) state_or = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = v | md.iwa.st_or; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_state) state_open = { \
        void apply(inout bit<32> v) { v = v & ~(FLOW_SHUT | FLOW_HELD); } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_state) state_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<iwa_pair_t, flow_slot_t>(IWA_FLOW_SLOTS, {IWA_STAMP_NONE, 0}) flow_count; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_count) count_ack = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            if (v.lo == md.iwa.epoch) { \
                r = 0; \
            } else if (v.lo == md.iwa.epoch_prev) { \
                v.lo = md.iwa.epoch; \
                v.hi = 0; \
                r = 1; \
            } else { \
                v.lo = md.iwa.epoch; \
                v.hi = FLOW_FRESH; \
                r = 1; \
            } \
            r2 = v.hi; \
        } \
    }; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_count) count_clear = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            r = v.lo; \
            r2 = v.hi; \
            v.lo = IWA_STAMP_NONE; \
        } \
    }; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_count) count_pause = { \
        void apply(inout iwa_pair_t v) { v.hi = v.hi | FLOW_PAUSED; } \
    }; \
    Register<bit<8>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_idle; \
    RegisterAction<bit<8>, flow_slot_t, bit<8>>(flow_idle) idle_ack = { \
        void apply(inout bit<8> v, out bit<8> r) { \
            r = v; \
            if (v == 1 && md.iwa.active == 1) { \
                v = 0; \
            } else if (md.iwa.retract_cond == 1) { \
                v = 1; \
            } \
        } \
    }; \
    RegisterAction<bit<8>, flow_slot_t, bit<8>>(flow_idle) idle_clear = { \
        void apply(inout bit<8> v) { v = 0; } \
    }; \
    Register<int<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_edge; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_edge) edge_read = { \
        void apply(inout int<32> v, out bit<32> r) { r = (bit<32>)v; } \
    }; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_edge) edge_max = { \
        void apply(inout int<32> v, out bit<32> r) { \
            r = (bit<32>)v; \
            if (v - (int<32>)md.iwa.edge_in < 0) { \
                v = (int<32>)md.iwa.edge_in; \
            } \
        } \
    }; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_edge) edge_set = { \
        void apply(inout int<32> v) { v = (int<32>)md.iwa.edge_in; } \
    }; \
    Register<int<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_ack; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_ack) ack_max = { \
        void apply(inout int<32> v, out bit<32> r) { \
            r = (bit<32>)v; \
            if (v - (int<32>)hdr.tcp.ackNo < 0) { \
                v = (int<32>)hdr.tcp.ackNo; \
            } \
        } \
    }; \
    RegisterAction<int<32>, flow_slot_t, bit<32>>(flow_ack) ack_set = { \
        void apply(inout int<32> v) { v = (int<32>)md.iwa.first; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_span; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_span) span_set = { \
        void apply(inout bit<32> v, out bit<32> r) { v = md.iwa.span_in; r = v; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_span) span_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<bit<32>, flow_slot_t>(IWA_FLOW_SLOTS, 0) flow_end; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_end) end_set = { \
        void apply(inout bit<32> v, out bit<32> r) { v = md.iwa.end_in; r = v; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_end) end_idle = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = md.iwa.end_in; } \
    }; \
    RegisterAction<bit<32>, flow_slot_t, bit<32>>(flow_end) end_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<iwa_pair_t, flow_slot_t>(IWA_FLOW_SLOTS, {0, 0}) flow_mark; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_mark) mark_read = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { r = v.lo; r2 = v.hi; } \
    }; \
    RegisterAction<iwa_pair_t, flow_slot_t, bit<32>>(flow_mark) mark_write = { \
        void apply(inout iwa_pair_t v) { v.lo = md.iwa2.word; v.hi = (bit<32>)md.iwa.now; } \
    }; \
    /* ---- the start shaper: per link ---- */ \
    Register<int<32>, link_id_t>(N_LINKS, 0) iwa_epoch_t; \
    RegisterAction<int<32>, link_id_t, int<32>>(iwa_epoch_t) epoch_t_roll = { \
        void apply(inout int<32> v, out int<32> r) { \
            r = v; \
            if (v - md.iwa.epoch_ago1 < 0) { \
                v = md.iwa.now; \
            } \
        } \
    }; \
    RegisterAction<int<32>, link_id_t, int<32>>(iwa_epoch_t) epoch_t_tick = { \
        void apply(inout int<32> v) { \
            if (v - md.iwa.epoch_ago1 < 0) { \
                v = md.iwa.epoch_ago1; \
            } \
        } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) iwa_epoch; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(iwa_epoch) epoch_step = { \
        void apply(inout bit<32> v, out bit<32> r) { v = v + (bit<32>)md.iwa.step; r = v; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(iwa_epoch) epoch_read = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; } \
    }; \
    Register<bit<32>, link_id_t>(N_LINKS, 0) iwa_act_cur; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(iwa_act_cur) act_cur_roll = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = md.iwa.act_a; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(iwa_act_cur) act_cur_add = { \
        void apply(inout bit<32> v, out bit<32> r) { r = v; v = v + md.iwa.act_a; } \
    }; \
    RegisterAction<bit<32>, link_id_t, bit<32>>(iwa_act_cur) act_cur_dec = { \
        void apply(inout bit<32> v) { v = v |-| md.iwa.act_a; } \
    }; \
    Register<iwa_pair_t, link_id_t>(N_LINKS, {0, 0}) iwa_act; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_act) act_roll = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            v.lo = md.iwa.act_a; v.hi = md.iwa.act_b; r = v.lo; r2 = v.hi; \
        } \
    }; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_act) act_add = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            v.hi = v.hi + md.iwa.act_b; r = v.lo; r2 = v.hi; \
        } \
    }; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_act) act_dec = { \
        void apply(inout iwa_pair_t v) { v.lo = v.lo |-| md.iwa.act_a; v.hi = v.hi |-| md.iwa.act_b; } \
    }; \
    Register<iwa_pair_t, link_id_t>(N_LINKS, {0, 0}) iwa_reserve; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_reserve) res_keep = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            r = v.lo; r2 = v.hi; v.lo = v.lo |-| md.iwa.res_a; v.hi = v.hi |-| md.iwa.res_b; \
        } \
    }; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_reserve) res_roll1 = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            r2 = v.lo; v.hi = v.lo |-| md.iwa.res_b; v.lo = md.iwa.res_a; r = v.lo; \
        } \
    }; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_reserve) res_roll2 = { \
        void apply(inout iwa_pair_t v, out bit<32> r, out bit<32> r2) { \
            v.lo = md.iwa.res_a; v.hi = 0; r = v.lo; r2 = v.hi; \
        } \
    }; \
    RegisterAction<iwa_pair_t, link_id_t, bit<32>>(iwa_reserve) res_add = { \
        void apply(inout iwa_pair_t v) { v.lo = v.lo |+| md.iwa.res_a; } \
    }; \
    Register<int<32>, link_id_t>(N_LINKS, 0) iwa_vq; \
    RegisterAction<int<32>, link_id_t, int<32>>(iwa_vq) vq_read = { \
        void apply(inout int<32> v, out int<32> r) { r = v; } \
    }; \
    /* max(vq, now) + vq_ns would read three packet words (now, now + vq_ns, vq_ns) and a stateful ALU reads \
     * two: pass 1 adds the gap max(now - vq, 0) it saw to vq_ns (iwa_grant.p4), pass 2 adds that. It differs \
     * from the twin's max(vq, now2) + vq_ns by at most the resubmission's delay, when the queue had drained. */ \
    RegisterAction<int<32>, link_id_t, int<32>>(iwa_vq) vq_add = { \
        void apply(inout int<32> v) { \
            v = v + (int<32>)md.iwa.vq_ns; \
        } \
    }; \
    RegisterAction<int<32>, link_id_t, int<32>>(iwa_vq) vq_tick = { \
        void apply(inout int<32> v) { \
            if (v - md.iwa.now < 0) { \
                v = md.iwa.now; \
            } \
        } \
    };

/* ---- products by a rate class's constant (../include/mantissa.p4 on a Tofino): x's leading one (a TCAM of
 * constant rows whose actions shift by constants), the class's row m * k, then a table on the exponent whose
 * actions shift back by constants. ns_to_bytes and bytes_to_ns (refmodel/params.py) each an instance. */
#define IWA_LEAD(K) action lead_##K() { m = x >> K; e = K; }
#define IWA_BACK(K) action back_##K() { y = mk << K; }
// m, e and mk, the temporaries, are the caller's: products that already follow one another in the dataflow
// share them (a word fewer in the PHV each, bf-p4c keeping nearly every IWA word live through the pipe)
control IwaProduct(in bit<8> rate_class, in bit<32> x, out bit<32> y, inout bit<32> m, inout bit<8> e,
                   inout bit<32> mk) {
    action lead_0() { m = x; e = 0; }
    IWA_LEAD(1) IWA_LEAD(2) IWA_LEAD(3) IWA_LEAD(4) IWA_LEAD(5) IWA_LEAD(6) IWA_LEAD(7) IWA_LEAD(8)
    IWA_LEAD(9) IWA_LEAD(10) IWA_LEAD(11) IWA_LEAD(12) IWA_LEAD(13) IWA_LEAD(14) IWA_LEAD(15) IWA_LEAD(16)
    IWA_LEAD(17) IWA_LEAD(18) IWA_LEAD(19) IWA_LEAD(20) IWA_LEAD(21) IWA_LEAD(22) IWA_LEAD(23) IWA_LEAD(24)
    IWA_LEAD(25)
    table lead {
        key = { x : ternary @name("x"); }
        actions = { lead_0; lead_1; lead_2; lead_3; lead_4; lead_5; lead_6; lead_7; lead_8; lead_9; lead_10;
                    lead_11; lead_12; lead_13; lead_14; lead_15; lead_16; lead_17; lead_18; lead_19; lead_20;
                    lead_21; lead_22; lead_23; lead_24; lead_25; }
        const default_action = lead_0();
        size = 32;
        const entries = {
            32w0x80000000 &&& 32w0x80000000 : lead_25(); 32w0x40000000 &&& 32w0xC0000000 : lead_24();
            32w0x20000000 &&& 32w0xE0000000 : lead_23(); 32w0x10000000 &&& 32w0xF0000000 : lead_22();
            32w0x08000000 &&& 32w0xF8000000 : lead_21(); 32w0x04000000 &&& 32w0xFC000000 : lead_20();
            32w0x02000000 &&& 32w0xFE000000 : lead_19(); 32w0x01000000 &&& 32w0xFF000000 : lead_18();
            32w0x00800000 &&& 32w0xFF800000 : lead_17(); 32w0x00400000 &&& 32w0xFFC00000 : lead_16();
            32w0x00200000 &&& 32w0xFFE00000 : lead_15(); 32w0x00100000 &&& 32w0xFFF00000 : lead_14();
            32w0x00080000 &&& 32w0xFFF80000 : lead_13(); 32w0x00040000 &&& 32w0xFFFC0000 : lead_12();
            32w0x00020000 &&& 32w0xFFFE0000 : lead_11(); 32w0x00010000 &&& 32w0xFFFF0000 : lead_10();
            32w0x00008000 &&& 32w0xFFFF8000 : lead_9();  32w0x00004000 &&& 32w0xFFFFC000 : lead_8();
            32w0x00002000 &&& 32w0xFFFFE000 : lead_7();  32w0x00001000 &&& 32w0xFFFFF000 : lead_6();
            32w0x00000800 &&& 32w0xFFFFF800 : lead_5();  32w0x00000400 &&& 32w0xFFFFFC00 : lead_4();
            32w0x00000200 &&& 32w0xFFFFFE00 : lead_3();  32w0x00000100 &&& 32w0xFFFFFF00 : lead_2();
            32w0x00000080 &&& 32w0xFFFFFF80 : lead_1();
        }
    }
    action set_product(bit<32> product) { mk = product; }
    table products {
        key = { rate_class : exact @name("rate_class"); m : exact @name("m"); }
        actions = { set_product; }
        default_action = set_product(0);
        size = RATE_CLASSES * MANT_ENTRIES;
    }
    action back_0() { y = mk; }
    IWA_BACK(1) IWA_BACK(2) IWA_BACK(3) IWA_BACK(4) IWA_BACK(5) IWA_BACK(6) IWA_BACK(7) IWA_BACK(8)
    IWA_BACK(9) IWA_BACK(10) IWA_BACK(11) IWA_BACK(12) IWA_BACK(13) IWA_BACK(14) IWA_BACK(15) IWA_BACK(16)
    IWA_BACK(17) IWA_BACK(18) IWA_BACK(19) IWA_BACK(20) IWA_BACK(21) IWA_BACK(22) IWA_BACK(23) IWA_BACK(24)
    IWA_BACK(25)
    table back {
        key = { e : exact @name("e"); }
        actions = { back_0; back_1; back_2; back_3; back_4; back_5; back_6; back_7; back_8; back_9; back_10;
                    back_11; back_12; back_13; back_14; back_15; back_16; back_17; back_18; back_19; back_20;
                    back_21; back_22; back_23; back_24; back_25; }
        const default_action = back_0();
        size = 32;
        const entries = {
            1 : back_1(); 2 : back_2(); 3 : back_3(); 4 : back_4(); 5 : back_5(); 6 : back_6(); 7 : back_7();
            8 : back_8(); 9 : back_9(); 10 : back_10(); 11 : back_11(); 12 : back_12(); 13 : back_13();
            14 : back_14(); 15 : back_15(); 16 : back_16(); 17 : back_17(); 18 : back_18(); 19 : back_19();
            20 : back_20(); 21 : back_21(); 22 : back_22(); 23 : back_23(); 24 : back_24(); 25 : back_25();
        }
    }
    apply {
        lead.apply();
        products.apply();
        back.apply();
    }
}

/* ---- shifts by the client's window scale (iwa_scale: one row per shift, each a constant shift) ---- */
#define IWA_SHL(K) action shl_##K() { y = x << K; }
#define IWA_SCALE_ENTRIES(P) 1 : P##1(); 2 : P##2(); 3 : P##3(); 4 : P##4(); 5 : P##5(); 6 : P##6(); 7 : P##7(); \
    8 : P##8(); 9 : P##9(); 10 : P##10(); 11 : P##11(); 12 : P##12(); 13 : P##13(); 14 : P##14();
control IwaScaleDown(in bit<8> scale, in bit<32> x, out bit<32> y) {
    action shl_0() { y = x; }
    IWA_SHL(1) IWA_SHL(2) IWA_SHL(3) IWA_SHL(4) IWA_SHL(5) IWA_SHL(6) IWA_SHL(7) IWA_SHL(8) IWA_SHL(9)
    IWA_SHL(10) IWA_SHL(11) IWA_SHL(12) IWA_SHL(13) IWA_SHL(14)
    table iwa_scale {
        key = { scale : exact @name("scale"); }
        actions = { shl_0; shl_1; shl_2; shl_3; shl_4; shl_5; shl_6; shl_7; shl_8; shl_9; shl_10; shl_11;
                    shl_12; shl_13; shl_14; }
        const default_action = shl_0();
        size = 16;
        const entries = { IWA_SCALE_ENTRIES(shl_) }
    }
    apply { iwa_scale.apply(); }
}

/* the round-up row: (x + 2^s - 1) >> s, in two steps */
#define IWA_UP(K) action up_##K() { t = x + ((1 << K) - 1); } action shr_##K() { y = t >> K; }
// t, the temporary, is the caller's (as IwaProduct's)
control IwaScaleUp(in bit<8> scale, in bit<32> x, out bit<32> y, inout bit<32> t) {
    action up_0() { t = x; }
    action shr_0() { y = t; }
    IWA_UP(1) IWA_UP(2) IWA_UP(3) IWA_UP(4) IWA_UP(5) IWA_UP(6) IWA_UP(7) IWA_UP(8) IWA_UP(9) IWA_UP(10)
    IWA_UP(11) IWA_UP(12) IWA_UP(13) IWA_UP(14)
    table iwa_scale_up {
        key = { scale : exact @name("scale"); }
        actions = { up_0; up_1; up_2; up_3; up_4; up_5; up_6; up_7; up_8; up_9; up_10; up_11; up_12; up_13;
                    up_14; }
        const default_action = up_0();
        size = 16;
        const entries = { IWA_SCALE_ENTRIES(up_) }
    }
    table iwa_scale_shr {
        key = { scale : exact @name("scale"); }
        actions = { shr_0; shr_1; shr_2; shr_3; shr_4; shr_5; shr_6; shr_7; shr_8; shr_9; shr_10; shr_11;
                    shr_12; shr_13; shr_14; }
        const default_action = shr_0();
        size = 16;
        const entries = { IWA_SCALE_ENTRIES(shr_) }
    }
    apply {
        iwa_scale_up.apply();
        iwa_scale_shr.apply();
    }
}

/* ---- a flow's share of the path and budget: span >> ceil(log2(nflows)) (iwa_share: the leading one of
 * nflows - 1, constant rows) ---- */
#define IWA_SHARE(K) action share_##K() { share = span >> K; }
control IwaShare(in bit<32> nm1, in bit<32> span, out bit<32> share) {
    action share_0() { share = span; }
    IWA_SHARE(1) IWA_SHARE(2) IWA_SHARE(3) IWA_SHARE(4) IWA_SHARE(5) IWA_SHARE(6) IWA_SHARE(7) IWA_SHARE(8)
    IWA_SHARE(9) IWA_SHARE(10) IWA_SHARE(11) IWA_SHARE(12) IWA_SHARE(13) IWA_SHARE(14) IWA_SHARE(15)
    IWA_SHARE(16) IWA_SHARE(17)
    table iwa_share {
        key = { nm1 : ternary @name("nm1"); }
        actions = { share_0; share_1; share_2; share_3; share_4; share_5; share_6; share_7; share_8; share_9;
                    share_10; share_11; share_12; share_13; share_14; share_15; share_16; share_17; }
        const default_action = share_0();   // 0 or 1 flow
        size = 32;
        const entries = {
            32w0x00010000 &&& 32w0xFFFF0000 : share_17(); 32w0x00008000 &&& 32w0xFFFF8000 : share_16();
            32w0x00004000 &&& 32w0xFFFFC000 : share_15(); 32w0x00002000 &&& 32w0xFFFFE000 : share_14();
            32w0x00001000 &&& 32w0xFFFFF000 : share_13(); 32w0x00000800 &&& 32w0xFFFFF800 : share_12();
            32w0x00000400 &&& 32w0xFFFFFC00 : share_11(); 32w0x00000200 &&& 32w0xFFFFFE00 : share_10();
            32w0x00000100 &&& 32w0xFFFFFF00 : share_9();  32w0x00000080 &&& 32w0xFFFFFF80 : share_8();
            32w0x00000040 &&& 32w0xFFFFFFC0 : share_7();  32w0x00000020 &&& 32w0xFFFFFFE0 : share_6();
            32w0x00000010 &&& 32w0xFFFFFFF0 : share_5();  32w0x00000008 &&& 32w0xFFFFFFF8 : share_4();
            32w0x00000004 &&& 32w0xFFFFFFFC : share_3();  32w0x00000002 &&& 32w0xFFFFFFFE : share_2();
            32w0x00000001 &&& 32w0xFFFFFFFF : share_1();
        }
    }
    apply { iwa_share.apply(); }
}

/* ---- a link's IWA knobs (refmodel/params.py: IwaParams) ---- */
control IwaCfg(inout tna_metadata_t md) {
    // iw_min_bytes: IW_MIN_SEGMENTS full segments, IW_MIN_SEGMENTS * (mss - TCP_OPT_BYTES) (shaper.checkpoint),
    // written by the controller (the product of a run-time value and a constant as shifts and an add is two
    // dependent operations: one action cannot hold them)
    action set_iwa(bit<32> target_ns, bit<32> hold_ns, bit<32> mss, bit<32> iw_min_bytes) {
        md.iwa.cfg.on = 1;
        md.iwa.cfg.target_ns = target_ns;
        md.iwa.cfg.hold_ns = (int<32>)hold_ns;
        md.iwa.cfg.mss = mss;
        md.iwa.cfg.iw_min = iw_min_bytes;
    }
    action iwa_off() {
        md.iwa.cfg.on = 0;
        md.iwa.cfg.target_ns = 5000000;
        md.iwa.cfg.hold_ns = 200000000;
        md.iwa.cfg.mss = 1448;
        md.iwa.cfg.iw_min = IW_MIN_BYTES(32w1448 - TCP_OPT_BYTES);
    }
    table iwa_cfg {
        key = { md.link : exact @name("link"); }
        actions = { set_iwa; iwa_off; }
        default_action = iwa_off();
        size = N_LINKS;
    }
    apply { iwa_cfg.apply(); }
}


/* ---- the client's SYN (iwa_upstream.p4): its window-scale shift from the header the parser named (ws_where),
 * clamped to 14, and the record's low byte; tables, not if-chains on the option headers (bf-p4c 9.13.4 crashed
 * on those: "width_bits() on type with unknown size") ---- */
control IwaSynRecord(in tna_headers_t hdr, inout tna_metadata_t md) {
    bit<8> shift;
    action ws_none() { shift = 0; }
    action ws_b12() { shift = hdr.opt12.b_shift; }
    action ws_c12() { shift = hdr.opt12.c_shift; }
    action ws_e20() { shift = hdr.opt20.e_shift; }
    action ws_b24() { shift = hdr.opt24.b_shift; }
    table ws_pick {
        key = { md.iwa.ws_where : exact @name("ws_where"); }
        actions = { ws_none; ws_b12; ws_c12; ws_e20; ws_b24; }
        const default_action = ws_none();
        size = 8;
        const entries = { 1 : ws_b12(); 2 : ws_c12(); 3 : ws_e20(); 4 : ws_b24(); }
    }
    action low_seen() { md.iwa.syn_low = (bit<8>)SYN_SEEN; }
    action low_ws(bit<8> s) { md.iwa.syn_low = (bit<8>)(SYN_SEEN | SYN_WS) | s; }
    action low_ws_max() { md.iwa.syn_low = (bit<8>)(SYN_SEEN | SYN_WS) | WS_MAX; }
    table ws_low {
        // ws_seen, shift: the clamp (shift > 14 -> 14) as rows
        key = { md.iwa.ws_seen : exact @name("ws_seen"); shift : range @name("shift"); }
        actions = { low_seen; low_ws; low_ws_max; }
        const default_action = low_seen();
        size = 32;
        const entries = {
            (1, 0 .. 0) : low_ws(0); (1, 1 .. 1) : low_ws(1); (1, 2 .. 2) : low_ws(2); (1, 3 .. 3) : low_ws(3);
            (1, 4 .. 4) : low_ws(4); (1, 5 .. 5) : low_ws(5); (1, 6 .. 6) : low_ws(6); (1, 7 .. 7) : low_ws(7);
            (1, 8 .. 8) : low_ws(8); (1, 9 .. 9) : low_ws(9); (1, 10 .. 10) : low_ws(10);
            (1, 11 .. 11) : low_ws(11); (1, 12 .. 12) : low_ws(12); (1, 13 .. 13) : low_ws(13);
            (1, 14 .. 255) : low_ws_max();
        }
    }
    apply {
        ws_pick.apply();
        ws_low.apply();
    }
}

#endif
