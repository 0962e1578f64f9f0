#!/usr/bin/env bash
# patched.sh GO WORKDIR: assemble the pinned modules that tools/pion-rtc/patches/<module>-<version>/ patches
# (a copy of the module from GOMODCACHE, verified against go.sum when downloaded, with the patch's files
# written over it) in WORKDIR, and WORKDIR/go.mod: this directory's go.mod with a replace directive for each
# (go.sum beside it). Prints that go.mod's path; build and test with `go build -modfile THAT ...`. Run in
# tools/pion-rtc. A patch whose version is not the one go.mod pins is an error: a bumped module's patch
# must be looked at again (or dropped if upstream fixed it). See patches/README.md.
set -euo pipefail
go_bin=$1 work=$(mkdir -p "$2" && cd "$2" && pwd)
export GOFLAGS=-mod=readonly
cp go.mod "$work/go.mod"
cp go.sum "$work/go.sum"
for pdir in patches/*/; do
    name=$(basename "$pdir")            # interceptor-v0.1.51
    mod=github.com/pion/${name%-v*} want=v${name##*-v}
    have=$("$go_bin" list -m -f '{{.Version}}' "$mod")
    if [ "$have" != "$want" ]; then
        echo "patched.sh: $pdir patches $mod $want but go.mod pins $have" >&2
        exit 1
    fi
    "$go_bin" mod download "$mod"
    src=$("$go_bin" list -m -f '{{.Dir}}' "$mod")
    rm -rf "$work/$name"
    cp -r "$src" "$work/$name"
    chmod -R u+w "$work/$name"
    (cd "$pdir" && find . -type f -name '*.go' -print0 | xargs -0 -I{} cp {} "$work/$name/{}")
    echo "replace $mod => $work/$name" >> "$work/go.mod"
done
echo "$work/go.mod"
