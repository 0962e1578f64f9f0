#!/usr/bin/env bash
# make build TARGET=tofino|tofino2|tofino2-red: compile the TNA program (p4src/tofino/bottleneck_tna.p4)
# with the open-source Tofino backend of p4c (bf-p4c), into build/<target>/:
#   bf-rt.json, pipe/context.json, pipe/<target>.bin, pipe/logs/ (resources.json, ...),
#   bottleneck_tna.p4info.txtpb and device_config.pb.bin (Stratum's BfPipelineConfig).
# The P4Info is also kept in controller/p4info/<target>.p4info.txtpb, which the tests check the
# controller's entries against without a compiler: this script says when it changed.
# Without bf-p4c (PATH, or $P4_PREFIX/tofino/bin) it says so and builds nothing.
set -euo pipefail

target=${1:?usage: tools/build_tofino.sh tofino|tofino2}
defines=()
case "$target" in
    tofino) chip=tofino; arch=tna ;;
    tofino2) chip=tofino2; arch=t2na ;;
    # Tofino 2 with RED instead of CoDel and PIE (p4src/tofino/red.p4: all three do not fit one build yet)
    tofino2-red) chip=tofino2; arch=t2na; defines=(-DWITH_RED=1 -DWITH_CODEL=0 -DWITH_PIE=0) ;;
    # Tofino 2 with IWA (p4src/tofino/iwa.p4): the flow tracker, the start shaper in two passes, CoDel beside.
    # What fits so far (docs/tofino.md): pass 1 without its tail (-DIWA_OMIT_P1_TAIL: the link's counts, the
    # reserve, the start phase, the grant), 2^15 flow slots a pipe (2^16 pairs do not fit a stage)
    tofino2-iwa) chip=tofino2; arch=t2na
                 defines=(-DWITH_IWA=1 -DWITH_CODEL=1 -DWITH_PIE=0 -DIWA_OMIT_P1_TAIL -DIWA_SLOT_BITS=15 ${IWA_DEFINES:-}) ;;
    *) echo "build_tofino: unknown target '$target' (tofino, tofino2, tofino2-red or tofino2-iwa)" >&2; exit 2 ;;
esac
cd "$(dirname "${BASH_SOURCE[0]}")/.."
P4_PREFIX=${P4_PREFIX:-/opt/p4}
case ":$PATH:" in *":$P4_PREFIX/tofino/bin:"*) ;; *) PATH="$PATH:$P4_PREFIX/tofino/bin" ;; esac

if ! command -v bf-p4c > /dev/null; then
    echo "make build TARGET=$target: SKIPPED: bf-p4c (the open-source Tofino backend of p4c) is not on PATH" \
         "nor in $P4_PREFIX/tofino/bin; 'make toolchain TOFINO=1' builds it"
    exit 0
fi

out=build/$target
log=build/$target.compile.log   # outside $out: bf-p4c empties its output directory
rm -rf "$out"
mkdir -p "$out"
echo "$(bf-p4c --version 2>&1 | head -n 1): --target $chip --arch $arch -> $out/"
start=$(date +%s)
if ! bf-p4c --target "$chip" --arch "$arch" "${defines[@]}" -g -o "$out" \
        --p4runtime-files "$out/bottleneck_tna.p4info.txtpb" p4src/tofino/bottleneck_tna.p4 > "$log" 2>&1; then
    cat "$log" >&2
    echo "make build TARGET=$target: bf-p4c failed (log: $log)" >&2
    exit 1
fi
grep -i "warning" "$log" | head -n 20 || true
echo "compiled in $(( $(date +%s) - start )) s"

py=.venv/bin/python
[ -x "$py" ] || py=python3
mkdir -p controller/p4info
kept=controller/p4info/$target.p4info.txtpb
# without the Snapshot externs -g adds: debugging aids, and not the same from one compile to the next
"$py" -m controller.tna_p4info "$out/bottleneck_tna.p4info.txtpb" "$out/p4info.kept.txtpb"
if ! cmp -s "$out/p4info.kept.txtpb" "$kept"; then
    cp "$out/p4info.kept.txtpb" "$kept"
    echo "$kept: updated from this build (commit it: the controller's tests check against it)"
fi
if "$py" -m controller.stratum "$out" bottleneck_tna "$out/device_config.pb.bin"; then
    echo "$out/device_config.pb.bin: Stratum's BfPipelineConfig"
fi
"$py" tools/tofino_report.py build docs/tofino.md
