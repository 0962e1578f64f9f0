/* Telemetry: one record per packet that meets the bottleneck (and, with IWA,
 * per upstream ACK of a tracked flow: decision BYPASS, the window it left with).
 * Ingress fills the t_* metadata and clones the packet (I2E) to the monitor
 * port's clone session, keeping those fields; egress turns the clone into an
 * Ethernet frame of ethertype 0x88B5 carrying the 64-byte record. */
#ifndef _TELEMETRY_P4_
#define _TELEMETRY_P4_

control TelemetryReport(inout headers_t hdr, inout metadata_t meta, in bit<8> aqm) {
    register<bit<32>>(1) telemetry_seq;

    apply {
        bit<32> seq;
        telemetry_seq.read(seq, 0);
        telemetry_seq.write(0, seq + 1);
        meta.t_aqm = aqm;
        meta.t_decision = meta.decision;
        meta.t_reason = meta.verdict.reason;
        meta.t_cls = meta.track.cls;
        meta.t_tflags = meta.track.flags;
        meta.t_length = (bit<16>)meta.pred.length;
        meta.t_seq = seq;
        meta.t_rand = meta.rand;
        meta.t_ts_ns = meta.pred.now;
        meta.t_sojourn_ns = 0xFFFFFFFF;
        if (meta.pred.sojourn_ns < 0xFFFFFFFF) { meta.t_sojourn_ns = (bit<32>)meta.pred.sojourn_ns; }
        meta.t_backlog_ns = 0xFFFFFFFF;
        if (meta.pred.backlog_ns < 0xFFFFFFFF) { meta.t_backlog_ns = (bit<32>)meta.pred.backlog_ns; }
        meta.t_src = 0;
        meta.t_dst = 0;
        meta.t_proto = 0;
        meta.t_ipver = 0;
        if (hdr.ipv4.isValid()) {
            meta.t_src = hdr.ipv4.srcAddr;
            meta.t_dst = hdr.ipv4.dstAddr;
            meta.t_proto = hdr.ipv4.protocol;
        } else if (hdr.ipv6.isValid()) {
            meta.t_src = hdr.ipv6.srcAddr[31:0];
            meta.t_dst = hdr.ipv6.dstAddr[31:0];
            meta.t_proto = hdr.ipv6.nextHdr;
            meta.t_ipver = 6;
        }
        meta.t_sport = 0;
        meta.t_dport = 0;
        if (hdr.tcp.isValid()) {
            meta.t_sport = hdr.tcp.srcPort;
            meta.t_dport = hdr.tcp.dstPort;
        } else if (hdr.udp.isValid()) {
            meta.t_sport = hdr.udp.srcPort;
            meta.t_dport = hdr.udp.dstPort;
        }
        meta.t_link = meta.link;
        meta.t_s1 = meta.verdict.s1;
        meta.t_s2 = meta.verdict.s2;
        clone_preserving_field_list(CloneType.I2E, TELEMETRY_SESSION, FL_TELEMETRY);
    }
}

/* Egress side: build the record frame from the preserved fields. */
control TelemetryEmit(inout headers_t hdr, in metadata_t meta) {
    apply {
        hdr.ipv4.setInvalid();
        hdr.ipv4_options.setInvalid();
        hdr.ipv6.setInvalid();
        hdr.tcp.setInvalid();
        hdr.tcp_opts.pop_front(TCP_OPT_BYTES);
        hdr.udp.setInvalid();
        hdr.ethernet.setValid();
        hdr.ethernet.dstAddr = 0xFFFFFFFFFFFF;
        hdr.ethernet.srcAddr = 0x020000000099;
        hdr.ethernet.etherType = TELEMETRY_ETHERTYPE;
        hdr.telemetry.setValid();
        hdr.telemetry.version = TELEMETRY_VERSION;
        hdr.telemetry.aqm = meta.t_aqm;
        hdr.telemetry.decision = meta.t_decision;
        hdr.telemetry.reason = meta.t_reason;
        hdr.telemetry.cls = meta.t_cls;
        hdr.telemetry.tflags = meta.t_tflags;
        hdr.telemetry.length = meta.t_length;
        hdr.telemetry.seq = meta.t_seq;
        hdr.telemetry.rand = meta.t_rand;
        hdr.telemetry.ts_ns = meta.t_ts_ns;
        hdr.telemetry.sojourn_ns = meta.t_sojourn_ns;
        hdr.telemetry.backlog_ns = meta.t_backlog_ns;
        hdr.telemetry.src = meta.t_src;
        hdr.telemetry.dst = meta.t_dst;
        hdr.telemetry.sport = meta.t_sport;
        hdr.telemetry.dport = meta.t_dport;
        hdr.telemetry.proto = meta.t_proto;
        hdr.telemetry.ipver = meta.t_ipver;
        hdr.telemetry.link = meta.t_link;
        hdr.telemetry.s1 = meta.t_s1;
        hdr.telemetry.s2 = meta.t_s2;
        truncate(TELEMETRY_FRAME_LEN);
    }
}

#endif
