/* The configuration tables, keyed by the packet's access link (exact; the
 * link comes from bottleneck.p4's link_of). The controller writes them at run
 * time (P4Runtime), so rate, buffer, AQM and every knob change without
 * recompiling. Their default actions configure every link without an entry
 * of its own: the single-link lab writes only those, as before links existed,
 * and a link with entries (controller/entries.py: link_entries, one in every
 * table) gets its own rate, buffer, AQM and knobs. Until bottleneck_cfg gives
 * a link a configuration (entry or default), that link is "unconfigured" and
 * its frames are forwarded without the model.
 * The AQMs' range tables (aqm_red.p4's red_idle_decay, aqm_codel.p4's
 * codel_control_law) are per link too: a link's own entries match its id at a
 * higher priority than the wildcarded entries of the links without their own.
 * refmodel/params.py mirrors the field widths (FIELD_BITS) and
 * refmodel/pipeline.py the lookup (Pipeline.params_for). */
#ifndef _CONFIG_P4_
#define _CONFIG_P4_

const bit<32> PKT_INSTANCE_TYPE_INGRESS_CLONE = 1;

// r, c, p are inout: only the link's AQM's table writes its knobs (the others keep their zeros).
control BottleneckConfig(in bit<16> link, out queue_cfg_t q, inout red_cfg_t r, inout codel_cfg_t c,
                         inout pie_cfg_t p, out iwa_cfg_t i) {
    action unconfigured() {
        q.configured = 0;
        q.rate_class = 0;
        q.bucket_ns = 0;
        q.limit_ns = 0;
        q.limit_pkts = 0;
        q.mtu_ns = 0;
        q.aqm = AQM_FIFO;
        q.ecn = 0;
        q.telemetry = TELEMETRY_OFF;
    }
    action set_bottleneck(bit<8> rate_class, bit<32> bucket_ns, bit<48> limit_ns, bit<16> limit_pkts,
                          bit<32> mtu_ns, bit<8> aqm, bit<1> ecn, bit<8> telemetry) {
        q.configured = 1;
        q.rate_class = rate_class;
        q.bucket_ns = bucket_ns;
        q.limit_ns = limit_ns;
        q.limit_pkts = limit_pkts;
        q.mtu_ns = mtu_ns;
        q.aqm = aqm;
        q.ecn = ecn;
        q.telemetry = telemetry;
    }
    table bottleneck_cfg {
        key = { link : exact; }
        actions = { unconfigured; set_bottleneck; }
        default_action = unconfigured();
        size = N_LINKS;
    }

    action set_red(bit<32> log_wq, bit<32> thmin_ns, bit<32> thmax_ns, bit<32> log_slope,
                   bit<16> mean_pktsize, bit<32> log_mps) {
        r.log_wq = log_wq;
        r.thmin_ns = thmin_ns;
        r.thmax_ns = thmax_ns;
        r.log_slope = log_slope;
        r.mean_pktsize = mean_pktsize;
        r.log_mps = log_mps;
    }
    table red_cfg {
        key = { link : exact; }
        actions = { set_red; }
        default_action = set_red(0xFFFF708C, 0, 1, 0, 1500, 43216);   // w_q 0.002, mean_pktsize 1500
        size = N_LINKS;
    }

    action set_codel(bit<32> target_ns, bit<32> interval_ns) {
        c.target_ns = target_ns;
        c.interval_ns = interval_ns;
    }
    table codel_cfg {
        key = { link : exact; }
        actions = { set_codel; }
        default_action = set_codel(5000000, 100000000);
        size = N_LINKS;
    }

    // alpha and beta are not here: aqm_pie.p4's pie_alpha_mul and pie_beta_mul hold their products
    action set_pie(bit<32> target_ns, bit<32> tupdate_ns, bit<32> max_burst_ns) {
        p.target_ns = target_ns;
        p.tupdate_ns = tupdate_ns;
        p.max_burst_ns = max_burst_ns;
    }
    table pie_cfg {
        key = { link : exact; }
        actions = { set_pie; }
        default_action = set_pie(15000000, 15000000, 150000000);
        size = N_LINKS;
    }

    // IWA's rate conversions are not here: the rate class's product tables hold them (start_shaper.p4)
    action set_iwa(bit<32> target_ns, bit<16> mss_bytes, bit<32> hold_ns, bit<48> age_ns, bit<32> floor_cap_ns,
                   bit<32> budget_cap_ns) {
        i.target_ns = target_ns;
        i.mss_bytes = mss_bytes;
        i.hold_ns = hold_ns;
        i.age_ns = age_ns;
        i.floor_cap_ns = floor_cap_ns;
        i.budget_cap_ns = budget_cap_ns;
    }
    table iwa_cfg {
        key = { link : exact; }
        actions = { set_iwa; }
        size = N_LINKS;
        // refmodel.params.IwaParams(): a 2 Mbit/s link with 1514 B frames, a 40 ms jitter budget
        default_action = set_iwa(27888000, 1460, 1000000000, 10000000000, 0, 0);
    }

    apply {
        bottleneck_cfg.apply();
        // Only the tables of the link's AQM: BMv2 interprets every table it applies (make bench --work
        // counts them). The others' knobs stay unset, and nothing reads them on this link.
        if (q.aqm == AQM_RED) {
            red_cfg.apply();
        } else if (q.aqm == AQM_PIE) {
            pie_cfg.apply();
        } else if (q.aqm == AQM_CODEL || q.aqm == AQM_IWA) {
            codel_cfg.apply();   // IWA: CoDel decides for its established flows
        }
        iwa_cfg.apply();         // every link: the flow tracker's age_ns
    }
}

#endif
