/* Which access link a packet belongs to, that link's knobs, and how long the link
 * takes to send the packet. Everything here is a table the controller writes:
 * a link's rate, buffer and AQM change without recompiling, and no per-link
 * value lives in a register. */
#ifndef _TNA_LINK_P4_
#define _TNA_LINK_P4_

#define LINKS_TABLE_SIZE N_LINKS

control LinkMap(in tna_headers_t hdr, in PortId_t ingress_port, inout tna_metadata_t md,
                inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    action route(PortId_t port, bit<1> downstream) {
        ig_tm_md.ucast_egress_port = port;
        md.downstream = downstream;
    }
    action unrouted() {
        md.downstream = 0;
    }
    table forward {
        key = { ingress_port : exact @name("ingress_port"); }
        actions = { route; unrouted; }
        default_action = unrouted();
        size = 64;
    }

    // The subscriber behind an access link, by the downstream packet's destination. It also
    // gives the link's rate class: the transmit-time tables then follow in the next stage
    // rather than two stages later (each dependent table is a stage, and there are 12).
    action set_link(link_id_t link, bit<8> rate_class) {
        md.link = link;
        md.cfg.rate_class = rate_class;
    }
    table link_of {
        key = { hdr.ipv4.dstAddr : exact @name("client"); }
        actions = { set_link; }
        default_action = set_link(0, 0);
        size = LINKS_TABLE_SIZE;
    }

#if WITH_IWA
    // IWA's upstream packets: the client is the source (its ACKs are shaped by its own link's room)
    table link_of_up {
        key = { hdr.ipv4.srcAddr : exact @name("client"); }
        actions = { set_link; }
        default_action = set_link(0, 0);
        size = LINKS_TABLE_SIZE;
    }
#endif

    action unconfigured() {
        md.cfg.configured = 0;
        md.cfg.aqm = AQM_FIFO;
        md.cfg.ecn = 0;
        md.cfg.telemetry = 0;
        md.cfg.bucket_ns = 0;
        md.cfg.limit_ns = 0;
        md.cfg.mtu_ns = 0;
    }
    action set_link_cfg(bit<8> aqm, bit<1> ecn, bit<1> telemetry, bit<32> bucket_ns, bit<32> limit_ns,
                        bit<32> mtu_ns) {
        md.cfg.configured = 1;
        md.cfg.aqm = aqm;
        md.cfg.ecn = ecn;
        md.cfg.telemetry = telemetry;
        md.cfg.bucket_ns = bucket_ns;
        md.cfg.limit_ns = limit_ns;
        md.cfg.mtu_ns = mtu_ns;
    }
    table link_cfg {
        key = { md.link : exact @name("link"); }
        actions = { set_link_cfg; unconfigured; }
        default_action = unconfigured();
        size = LINKS_TABLE_SIZE;
    }

#if WITH_CODEL
    // (offsets in two's complement: the controller's values are signed)
    action set_codel(bit<32> below_busy, bit<32> fa_offset, bit<32> recent_offset, bit<8> law) {
        md.codel.below_busy = (int<32>)below_busy;
        md.codel.fa_offset = (int<32>)fa_offset;
        md.codel.recent_offset = (int<32>)recent_offset;
        md.codel.law = law;
    }
    // CoDel's knobs (types.p4: codel_cfg_t); the default is RFC 8289's (target 5 ms, interval
    // 100 ms) with no bucket, law profile 0
    table codel_cfg {
        key = { md.link : exact @name("link"); }
        actions = { set_codel; }
        default_action = set_codel(4999999, 6250000, 4194967296, 0);   // 100 ms, 2^32 - 1.6 s (16 ns units)
        size = LINKS_TABLE_SIZE;
    }
#endif
#if WITH_PIE
    action set_pie(bit<32> target, bit<32> half, bit<32> tupdate, bit<32> max_burst, bit<32> mtu2,
                   bit<8> profile) {
        md.pie.target = (int<32>)target;
        md.pie.half = (int<32>)half;
        md.pie.tupdate = (int<32>)tupdate;
        md.pie.max_burst = max_burst;
        md.pie.mtu2 = (int<32>)mtu2;
        md.pie.profile = profile;
    }
    // PIE's knobs (types.p4: pie_cfg_t); the default is RFC 8033's (target 15 ms, tupdate 15 ms, max_burst
    // 150 ms) with 1514 B frames at 2 Mbit/s, term profile 0
    table pie_cfg {
        key = { md.link : exact @name("link"); }
        actions = { set_pie; }
        default_action = set_pie(15000000, 7500000, 15000000, 150000000, 12112000, 0);
        size = LINKS_TABLE_SIZE;
    }
#endif

#if WITH_RED
    action set_red(bit<32> thmin, bit<32> thmax, bit<32> mps, bit<32> log_wq, bit<32> log_slope, bit<32> cp_offset,
                   bit<32> gate_offset, bit<32> log_halvings, bit<32> idle_min) {
        md.red.cfg.thmin = thmin;
        md.red.cfg.thmax = thmax;
        md.red.cfg.mps = mps;
        md.red.cfg.log_wq = (int<32>)log_wq;
        md.red.cfg.log_slope = (int<32>)log_slope;
        md.red.cfg.cp_offset = (int<32>)cp_offset;
        md.red.cfg.gate_offset = (int<32>)gate_offset;
        md.red.cfg.log_halvings = (int<32>)log_halvings;
        md.red.cfg.idle_min = (int<32>)idle_min;
    }
    // RED's knobs (types.p4: red_cfg_t; refmodel/tofino_red.py: tna_red_config); no default: a RED link
    // without its entry is the controller's error, refused before it is written
    table red_cfg {
        key = { md.link : exact @name("link"); }
        actions = { set_red; }
        size = LINKS_TABLE_SIZE;
    }
#endif

    /* The transmit time len * byte_time without a multiplication: len = 64 * hi + lo,
     * and two tables per rate class hold hi's and lo's share, each floored
     * (refmodel/params.py: tx_split_tables). The sum is at most 1 ns below the
     * single floor of len * byte_time. */
    action set_tx_hi(bit<32> ns) { md.tx_ns = ns; }
    action add_tx_lo(bit<32> ns) { md.tx_ns = md.tx_ns + ns; }
    table tx_time_hi {
        key = { md.cfg.rate_class : exact @name("rate_class"); md.length[15:6] : exact @name("len_hi"); }
        actions = { set_tx_hi; }
        default_action = set_tx_hi(0);
        size = RATE_CLASSES * TX_HI_ENTRIES;   // every length up to TX_MAX_FRAME, for every class
    }
    table tx_time_lo {
        key = { md.cfg.rate_class : exact @name("rate_class"); md.length[5:0] : exact @name("len_lo"); }
        actions = { add_tx_lo; }
        default_action = add_tx_lo(0);
        size = RATE_CLASSES * (1 << TX_LO_BITS);
    }

    apply {
        forward.apply();
        if (hdr.ipv4.isValid()) {
            md.length = hdr.ipv4.totalLen + 14;
#if WITH_IWA
            if (md.downstream == 1) {
                link_of.apply();
            } else {
                link_of_up.apply();
            }
#else
            link_of.apply();
#endif
        }
        link_cfg.apply();
#if WITH_CODEL
        codel_cfg.apply();
#endif
#if WITH_PIE
        pie_cfg.apply();
#endif
#if WITH_RED
        red_cfg.apply();
#endif
        tx_time_hi.apply();
        tx_time_lo.apply();
    }
}

#endif
