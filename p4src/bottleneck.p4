/* The access bottleneck: a byte-accurate queue model with selectable AQMs,
 * for up to N_LINKS access links at once (include/constants.p4).
 *
 * Where a packet goes (v1model, BMv2 simple_switch_grpc):
 *   BottleneckParser        include/parser.p4 (a SYN's TCP options: the window scale)
 *   BottleneckIngress
 *     forward               which port, and is it the bottleneck direction?
 *     link_of, link_of6     which access link: the client's IPv4 address, or its IPv6 address's
 *                           longest prefix (downstream the destination, upstream the source);
 *                           no entry: link 0
 *     BottleneckConfig      include/config.p4: the link's rate, buffer, AQM and its knobs
 *     FlowTracker           include/flow_tracker.p4: which connection, new data or retransmission
 *     StartShaper           include/start_shaper.p4: each flow's window and start phase; IWA's room
 *   upstream (client -> server): never queued or delayed
 *     TcpWindowRewrite      include/tcp_window.p4: IWA clamps a starting flow's window
 *   downstream (server -> client): through the modelled access link
 *     QueuePredict          include/queue_model.p4: backlog, sojourn, limit
 *     Aqm*                  include/aqm_*.p4: the selected AQM decides (IWA: CoDel for all it does not hold)
 *     commit                admit: the modelled link is busy for this frame
 *     EcnMark / drop        include/ecn.p4
 *   counters, TelemetryReport (include/telemetry.p4: clone to the monitor port)
 *   BottleneckEgress        telemetry clones become 0x88B5 record frames
 *   BottleneckDeparser
 *
 * Every link has its own state: the queue model's registers here and every
 * AQM's (RED, CoDel, PIE, IWA's per-link room in start_shaper.p4) hold one
 * cell per link (the packet-limit ring RING_SIZE cells per link), indexed by
 * meta.link. The flow tracker's and start shaper's per-flow slots are shared
 * by all links (a slot is a flow's). The config tables are keyed by the link;
 * their default actions configure every link without entries of its own, so
 * with no link_of entries everything is link 0: the single-link program.
 *
 * The modelled queue adds no delay itself: a Linux tbf shaper at the same rate
 * on the bottleneck port does the waiting, and BMv2's own queue must be fast
 * and deep. The packet's predicted sojourn is what it really waits there.
 * refmodel/ is the executable twin of this program. */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/config.p4"
#include "include/checksum.p4"
#include "include/mantissa.p4"
#include "include/queue_model.p4"
#include "include/flow_tracker.p4"
#include "include/start_shaper.p4"
#include "include/tcp_window.p4"
#include "include/aqm_fifo.p4"
#include "include/aqm_red.p4"
#include "include/aqm_codel.p4"
#include "include/aqm_pie.p4"
#include "include/aqm_iwa.p4"
#include "include/ecn.p4"
#include "include/telemetry.p4"

control BottleneckVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control BottleneckIngress(inout headers_t hdr, inout metadata_t meta,
                          inout standard_metadata_t standard_metadata) {
    // Queue state per link: read before, written after the AQM's decision (upstream packets only read tat).
    register<bit<64>>(N_LINKS) queue_tat;
    register<bit<64>>(N_LINKS * RING_SIZE) queue_ring;   // release times of admitted packets, RING_SIZE per link
    register<bit<32>>(N_LINKS) queue_seq;                // admitted packets so far

    counter(COUNTER_SLOTS, CounterType.packets_and_bytes) class_decision;   // all links: class * 4 + decision
    // per link: link * COUNTER_SLOTS + class * 4 + decision
    counter(N_LINKS * COUNTER_SLOTS, CounterType.packets_and_bytes) link_class_decision;

    BottleneckConfig() config;
    FlowTracker() tracker;
    StartShaper() shaper;
    TcpWindowRewrite() window_rewrite;
    QueuePredict() predict;
    AqmFifo() fifo;
    AqmRed() red;
    AqmCodel() codel;
    AqmPie() pie;
    AqmIwa() iwa;
    EcnMark() ecn_mark;
    TelemetryReport() report;

    action drop() { mark_to_drop(standard_metadata); }
    action route(bit<9> port, bit<1> downstream) {
        standard_metadata.egress_spec = port;
        meta.downstream = downstream;
    }
    table forward {
        key = { standard_metadata.ingress_port : exact; }
        actions = { route; drop; }
        default_action = drop();
        size = 16;
    }

    // The access link of the packet's client. The controller refuses ids of N_LINKS and above; the mask
    // keeps a stray one inside the registers.
    bit<32> client_addr = 0;
    action set_link(bit<16> link) { meta.link = link & (bit<16>)(N_LINKS - 1); }
    table link_of {
        key = { client_addr : exact; }
        actions = { set_link; }
        default_action = set_link(0);
        size = LINK_CLIENTS;
    }
    // IPv6 clients by prefix: an access network delegates each subscriber a prefix (a /64 or shorter)
    bit<128> client_addr6 = 0;
    table link_of6 {
        key = { client_addr6 : lpm; }
        actions = { set_link; }
        default_action = set_link(0);
        size = LINK_CLIENTS;
    }

    // The class x decision counters: all links', and this link's.
    action count_class(in bit<8> cls, in bit<8> decision) {
        bit<32> slot = (bit<32>)cls * 4 + (bit<32>)decision;
        class_decision.count(slot);
        link_class_decision.count((bit<32>)meta.link * COUNTER_SLOTS + slot);
    }

    apply {
        bit<64> length = (bit<64>)standard_metadata.packet_length;
        meta.track.cls = CLASS_OTHER;
        meta.track.flags = 0;
        meta.track.progress = 0;
        meta.track.slot = 0;
        meta.track.payload = 0;
        meta.decision = DECISION_BYPASS;
        meta.link = 0;
        meta.tcp_ok = false;
        meta.tcp_payload = 0;
        // (one block of assignments: BMv2 applies each block between two conditions as a table of its own)
        if (!forward.apply().hit) {
            return;
        }
        if (hdr.ipv4.isValid()) {
            client_addr = meta.downstream == 1 ? hdr.ipv4.dstAddr : hdr.ipv4.srcAddr;
            link_of.apply();
        } else if (hdr.ipv6.isValid()) {
            client_addr6 = meta.downstream == 1 ? hdr.ipv6.dstAddr : hdr.ipv6.srcAddr;
            link_of6.apply();
        }
        // TCP payload from the IP header; inconsistent lengths mark the segment malformed.
        if (hdr.tcp.isValid() && hdr.tcp.dataOffset >= 5) {
            bit<16> tcp_len = (bit<16>)hdr.tcp.dataOffset << 2;
            if (hdr.ipv6.isValid()) {
                if (hdr.ipv6.payloadLen >= tcp_len) {
                    meta.tcp_ok = true;
                    meta.tcp_payload = hdr.ipv6.payloadLen - tcp_len;
                }
            } else {
                bit<16> hdr_len = ((bit<16>)hdr.ipv4.ihl << 2) + tcp_len;
                if (hdr.ipv4.totalLen >= hdr_len) {
                    meta.tcp_ok = true;
                    meta.tcp_payload = hdr.ipv4.totalLen - hdr_len;
                }
            }
        }

        if (meta.downstream == 0) {
            // Reverse direction (ACKs, requests): not congested, not modelled, never delayed.
            if (hdr.udp.isValid()) {
                meta.track.cls = CLASS_UDP;
            } else if (meta.tcp_ok) {
                meta.track.cls = meta.tcp_payload > 0 ? CLASS_TCP_EST : CLASS_TCP_CTRL;
            }
            count_class(meta.track.cls, DECISION_BYPASS);
        } else {
            random<bit<32>>(meta.rand, 0, 0xFFFFFFFF);
        }
        config.apply(meta.link, meta.qcfg, meta.red, meta.codel, meta.pie, meta.iwa);
        if (meta.qcfg.configured == 0) {
            if (meta.downstream == 1) {
                count_class(CLASS_OTHER, DECISION_BYPASS);
            }
            return;
        }

        bit<64> now = (bit<64>)standard_metadata.ingress_global_timestamp * 1000;   // us -> ns
        bool iwa_on = meta.qcfg.aqm == AQM_IWA;
        bit<64> tat;
        queue_tat.read(tat, (bit<32>)meta.link);
        tracker.apply(hdr, meta.tcp_ok, meta.tcp_payload, meta.downstream, now, meta.iwa, meta.track);
        shaper.apply(hdr, meta.tcp_ok, meta.tcp_payload, meta.downstream, meta.ws_seen, meta.ws_shift, now,
                     meta.link, tat, iwa_on, meta.iwa, meta.qcfg.mtu_ns, meta.qcfg.rate_class, meta.track, meta.grant,
                     meta.unheld_shift);

        bool report_it = false;
        if (meta.downstream == 0) {
            // upstream: IWA may have clamped the window of a starting flow; the ACK is never held
            meta.verdict.reason = REASON_UPSTREAM;
            if (meta.grant.rewrite) {
                window_rewrite.apply(hdr, meta.grant.window);
                meta.verdict.reason = REASON_IWA_WINDOW;
            }
            if (iwa_on && meta.qcfg.telemetry == TELEMETRY_ALL && (meta.grant.tracked || meta.grant.syn)) {
                meta.pred.now = now;
                meta.pred.length = length;
                meta.pred.sojourn_ns = 0;
                meta.pred.backlog_ns = tat > now ? tat - now : 0;
                meta.track.flags = meta.grant.flags;
                meta.verdict.s1 = ((bit<64>)meta.track.slot << 32) | (bit<64>)meta.grant.edge;
                meta.verdict.s2 = ((bit<64>)meta.grant.advance << 32) | (bit<64>)meta.grant.room_ns;
                meta.rand = 0;
                report_it = true;
            }
        } else {
            bit<32> seq;
            bit<64> ring_nth;
            bit<32> ring = (bit<32>)meta.link * RING_SIZE;   // the link's slice of the ring
            queue_seq.read(seq, (bit<32>)meta.link);
            queue_ring.read(ring_nth, ring + ((seq - (bit<32>)meta.qcfg.limit_pkts) & (RING_SIZE - 1)));
            predict.apply(now, length, tat, ring_nth, meta.qcfg, meta.pred);

            // CoDel decides for the codel AQM and, under IWA, for every packet IWA does not hold by a window
            // (datagrams, flows it does not shape, frames it cannot parse, shaped flows past their start) but
            // control segments and frames below a quarter of a full one (refmodel/pipeline.py: small_frame);
            // under IWA it observes every other admitted packet (its sojourn measurement covers the whole queue).
            bool held = (meta.track.cls == CLASS_TCP_START || meta.track.cls == CLASS_TCP_RTX) &&
                        meta.track.flags & TRACK_SHAPED != 0;
            bool small = 4 * length < (bit<64>)meta.iwa.mss_bytes + TCP_FRAME_OVERHEAD;
            bool codel_decides = meta.qcfg.aqm == AQM_CODEL ||
                                 (iwa_on && meta.track.cls != CLASS_TCP_CTRL && !held && !small);
            if (meta.qcfg.aqm == AQM_RED) {
                red.apply(meta.pred, meta.red, meta.link, meta.rand, meta.verdict);
            } else if (meta.qcfg.aqm == AQM_PIE) {
                pie.apply(meta.pred, meta.pie, meta.qcfg.mtu_ns, meta.link, meta.rand, meta.verdict);
            } else if (iwa_on) {
                iwa.apply(meta.pred, meta.iwa, meta.track, small, meta.link, meta.unheld_shift, meta.verdict);
            } else if (!codel_decides) {
                fifo.apply(meta.pred, meta.verdict);
            }
            if (meta.qcfg.aqm == AQM_CODEL || (iwa_on && !meta.verdict.drop)) {
                verdict_t cv;
                codel.apply(meta.pred, meta.codel, meta.qcfg.mtu_ns, meta.link, codel_decides, cv);
                if (codel_decides) { meta.verdict = cv; }
            }

            meta.decision = meta.verdict.drop ? DECISION_DROP : DECISION_PASS;
            bool ect = (hdr.ipv4.isValid() && hdr.ipv4.ecn != 0) || (hdr.ipv6.isValid() && hdr.ipv6.ecn != 0);
            if (meta.verdict.early && meta.qcfg.ecn == 1 && ect) {
                meta.decision = DECISION_MARK;
                ecn_mark.apply(hdr);
            }
            if (meta.decision == DECISION_DROP) {
                mark_to_drop(standard_metadata);
            } else {
                queue_tat.write((bit<32>)meta.link, meta.pred.tat_new);
                queue_ring.write(ring + (seq & (RING_SIZE - 1)), meta.pred.release_ns);
                queue_seq.write((bit<32>)meta.link, seq + 1);
            }
            count_class(meta.track.cls, meta.decision);
            // every packet, or (a run that would load a software switch with the clones) the datagrams only:
            // the audio's records, which the single-bottleneck check reads
            report_it = meta.qcfg.telemetry == TELEMETRY_ALL ||
                        (meta.qcfg.telemetry == TELEMETRY_DATAGRAMS && meta.track.cls == CLASS_UDP);
        }
        if (report_it) {
            report.apply(hdr, meta, meta.qcfg.aqm);
        }
    }
}

control BottleneckEgress(inout headers_t hdr, inout metadata_t meta,
                         inout standard_metadata_t standard_metadata) {
    TelemetryEmit() emit;
    apply {
        if (standard_metadata.instance_type == PKT_INSTANCE_TYPE_INGRESS_CLONE) {
            emit.apply(hdr, meta);
        }
    }
}

control BottleneckComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

V1Switch(BottleneckParser(), BottleneckVerifyChecksum(), BottleneckIngress(), BottleneckEgress(),
         BottleneckComputeChecksum(), BottleneckDeparser()) main;
