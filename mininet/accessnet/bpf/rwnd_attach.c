// SPDX-License-Identifier: GPL-2.0
/* rwnd-attach OBJECT IFNAME BYTES
 *
 * Loads the tc classifier of rwnd.bpf.c (libbpf), writes BYTES (the largest window the client may
 * advertise, 1..65535) into its map and attaches it to IFNAME's egress (a clsact qdisc, made if
 * absent), in the network namespace this runs in. The filter stays until the interface goes (it dies
 * with the lab's namespace); this process exits once it is in place, printing "attached".
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "load.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s OBJECT IFNAME BYTES\n", argv[0]);
		return 2;
	}
	char *end;
	errno = 0;
	unsigned long long bytes = strtoull(argv[3], &end, 10);
	if (errno || *end || bytes == 0 || bytes > 65535) {
		fprintf(stderr, "rwnd-attach: BYTES must be an integer in [1, 65535], got '%s'\n", argv[3]);
		return 2;
	}
	unsigned int ifindex = if_nametoindex(argv[2]);
	if (!ifindex) {
		fprintf(stderr, "rwnd-attach: no interface %s here: %s\n", argv[2], strerror(errno));
		return 1;
	}
	struct loaded bpf;
	if (load_with_value("rwnd-attach", argv[1], "rwnd_cfg", "rwnd_clamp", bytes, &bpf))
		return 1;
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	int err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		fprintf(stderr, "rwnd-attach: clsact on %s: %s\n", argv[2], strerror(-err));
		return 1;
	}
	LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(bpf.prog));
	err = bpf_tc_attach(&hook, &opts);
	if (err) {
		fprintf(stderr, "rwnd-attach: attach to %s egress: %s\n", argv[2], strerror(-err));
		return 1;
	}
	printf("attached\n");
	return 0;
}
