/* The access bottleneck on Tofino 1 (tna) and Tofino 2 (t2na): many access links
 * in one pipe, each a byte-accurate phantom queue (docs/tofino-design.md).
 *
 * Where a packet goes (one ingress pass; a second pass when its link was idle or it is dropped):
 *   TnaIngressParser        parser.p4: second-pass header or port metadata; a tick, or
 *                           Ethernet / IPv4 / TCP / UDP
 *   TnaIngress
 *     tick                  a packet-generator packet refreshes its link's queue and ends
 *     LinkMap               link.p4: which port; which link (the client's address); the
 *                           link's knobs; the frame's transmit time (two tables, no product)
 *   upstream (client -> server): never queued; forwarded
 *   downstream (server -> client): through the link's modelled queue
 *     PHANTOM_QUEUE         queue.p4: q_admit commits the frame and returns tat'
 *     QueuePredictTna       queue.p4: backlog, sojourn, over the buffer? the decision
 *     AQM                   bfifo (the buffer) today; the other AQMs follow (docs/tofino.md)
 *     second pass           resubmitted when the link was idle (q_add adds the frame's
 *                           time) or the frame is dropped (q_refund takes it back)
 *   counters; TelemetryMirror (telemetry.p4: mirror header, I2E mirror to the monitor)
 *   TnaIngressDeparser      parser.p4
 *   TnaEgressParser         a mirror copy or a forwarded packet (the bridge byte says)
 *   TnaEgress               telemetry.p4's TelemetryRecord builds the 0x88B5 record frame
 *   TnaEgressDeparser
 *
 * As on BMv2, the modelled queue adds no delay itself: the access network does the
 * waiting, and the switch forwards at line rate. Shared with the v1model program:
 * ../include/constants.p4 (every number) and ../include/wire.p4 (the wire formats). */
/* Access links per pipe: a compile-time constant, defined before the shared constants
 * (whose N_LINKS is BMv2's). Every per-link register has N_LINKS cells; a link's knobs are
 * table entries. docs/tofino.md says how many fit (-DN_LINKS=2^k -DLINK_BITS=k). */
#ifndef N_LINKS
#define N_LINKS 16384
#endif
#ifndef LINK_BITS
#define LINK_BITS 16
#endif

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../include/constants.p4"
#include "../include/wire.p4"
#include "types.p4"
#include "parser.p4"
#include "link.p4"
#include "queue.p4"
#include "telemetry.p4"

control TnaIngress(inout tna_headers_t hdr, inout tna_metadata_t md,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    LinkMap() links;
    PHANTOM_QUEUE(md)
    QueuePredictTna() predict;
    TelemetryMirror() telemetry;
    Random<bit<32>>() rng;

    // class x decision, over all links (as the v1model program's class_decision) ...
    Counter<bit<64>, bit<6>>(COUNTER_SLOTS, CounterType_t.PACKETS_AND_BYTES) class_decision;
    // ... and each link's drops. (Every decision per link, N_LINKS x 4 counters, filled the stage
    // that holds them at 2^15 links: docs/tofino.md.)
    Counter<bit<32>, link_id_t>(N_LINKS, CounterType_t.PACKETS_AND_BYTES) link_drops;

    // A TCP segment carries data when the IPv4 total length exceeds the IPv4 and TCP headers
    // (20 + 4 * data offset): one range lookup, one stage, instead of a subtraction chain.
    action set_class(bit<8> cls) { md.cls = cls; }
    table tcp_class {
        key = {
            hdr.tcp.dataOffset : exact @name("data_offset");
            hdr.ipv4.totalLen  : range @name("total_len");
        }
        actions = { set_class; }
        default_action = set_class(CLASS_TCP_CTRL);
        size = 16;
        const entries = {
            (5, 41 .. 65535) : set_class(CLASS_TCP_EST);
            (6, 45 .. 65535) : set_class(CLASS_TCP_EST);
            (7, 49 .. 65535) : set_class(CLASS_TCP_EST);
            (8, 53 .. 65535) : set_class(CLASS_TCP_EST);
            (9, 57 .. 65535) : set_class(CLASS_TCP_EST);
            (10, 61 .. 65535) : set_class(CLASS_TCP_EST);
            (11, 65 .. 65535) : set_class(CLASS_TCP_EST);
            (12, 69 .. 65535) : set_class(CLASS_TCP_EST);
            (13, 73 .. 65535) : set_class(CLASS_TCP_EST);
            (14, 77 .. 65535) : set_class(CLASS_TCP_EST);
            (15, 81 .. 65535) : set_class(CLASS_TCP_EST);
        }
    }

    apply {
        // through the hash unit: a plain move would tie the 48-bit intrinsic field's layout to
        // every field the queue's arithmetic touches, which PHV allocation cannot satisfy
        @in_hash { md.now = (time_t)ig_prsr_md.global_tstamp[31:0]; }
        md.length = 0;
        md.cls = CLASS_OTHER;
        md.decision = DECISION_BYPASS;
        md.reason = REASON_NONE;
        md.s1 = 0;
        md.s2 = 0;
        md.backlog_ns = 0;
        md.sojourn_ns = 0;
        md.tx_ns = 0;

        if (md.tick == 1) {
            md.link = (link_id_t)hdr.tick.packet_id;
            q_tick.execute(md.link);
            ig_dprsr_md.drop_ctl = 1;
            exit;
        }

        links.apply(hdr, ig_intr_md.ingress_port, md, ig_tm_md);
        hdr.bridge.setValid();
        hdr.bridge.kind = BRIDGE_NORMAL;

        if (md.downstream == 1 && md.cfg.configured == 1 && hdr.ipv4.isValid()) {
            if (md.second == 1) {
                // second pass (queue.p4): add the idle link's frame, or refund a drop
                if (md.pass2.op == PASS2_ADD) {
                    q_add.execute(md.link);
                } else {
                    q_refund.execute(md.link);
                }
                md.backlog_ns = md.pass2.base;
            } else {
                md.rand = rng.get();
                md.tat = q_admit.execute(md.link);
            }
            predict.apply(md, ig_dprsr_md);   // the buffer: tail drop; a second pass where needed
            if (md.second == 0 && md.decision == DECISION_DROP) {
                link_drops.count(md.link);   // once per packet: in its first pass
            }
        }
        if (hdr.udp.isValid()) {
            md.cls = CLASS_UDP;
        } else if (hdr.tcp.isValid()) {
            tcp_class.apply();
        }
        if (md.second == 0) {
            class_decision.count(md.cls[3:0] ++ md.decision[1:0]);
        }
        // the record, from the pass that ends the packet's way through the switch
        if (md.decision != DECISION_BYPASS && md.cfg.telemetry == 1 && ig_dprsr_md.resubmit_type == 0) {
            telemetry.apply(md, ig_dprsr_md);
        }
    }
}

control TnaEgress(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t md,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    TelemetryRecord() record;
    apply {
        if (hdr.tmirror.isValid()) {
            record.apply(hdr);
        }
    }
}

Pipeline(TnaIngressParser(), TnaIngress(), TnaIngressDeparser(),
         TnaEgressParser(), TnaEgress(), TnaEgressDeparser()) pipe;

Switch(pipe) main;
