#!/usr/bin/env bash
# Builds the project's native helper (the userspace delay line) into build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build
src=mininet/accessnet/delayline.c
if [ ! -x build/delayline ] || [ "$src" -nt build/delayline ]; then
    cc -O2 -Wall -Wextra -o build/delayline "$src"
fi
