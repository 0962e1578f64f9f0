/* Types, bridged headers and per-packet metadata of the TNA program.
 * The wire formats (Ethernet, IPv4, TCP, UDP, the telemetry record) and the
 * shared numbers (AQM, decision, reason, class) come from ../include/. */
#ifndef _TNA_TYPES_P4_
#define _TNA_TYPES_P4_

typedef bit<LINK_BITS> link_id_t;

/* Time: the low 32 bits of the 48-bit global timestamp, in ns. All comparisons of
 * times are serial (the sign of a 32-bit difference), valid while two times are less
 * than 2^31 ns (2.1 s) apart; ticks (tick.p4's q_tick) keep every link's state that close. */
typedef int<32> time_t;

/* Mirror and resubmit types. */
const MirrorType_t   MIRROR_TELEMETRY = 1;
const ResubmitType_t RESUBMIT_PASS2   = 1;

/* What the ingress deparser puts in front of a packet for the egress parser. */
const bit<8> BRIDGE_NORMAL    = 0;   // a forwarded packet: egress strips the byte
const bit<8> BRIDGE_TELEMETRY = 1;   // a mirror copy: egress builds the record frame
const bit<8> BRIDGE_IWA       = 2;   // an upstream ACK's first pass: egress works out IWA's grant and
                                     // recirculates it (iwa_types.p4: IWA_GRANT_EGRESS)

header bridge_h {
    bit<8> kind;
}

/* The telemetry mirror header: what ingress knows and the copy does not carry.
 * The 5-tuple and the length come from the copy itself (egress parses it). Tofino 1
 * limits a mirror header to 32 bytes (bf-asm: "mirror digest limited to 32 bytes"):
 * the record's random number stays out (0 in the record). */
header telemetry_mirror_h {
    bit<8>    kind;        // BRIDGE_TELEMETRY
    bit<8>    aqm;
    bit<8>    decision;
    bit<8>    reason;
    bit<8>    cls;
    bit<8>    tflags;
    bit<16>   link;        // the record's link field: the link's low 16 bits
    bit<32>   seq;
    bit<32>   ts_ns;       // low 32 bits of the global timestamp
    bit<32>   sojourn_ns;
    bit<32>   backlog_ns;
    bit<32>   s1;
    bit<32>   s2;
}

/* A packet's second pass (resubmission: 64 bits, 96 with RED (Tofino 2); queue.p4 and codel.p4 say
 * why). op is a set of flags: what the second pass does to the queue and to CoDel. */
const bit<8> PASS2_ADD         = 1;    // the link was idle: add the frame's time, forward it
const bit<8> PASS2_REFUND      = 2;    // dropped after the queue committed it: take its time back
const bit<8> PASS2_MARK        = 4;    // an ECN mark instead of a drop: set CE, forward it
const bit<8> PASS2_CODEL_STEP  = 8;    // CoDel dropped while dropping: drop_next += law(count)
const bit<8> PASS2_CODEL_ENTER = 16;   // CoDel's entry drop: drop_next = t + law(count), count
const bit<8> PASS2_PIE         = 32;   // a PIE tick's update: p (base, before the decay) and flags (count)
header pass2_h {
    bit<8>  op;
    bit<8>  reason;
    bit<16> count;               // CoDel's count (saturated): the control law's key; PIE's flags
    bit<32> base;                // the backlog the first pass saw (the second pass's sojourn, the record);
                                 // PIE's new p
#if WITH_RED || WITH_IWA
    bit<32> step;                // RED's step of the average (red.p4); count holds RED's flags
#endif
}

/* The tick: a packet-generator packet refreshes one link's state (bottleneck_tna.p4).
 * It arrives on the generator's port of its pipe: port 68 of each pipe's 128 on Tofino 1
 * and port 6 on Tofino 2, as the SDE's packet-generator examples use them (not checked on
 * hardware here; -DTICK_PORT=N overrides). A compile-time constant, not a parser value
 * set: bf-p4c makes a value set a Tofino extern that plain P4Runtime cannot write. */
#ifndef TICK_PORT
#if __TARGET_TOFINO__ == 2
#define TICK_PORT 6
#else
#define TICK_PORT 68
#endif
#endif
/* Tofino 1's layout of the generator's header (tofino1_base.p4: pktgen_timer_header_t). Tofino 2's first byte is
 * split 2, 2, 4 (tofino2_base.p4), so there pipe_id and app_id read wrong; the program reads packet_id only. */
header tick_h {
    @padding bit<3> _pad1;
    bit<2>  pipe_id;
    bit<3>  app_id;
    @padding bit<8> _pad2;
    bit<16> batch_id;
    bit<16> packet_id;           // the link, for batch 0
}

#if WITH_IWA
#include "iwa_types.p4"
#endif

/* Ingress and egress see different headers: only egress builds the record. */
struct tna_headers_t {
    bridge_h   bridge;
    tick_h     tick;
    ethernet_t ethernet;
    ipv4_t     ipv4;
    tcp_t      tcp;
#if WITH_IWA
    tcp_opt12_h opt12;           // a SYN's options in the layouts iwa.p4's parser knows
    tcp_opt20_h opt20;
    tcp_opt24_h opt24;
#if IWA_GRANT_EGRESS
    iwa_bridge_h iwa_b;          // pass 1 to egress (the ingress deparser emits it after bridge)
    iwa_recirc_h iwa_rc;         // a recirculated ACK's mark and port (parsed, never emitted)
#endif
#endif
    udp_t      udp;
}

struct tna_egress_headers_t {
    bridge_h           bridge;
#if WITH_IWA && IWA_GRANT_EGRESS
    iwa_bridge_h       iwa_b;
    iwa_recirc_out_h   iwa_r;
#endif
    telemetry_mirror_h tmirror;
    ethernet_t         ethernet;
    telemetry_t        telemetry;
    ipv4_t             ipv4;
    tcp_t              tcp;
    udp_t              udp;
}

/* A link's configuration (link.p4's link_cfg) */
struct link_cfg_t {
    bit<1>  configured;
    bit<8>  aqm;
    bit<1>  ecn;
    bit<1>  telemetry;
    bit<8>  rate_class;          // selects the transmit-time tables' entries (from link_of)
    bit<32> bucket_ns;           // the access shaper's bucket, as time
    bit<32> limit_ns;            // bfifo: the buffer, as time (no limit: 2^31 - 1)
    bit<32> mtu_ns;
}

/* CoDel's knobs as codel.p4 uses them (refmodel/tofino_codel.py: codel_knobs). */
struct codel_cfg_t {
    int<32> below_busy;          // target + bucket - 1 (ns): below target while busy <= this
    int<32> fa_offset;           // interval (16 ns units): first_above = t + interval
    int<32> recent_offset;       // -16 intervals (16 ns units): "recent" looks back to t - 16 intervals
    bit<8>  law;                 // the control law's profile: links of one interval share it
}

/* The control law's table (codel.p4): CODEL_LAWS profiles of CODEL_LAW_ENTRIES count ranges. */
#define CODEL_LAWS 16
#define CODEL_LAW_ENTRIES 256

/* PIE's knobs as pie.p4 uses them (refmodel/tofino_pie.py: pie_knobs), ns */
struct pie_cfg_t {
    int<32> target;
    int<32> half;                // target / 2: the low-delay rule's bound
    int<32> tupdate;
    bit<32> max_burst;
    int<32> mtu2;                // two frames: a shorter queue never drops
    bit<8>  profile;             // the term tables' rows: links of one alpha and beta share them
}

/* The term tables (pie.p4): PIE_PROFILES profiles of PIE_TERM_ENTRIES rows (sign, exponent, mantissa). */
#define PIE_PROFILES 8
#define PIE_TERM_ENTRIES 5504
#define PIE_SCALE_ROWS 160         /* pie_scale: p's seven ranges as ternary prefixes (131) */

/* RED's knobs as red.p4 uses them (refmodel/tofino_red.py: RedParams and TnaRedKnobs) */
struct red_cfg_t {
    bit<32> thmin;               // ns of drain time
    bit<32> thmax;
    bit<32> mps;                 // mean_pktsize (bytes)
    int<32> log_wq;              // every log in Q12 (../include/logexp.p4)
    int<32> log_slope;           // log2 p_b = Log2(avg - thmin) + log_slope
    int<32> cp_offset;           // -log2 mps: Log2(count1) = Log2(count_bytes + mps) + cp_offset
    int<32> gate_offset;         // 16 - log2 mps: the gate's constant part
    int<32> log_halvings;        // the idle decay's halvings (Q12) = Exp2(Log2(idle) + log_halvings) ...
    int<32> idle_min;            // ... once idle >= idle_min ns
}

/* RED's words (red.p4). Each Log2 has x (its input), m (the leading-one table's shift of x) and l (x's
 * place in Q12 plus the constant added to the log, then the log: Exp2's key l >> 2 in place). */
#define RED_LOG_FIELDS(N) bit<32> x_##N; bit<32> m_##N; int<32> l_##N;
struct red_md_t {
    red_cfg_t cfg;
    /* Each pass's words fall into ALU-connected groups of a few fields: every field an operation touches
     * joins its sources' group, and a group must fit one group of PHV containers (docs/tofino.md); the
     * hash unit's copies (@in_hash) join nothing. */
    bit<32>   avg;               // red_avg as the first pass read it
    bit<32>   avg_d;             //   its copies for the idle decay's step (and x_avg, its log's)
    bit<32>   gate;              // red_gate as the first pass read it
    time_t    before;            // the link's tat before this packet (q_admit's second output)
    time_t    now;               // copies of the clock and of the queue's backlog
    bit<32>   backlog;
    bit<32>   backlog2;
    bit<8>    old;
    bit<1>    above;             // the test applies: avg >= th_min and something is queued ahead
    bit<1>    forced;
    bit<32>   no_decay;          // idle - idle_min, its sign, | backlog: 0 when the average decays
    bit<32>   flags;             // RED_P2_*: what the second pass does
    bit<32>   flags_b;           //   RED_P2_DOWN when the EWMA's step lowers the average
    bit<32>   step_d;            //   the idle decay's
    int<32>   up;                // backlog - avg (x_diff: avg - backlog, then |backlog - avg|)
    bit<32>   y_step;            // Exp2's results: the EWMA's step,
    bit<32>   y_half;            //   the idle decay's halvings (Q12),
    int<32>   lw;                // Log2(avg) + log2 w_q, less the halvings, >> 2
    bit<32>   y_dec;             //   the decayed average (then less its step),
    bit<32>   y_dstep;           //   its step
    int<32>   d;                 // Log2(u) - Log2(size), gate - that, its sign (0: a drop)
    bit<32>   avg2;              // red_avg as the second pass left it
    bit<32>   cb;                // count_bytes as the second pass left it
    bit<32>   below_w;           // th_min |-| avg: not 0 below th_min
    bit<32>   over_w;            // th_max |-| avg: 0 when forced
    bit<32>   cp;                // Log2 (count1 p_b), two's complement (red_mode's ternary key)
    bit<32>   cp4;               // cp >> 2: red_rest's key
    int<32>   t1;                // Log2 p_b + gate_offset
    int<32>   rest;              // Log2 (1 - count1 p_b)
    bit<32>   gate2;             // the gate the second pass works out
    RED_LOG_FIELDS(u)            // the first pass: Log2 of u, of the frame's length,
    RED_LOG_FIELDS(len)
    RED_LOG_FIELDS(avg)          //   of the average (the idle decay),
    RED_LOG_FIELDS(idle)         //   of the idle time,
    RED_LOG_FIELDS(diff)         //   of |backlog - avg| (the EWMA's step)
    RED_LOG_FIELDS(ex)           // the second pass: Log2 of avg - th_min,
    RED_LOG_FIELDS(cnt)          //   of count_bytes + mps
}

struct tna_metadata_t {
    bit<1>     downstream;
    bit<1>     tick;
    bit<1>     second;           // this is a packet's second pass (pass2 holds what its first left)
    link_id_t  link;
    link_cfg_t cfg;
    codel_cfg_t codel;
    bit<16>    length;           // Ethernet frame: 14 + IPv4 total length
    bit<8>     cls;
    bit<8>     decision;
    bit<8>     reason;
    bit<32>    rand;
    /* the queue model (queue.p4) */
    time_t     now;
    time_t     now_c;            // the clock in CoDel's 16 ns units (codel.p4)
    bit<32>    tx_ns;
    time_t     tat;              // the link's tat after admitting this packet (queue.p4)
    bit<32>    backlog_ns;
    bit<32>    sojourn_ns;
    int<32>    q_short;          // how much the buffer lacks for the frame (0: it fits; queue.p4)
    /* CoDel (codel.p4): the words its registers read, and what they return */
    time_t     codel_a;
    bit<32>    codel_b;
    time_t     codel_tfa;
    int<32>    codel_over;       // busy beyond CoDel's below-target bound (0: below)
    bit<1>     codel_ok;
    bit<8>     codel_was;
    bit<32>    codel_r;
    bit<32>    codel_lc;
    /* PIE (pie.p4): the words its registers read, and what they return */
    pie_cfg_t  pie;
    bit<32>    pie_p;            // p (Q31) as the tick's first pass read it
    bit<32>    pie_q;            // qdelay (ns): what q_tick returns
    bit<32>    pie_old;          // the previous update's qdelay
    bit<32>    pie_wg;           // the second pass: the gate it writes (or PIE_GATE_OPEN: p)
    bit<32>    pie_gate;         // what a data packet read: the probability its draw is tested against
#if WITH_RED
    red_md_t   red;
#endif
#if WITH_IWA
    iwa_md_t   iwa;
    iwa_pass2_t iwa2;            // an upstream ACK's second pass (iwa.p4): the same 96 bits as pass2
#endif
    /* the record's AQM state (telemetry.p4) */
    bit<32>    s1;
    bit<32>    s2;
    pass2_h    pass2;
    telemetry_mirror_h tmirror;  // what the telemetry mirror copy carries (telemetry.p4)
    MirrorId_t mirror_session;
}

struct tna_egress_metadata_t {
#if WITH_IWA && IWA_GRANT_EGRESS
    link_cfg_t cfg;              // its rate_class: the grant's products
    iwa_md_t   iwa;              // the grant's words, as in ingress (iwa_grant.p4 is the same file)
#endif
}

#endif
