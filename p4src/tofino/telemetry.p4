/* Telemetry on Tofino: ingress fills a mirror header with what only it knows
 * (decision, reason, sojourn, backlog, the AQM's state) and mirrors the packet
 * (ingress-to-egress) to the monitor port's session, which the controller
 * truncates; egress turns the copy into the same 0x88B5 record frame the v1model
 * program sends (docs/telemetry.md), taking the 5-tuple and length from the copy.
 * Differences from v1model: ts_ns carries the low 32 bits of the timestamp, s1 and
 * s2 32 bits each, rand is 0 (types.p4: the mirror header's 32 bytes). */
#ifndef _TNA_TELEMETRY_P4_
#define _TNA_TELEMETRY_P4_

control TelemetryMirror(inout tna_metadata_t md,
                        inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Register<bit<32>, bit<1>>(1, 0) telemetry_seq;
    RegisterAction<bit<32>, bit<1>, bit<32>>(telemetry_seq) next_seq = {
        void apply(inout bit<32> seq, out bit<32> old) {
            old = seq;
            seq = seq + 1;
        }
    };

    apply {
        md.tmirror.setValid();
        md.tmirror.kind = BRIDGE_TELEMETRY;
        md.tmirror.aqm = md.cfg.aqm;
        md.tmirror.decision = md.decision;
        md.tmirror.reason = md.reason;
        md.tmirror.cls = md.cls;
        md.tmirror.tflags = 0;
        md.tmirror.link = (bit<16>)md.link;
        md.tmirror.seq = next_seq.execute(0);
        md.tmirror.ts_ns = (bit<32>)md.now;
        md.tmirror.sojourn_ns = md.sojourn_ns;
        md.tmirror.backlog_ns = md.backlog_ns;
        md.tmirror.s1 = md.s1;
        md.tmirror.s2 = md.s2;
        md.mirror_session = (MirrorId_t)TELEMETRY_SESSION;
        ig_dprsr_md.mirror_type = MIRROR_TELEMETRY;
    }
}

/* Egress: the copy becomes Ethernet + the 64-byte record. */
control TelemetryRecord(inout tna_egress_headers_t hdr) {
    apply {
        hdr.telemetry.setValid();
        hdr.telemetry.version = TELEMETRY_VERSION;
        hdr.telemetry.aqm = hdr.tmirror.aqm;
        hdr.telemetry.decision = hdr.tmirror.decision;
        hdr.telemetry.reason = hdr.tmirror.reason;
        hdr.telemetry.cls = hdr.tmirror.cls;
        hdr.telemetry.tflags = hdr.tmirror.tflags;
        hdr.telemetry.length = 0;
        hdr.telemetry.seq = hdr.tmirror.seq;
        hdr.telemetry.rand = 0;
        hdr.telemetry.ts_ns = (bit<64>)hdr.tmirror.ts_ns;
        hdr.telemetry.sojourn_ns = hdr.tmirror.sojourn_ns;
        hdr.telemetry.backlog_ns = hdr.tmirror.backlog_ns;
        hdr.telemetry.src = 0;
        hdr.telemetry.dst = 0;
        hdr.telemetry.proto = 0;
        hdr.telemetry.sport = 0;
        hdr.telemetry.dport = 0;
        if (hdr.ipv4.isValid()) {
            hdr.telemetry.length = hdr.ipv4.totalLen + 14;
            hdr.telemetry.src = hdr.ipv4.srcAddr;
            hdr.telemetry.dst = hdr.ipv4.dstAddr;
            hdr.telemetry.proto = hdr.ipv4.protocol;
        }
        if (hdr.tcp.isValid()) {
            hdr.telemetry.sport = hdr.tcp.srcPort;
            hdr.telemetry.dport = hdr.tcp.dstPort;
        } else if (hdr.udp.isValid()) {
            hdr.telemetry.sport = hdr.udp.srcPort;
            hdr.telemetry.dport = hdr.udp.dstPort;
        }
        hdr.telemetry.ipver = 0;
        hdr.telemetry.link = hdr.tmirror.link;
        hdr.telemetry.s1 = (bit<64>)hdr.tmirror.s1;
        hdr.telemetry.s2 = (bit<64>)hdr.tmirror.s2;
        hdr.ethernet.dstAddr = 0xFFFFFFFFFFFF;
        hdr.ethernet.srcAddr = 0x020000000099;
        hdr.ethernet.etherType = TELEMETRY_ETHERTYPE;
        hdr.ipv4.setInvalid();
        hdr.tcp.setInvalid();
        hdr.udp.setInvalid();
        hdr.tmirror.setInvalid();
    }
}

#endif
