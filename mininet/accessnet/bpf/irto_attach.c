// SPDX-License-Identifier: GPL-2.0
/* irto-attach OBJECT MS CGROUP_DIR...
 *
 * Loads the sock_ops program of irto.bpf.c (libbpf), writes the initial RTO MS (ms) into
 * its map, and attaches it with a BPF link to each cgroup v2 directory. Prints "ready" on
 * stdout once every attachment is in place, then holds the links until SIGTERM, SIGINT or
 * end of stdin, prints "calls N" (how often the program set an initial RTO) and exits.
 * The links belong to this process: when it exits, however it exits (even SIGKILL), the
 * kernel detaches the program; nothing is pinned, nothing outlives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: %s OBJECT MS CGROUP_DIR...\n", argv[0]);
		return 2;
	}
	char *end;
	errno = 0;
	unsigned long long ms = strtoull(argv[2], &end, 10);
	if (errno || *end || ms == 0 || ms > 120000) {
		fprintf(stderr, "irto-attach: MS must be an integer in [1, 120000], got '%s'\n", argv[2]);
		return 2;
	}
	libbpf_set_print(quiet);
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		fprintf(stderr, "irto-attach: cannot open %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	int err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "irto-attach: cannot load %s: %s\n", argv[1], strerror(-err));
		return 1;
	}
	struct bpf_map *map = bpf_object__find_map_by_name(obj, "irto_cfg");
	struct bpf_program *prog = bpf_object__find_program_by_name(obj, "irto");
	if (!map || !prog) {
		fprintf(stderr, "irto-attach: %s has no map irto_cfg or program irto\n", argv[1]);
		return 1;
	}
	__u32 key = 0;
	__u64 val = ms;
	if (bpf_map_update_elem(bpf_map__fd(map), &key, &val, BPF_ANY)) {
		fprintf(stderr, "irto-attach: map update: %s\n", strerror(errno));
		return 1;
	}
	int n = argc - 3;
	struct bpf_link **links = calloc(n, sizeof(*links));
	for (int i = 0; i < n; i++) {
		int fd = open(argv[3 + i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "irto-attach: cgroup %s: %s\n", argv[3 + i], strerror(errno));
			return 1;
		}
		links[i] = bpf_program__attach_cgroup(prog, fd);
		if (!links[i]) {
			fprintf(stderr, "irto-attach: attach to %s: %s\n", argv[3 + i], strerror(errno));
			return 1;
		}
		close(fd);
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("ready %llu ms on %d cgroup(s)\n", ms, n);
	fflush(stdout);
	struct pollfd pfd = {.fd = 0, .events = POLLIN};
	while (!stop) {
		int r = poll(&pfd, 1, 1000);
		if (r > 0) {
			char buf[256];
			if (read(0, buf, sizeof(buf)) <= 0)
				break; /* stdin closed: our parent is gone or done */
		}
	}
	key = 1;
	val = 0;
	bpf_map_lookup_elem(bpf_map__fd(map), &key, &val);
	printf("calls %llu\n", (unsigned long long)val);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(obj);
	return 0;
}
