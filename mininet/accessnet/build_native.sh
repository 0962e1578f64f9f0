#!/usr/bin/env bash
# Builds the project's native helpers into build/: the userspace delay line, the initial-RTO sock_ops
# program (build/irto.bpf.o) with its loader (build/irto-attach), and the phone's receive window, a tc
# classifier (build/rwnd.bpf.o) with its loader (build/rwnd-attach); the BPF parts need clang and libbpf-dev.
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
    load_h=mininet/accessnet/bpf/load.h  # shared by both loaders
    if [ ! -x build/irto-attach ] || [ "$loader_src" -nt build/irto-attach ] || [ "$load_h" -nt build/irto-attach ]; then
        cc -O2 -Wall -Wextra -o build/irto-attach "$loader_src" -lbpf
    fi
    if [ ! -f build/rwnd.bpf.o ] || [ mininet/accessnet/bpf/rwnd.bpf.c -nt build/rwnd.bpf.o ]; then
        clang -O2 -g -Wall -target bpf -I"/usr/include/$(cc -dumpmachine)" -c mininet/accessnet/bpf/rwnd.bpf.c \
            -o build/rwnd.bpf.o
    fi
    if [ ! -x build/rwnd-attach ] || [ mininet/accessnet/bpf/rwnd_attach.c -nt build/rwnd-attach ] \
        || [ "$load_h" -nt build/rwnd-attach ]; then
        cc -O2 -Wall -Wextra -o build/rwnd-attach mininet/accessnet/bpf/rwnd_attach.c -lbpf
    fi
else
    echo "build_native: clang or libbpf-dev missing: build/irto.bpf.o, build/irto-attach, build/rwnd.bpf.o and" \
         "build/rwnd-attach not built (irto_s and client_window_bytes unavailable)" >&2
fi

# The Pion WebRTC flow ([webrtc] stack = "pion"): tools/pion-rtc, a Go module pinned in go.mod/go.sum
# (-mod=readonly: the build never changes them; the modules come from the Go module proxy or GOMODCACHE).
# Without Go (1.24 or newer) the rest of the lab still works; stack = "pion" is refused.
go_bin=$(command -v go || { [ -x /usr/local/go/bin/go ] && echo /usr/local/go/bin/go; } || true)
# Pinned modules with a fix of ours (tools/pion-rtc/patches, README there) are assembled by patched.sh in
# build/pion-mod and built with its go.mod (-modfile): upstream code with our files written over it.
pion_src=(tools/pion-rtc/*.go tools/pion-rtc/go.mod tools/pion-rtc/go.sum tools/pion-rtc/patched.sh
          $(find tools/pion-rtc/patches -type f))
if [ -n "$go_bin" ]; then
    stale=0
    [ -x build/pion-rtc ] || stale=1
    for f in "${pion_src[@]}"; do [ "$f" -nt build/pion-rtc ] && stale=1; done
    if [ "$stale" = 1 ]; then
        (cd tools/pion-rtc && modfile=$(./patched.sh "$go_bin" ../../build/pion-mod) &&
         GOFLAGS=-mod=readonly CGO_ENABLED=0 "$go_bin" build -modfile "$modfile" -trimpath -o ../../build/pion-rtc .)
    fi
else
    echo "build_native: Go (1.24 or newer) missing: build/pion-rtc not built ([webrtc] stack = \"pion\" unavailable;" \
         "https://go.dev/dl/, or /usr/local/go/bin/go)" >&2
fi
