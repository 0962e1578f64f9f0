/* Baseline for the benchmark: the same parser and port forwarding as
 * bottleneck.p4, and nothing else. */
#include <core.p4>
#include <v1model.p4>

#include "include/constants.p4"
#include "include/headers.p4"
#include "include/parser.p4"

control PlainVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control PlainIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
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
    apply { forward.apply(); }
}

control PlainEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply { }
}

control PlainComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

V1Switch(BottleneckParser(), PlainVerifyChecksum(), PlainIngress(), PlainEgress(), PlainComputeChecksum(),
         BottleneckDeparser()) main;
