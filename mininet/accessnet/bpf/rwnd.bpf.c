// SPDX-License-Identifier: GPL-2.0
/* The phone's receive window (profile key client_window_bytes), a tc egress classifier on the client's
 * interface: every TCP segment the client sends (IPv4 or IPv6) leaves with its window field at most the value in
 * rwnd_cfg[0] (bytes), its checksum mended incrementally. The field is taken as bytes, so the client's
 * namespace runs without window scaling (net.ipv4.tcp_window_scaling=0, AccessNet.set_client_window):
 * a window below 64 KiB needs none. Why not the kernel's own clamps: since Linux 6.x the receiver resets
 * its window clamp from its receive buffer whenever it re-measures the segments' truesize ratio
 * (tcp_measure_rcv_mss), so a route "window" or TCP_WINDOW_CLAMP holds for the SYN only.
 * rwnd_cfg[1] counts the segments whose window was lowered. Over IPv6 the TCP header follows the fixed
 * header directly (Linux sends plain TCP without extension headers); a packet with any other next header
 * passes untouched. The window is not in the pseudo-header of either family, so the same incremental
 * update (RFC 1624) mends the checksum of both. */
#include <stddef.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/tcp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} rwnd_cfg SEC(".maps");

/* Offset of the TCP header in the frame, or 0 for anything but an unfragmented TCP segment over IPv4 or IPv6. */
static __always_inline __u32 tcp_offset(void *data, void *end)
{
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end)
		return 0;
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);
		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_TCP || ip->ihl < 5 ||
		    (ip->frag_off & bpf_htons(0x1fff)))
			return 0;
		return sizeof(*eth) + ip->ihl * 4;
	}
	if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_TCP)
			return 0;
		return sizeof(*eth) + sizeof(*ip6);
	}
	return 0;
}

SEC("tc")
int rwnd_clamp(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	__u32 l4 = tcp_offset(data, end);
	if (!l4)
		return TC_ACT_OK;
	struct tcphdr *tcp = data + l4;
	if ((void *)(tcp + 1) > end)
		return TC_ACT_OK;
	__u32 key = 0;
	__u64 *wnd = bpf_map_lookup_elem(&rwnd_cfg, &key);
	if (!wnd || *wnd == 0 || *wnd > 0xffff)
		return TC_ACT_OK;
	__be16 old = tcp->window;
	if (bpf_ntohs(old) <= *wnd)
		return TC_ACT_OK;
	__be16 new = bpf_htons((__u16)*wnd);
	if (bpf_l4_csum_replace(skb, l4 + offsetof(struct tcphdr, check), old, new, sizeof(new)))
		return TC_ACT_OK;
	if (bpf_skb_store_bytes(skb, l4 + offsetof(struct tcphdr, window), &new, sizeof(new), 0))
		return TC_ACT_OK;
	key = 1;
	__u64 *n = bpf_map_lookup_elem(&rwnd_cfg, &key);
	if (n)
		__sync_fetch_and_add(n, 1);
	return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
