#!/usr/bin/env bash
# Builds the project's native helpers into build/: the userspace delay line, and the initial-RTO
# sock_ops program (build/irto.bpf.o) with its loader (build/irto-attach; clang and libbpf-dev).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build
src=mininet/accessnet/delayline.c
if [ ! -x build/delayline ] || [ "$src" -nt build/delayline ]; then
    cc -O2 -Wall -Wextra -o build/delayline "$src"
fi

# Initial RTO (scenario key irto_s): a BPF sock_ops object built with clang for the BPF target, and its
# libbpf loader. Without clang or libbpf's headers the rest of the lab still works; irto_s is refused.
bpf_src=mininet/accessnet/bpf/irto.bpf.c
loader_src=mininet/accessnet/bpf/irto_attach.c
if command -v clang >/dev/null && [ -f /usr/include/bpf/libbpf.h ]; then
    if [ ! -f build/irto.bpf.o ] || [ "$bpf_src" -nt build/irto.bpf.o ]; then
        clang -O2 -g -Wall -target bpf -I"/usr/include/$(cc -dumpmachine)" -c "$bpf_src" -o build/irto.bpf.o
    fi
    if [ ! -x build/irto-attach ] || [ "$loader_src" -nt build/irto-attach ]; then
        cc -O2 -Wall -Wextra -o build/irto-attach "$loader_src" -lbpf
    fi
else
    echo "build_native: clang or libbpf-dev missing: build/irto.bpf.o and build/irto-attach not built (irto_s unavailable)" >&2
fi
