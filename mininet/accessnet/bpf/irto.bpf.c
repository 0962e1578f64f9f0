// SPDX-License-Identifier: GPL-2.0
/* Initial retransmission timeout for the lab's TCP endpoints (issue 13, item 3).
 *
 * A cgroup sock_ops program: on BPF_SOCK_OPS_TIMEOUT_INIT the kernel asks it for the
 * initial RTO of a connection (tcp_timeout_init(): the SYN's retransmission timer at an
 * active opener, the SYN-ACK's at a passive one) and takes the reply, in jiffies. The
 * value comes from the map, in milliseconds, so one object serves every value; 0 (or a
 * missing value) leaves the kernel's default (1 s, RFC 6298). Slot 1 of the map counts
 * the times the program answered, so a run can show that it was asked at all.
 *
 * Loaded and attached by irto_attach.c (libbpf); built by build_native.sh.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern unsigned int CONFIG_HZ __kconfig; /* jiffies per second, from the kernel's config */

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} irto_cfg SEC(".maps");

#define IRTO_MS 0
#define IRTO_CALLS 1

SEC("sockops")
int irto(struct bpf_sock_ops *skops)
{
	long reply = -1; /* <= 0: the kernel's own default */

	if (skops->op == BPF_SOCK_OPS_TIMEOUT_INIT) {
		__u32 k = IRTO_MS;
		__u64 *ms = bpf_map_lookup_elem(&irto_cfg, &k);

		if (ms && *ms) {
			__u64 j = (*ms * CONFIG_HZ + 999) / 1000; /* round up: never below the set value */
			__u32 c = IRTO_CALLS;
			__u64 *calls = bpf_map_lookup_elem(&irto_cfg, &c);

			reply = j ? (long)j : 1;
			if (calls)
				__sync_fetch_and_add(calls, 1);
		}
	}
	skops->reply = reply;
	return 1;
}

char LICENSE[] SEC("license") = "GPL";
