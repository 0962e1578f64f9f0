/* The v1model program's headers (the wire formats are in wire.p4) and the metadata that
 * carries one packet through the pipeline. */
#ifndef _HEADERS_P4_
#define _HEADERS_P4_

#include "wire.p4"

struct headers_t {
    ethernet_t     ethernet;
    telemetry_t    telemetry;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    ipv6_t         ipv6;
    tcp_t          tcp;
    tcp_opt_t[TCP_OPT_BYTES] tcp_opts;
    udp_t          udp;
}

/* Configuration read from the config tables (all written at run time). */
struct queue_cfg_t {
    bit<1>  configured;
    bit<8>  rate_class;     // its transmit-time tables (queue_model.p4)
    bit<32> bucket_ns;
    bit<48> limit_ns;
    bit<16> limit_pkts;
    bit<32> mtu_ns;
    bit<8>  aqm;
    bit<1>  ecn;
    bit<8>  telemetry;   // TELEMETRY_OFF, _ALL or _DATAGRAMS: which packets this link reports
}

struct red_cfg_t {
    bit<32> log_wq;        // log2(w_q) in Q12, two's complement (as every log_ field)
    bit<32> thmin_ns;
    bit<32> thmax_ns;
    bit<32> log_slope;     // log2(max_p * 2^32 / (th_max - th_min)): log2(p_b) = Log2(avg - th_min) + log_slope
    bit<16> mean_pktsize;
    bit<32> log_mps;       // log2(mean_pktsize)
}

struct codel_cfg_t {
    bit<32> target_ns;
    bit<32> interval_ns;
}

struct pie_cfg_t {
    bit<32> target_ns;
    bit<32> tupdate_ns;
    bit<32> max_burst_ns;
}

struct iwa_cfg_t {
    bit<32> target_ns;         // queue room for starting flows
    bit<16> mss_bytes;         // the smallest window IWA advertises
    bit<32> hold_ns;           // the reserve is forgotten this long after the last SYN-ACK
    bit<48> age_ns;            // a new flow may take a slot this long after its flow's latest downstream data
    bit<32> floor_cap_ns;      // the most queue a window at its floor may join (the floors' share of the buffer)
    bit<32> budget_cap_ns;     // the most queue a full-size frame of new data may leave (a changing rate); 0: none
}

/* The queue model's prediction for this packet (queue_model.p4). */
struct prediction_t {
    bit<64> now;
    bit<64> length;
    bit<64> tat;
    bit<64> tat_new;
    bit<64> backlog_ns;
    bit<64> sojourn_ns;
    bit<64> release_ns;
    bool    over_limit;
}

/* What an AQM says (aqm_*.p4). */
struct verdict_t {
    bool    drop;
    bool    early;    // a congestion signal (may become an ECN mark)
    bit<8>  reason;
    bit<64> s1;
    bit<64> s2;
}

/* The flow tracker's view of this packet (flow_tracker.p4, refined by start_shaper.p4). */
struct track_t {
    bit<8>  cls;
    bit<8>  flags;
    bit<32> progress;
    bit<32> slot;
    bit<32> payload;   // TCP payload of a tracked data segment
    bit<32> hash;      // crc32 of (server, client, server port, client port, proto)
    bool    tracked;   // the slot holds this flow (live)
    bit<32> isn;       // its first sequence number of data
    bit<64> age;       // time since its SYN-ACK
    bit<32> seqhi;     // the highest sequence number its server sent (before this segment)
}

/* What the start shaper did with an upstream ACK (start_shaper.p4). */
struct grant_t {
    bool    tracked;
    bool    syn;       // a client's SYN (remembered for its scale and time)
    bit<8>  flags;
    bool    rewrite;   // the window field is to be replaced by `window`
    bit<16> window;
    bit<32> edge;      // the right edge the server now has
    bit<32> advance;   // bytes it may send beyond the edge it had
    bit<32> room_ns;   // the queue room the grant was sized from
}

struct metadata_t {
    bit<1>       downstream;
    bit<16>      link;          // the access link (link_of): index of every per-link register and config key
    bit<8>       unheld_shift;  // IWA: what no window holds gets 1/2^shift of the link (start_shaper.p4)
    bit<8>       opt_left;      // parser: TCP option bytes still to walk
    bit<8>       opt_skip;      // parser: bytes left of the current option
    bit<8>       ws_shift;      // a SYN's window-scale shift ...
    bool         ws_seen;       // ... when it carried the option
    grant_t      grant;
    bit<16>      tcp_payload;
    bool         tcp_ok;        // TCP header parsed and lengths consistent
    queue_cfg_t  qcfg;
    red_cfg_t    red;
    codel_cfg_t  codel;
    pie_cfg_t    pie;
    iwa_cfg_t    iwa;
    prediction_t pred;
    verdict_t    verdict;
    track_t      track;
    bit<8>       decision;
    bit<32>      rand;
    /* Kept on the telemetry clone (clone_preserving_field_list). */
    @field_list(FL_TELEMETRY) bit<8>  t_aqm;
    @field_list(FL_TELEMETRY) bit<8>  t_decision;
    @field_list(FL_TELEMETRY) bit<8>  t_reason;
    @field_list(FL_TELEMETRY) bit<8>  t_cls;
    @field_list(FL_TELEMETRY) bit<8>  t_tflags;
    @field_list(FL_TELEMETRY) bit<16> t_length;
    @field_list(FL_TELEMETRY) bit<32> t_seq;
    @field_list(FL_TELEMETRY) bit<32> t_rand;
    @field_list(FL_TELEMETRY) bit<64> t_ts_ns;
    @field_list(FL_TELEMETRY) bit<32> t_sojourn_ns;
    @field_list(FL_TELEMETRY) bit<32> t_backlog_ns;
    @field_list(FL_TELEMETRY) bit<32> t_src;
    @field_list(FL_TELEMETRY) bit<32> t_dst;
    @field_list(FL_TELEMETRY) bit<16> t_sport;
    @field_list(FL_TELEMETRY) bit<16> t_dport;
    @field_list(FL_TELEMETRY) bit<8>  t_proto;
    @field_list(FL_TELEMETRY) bit<8>  t_ipver;
    @field_list(FL_TELEMETRY) bit<16> t_link;
    @field_list(FL_TELEMETRY) bit<64> t_s1;
    @field_list(FL_TELEMETRY) bit<64> t_s2;
}

#endif
