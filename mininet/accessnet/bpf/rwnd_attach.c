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
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

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
	libbpf_set_print(quiet);
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "rwnd-attach: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "rwnd-attach: cannot load %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "rwnd_cfg");
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "rwnd_clamp");
	if (!map || !prog) {
		fprintf(stderr, "rwnd-attach: %s has no map rwnd_cfg or program rwnd_clamp\n", argv[1]);
		return 1;
	}
	__u32 key = 0;
	__u64 val = bytes;
	if (bpf_map_update_elem(bpf_map__fd(map), &key, &val, BPF_ANY)) {
		fprintf(stderr, "rwnd-attach: map update: %s\n", strerror(errno));
		return 1;
	}
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST) {
		fprintf(stderr, "rwnd-attach: clsact on %s: %s\n", argv[2], strerror(-err));
		return 1;
	}
	LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(prog));
	err = bpf_tc_attach(&hook, &opts);
	if (err) {
		fprintf(stderr, "rwnd-attach: attach to %s egress: %s\n", argv[2], strerror(-err));
		return 1;
	}
	printf("attached\n");
	return 0;
}
