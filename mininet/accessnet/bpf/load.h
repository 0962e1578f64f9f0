// SPDX-License-Identifier: GPL-2.0
/* Shared by the project's BPF loaders (irto_attach.c, rwnd_attach.c): open and load an object, find its
 * map and its program by name, and write one value at key 0 of the map. On failure it says why on stderr,
 * after the tool's name, and returns -1. */
#ifndef IWLAB_BPF_LOAD_H
#define IWLAB_BPF_LOAD_H
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

struct loaded {
	struct bpf_object *obj;
	struct bpf_map *map;
	struct bpf_program *prog;
};

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int load_with_value(const char *tool, const char *path, const char *map_name, const char *prog_name,
			   __u64 value, struct loaded *out)
{
	libbpf_set_print(quiet);
	out->obj = bpf_object__open_file(path, NULL);
	if (!out->obj) {
		fprintf(stderr, "%s: cannot open %s: %s\n", tool, path, strerror(errno));
		return -1;
	}
	int err = bpf_object__load(out->obj);
	if (err) {
		fprintf(stderr, "%s: cannot load %s: %s\n", tool, path, strerror(-err));
		return -1;
	}
	out->map = bpf_object__find_map_by_name(out->obj, map_name);
	out->prog = bpf_object__find_program_by_name(out->obj, prog_name);
	if (!out->map || !out->prog) {
		fprintf(stderr, "%s: %s has no map %s or program %s\n", tool, path, map_name, prog_name);
		return -1;
	}
	__u32 key = 0;
	if (bpf_map_update_elem(bpf_map__fd(out->map), &key, &value, BPF_ANY)) {
		fprintf(stderr, "%s: map update: %s\n", tool, strerror(errno));
		return -1;
	}
	return 0;
}
#endif
