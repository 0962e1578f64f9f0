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
#include "load.h"

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

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
	struct loaded bpf;
	if (load_with_value("irto-attach", argv[1], "irto_cfg", "irto", ms, &bpf))
		return 1;
	int n = argc - 3;
	struct bpf_link **links = calloc(n, sizeof(*links));
	for (int i = 0; i < n; i++) {
		int fd = open(argv[3 + i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "irto-attach: cgroup %s: %s\n", argv[3 + i], strerror(errno));
			return 1;
		}
		links[i] = bpf_program__attach_cgroup(bpf.prog, fd);
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
	__u32 key = 1;
	__u64 val = 0;
	bpf_map_lookup_elem(bpf_map__fd(bpf.map), &key, &val);
	printf("calls %llu\n", (unsigned long long)val);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	bpf_object__close(bpf.obj);
	return 0;
}
