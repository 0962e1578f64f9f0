#!/usr/bin/env bash
# make toolchain: build the pinned P4 toolchain (PI, BMv2 with simple_switch_grpc,
# p4c with the bmv2 and p4test backends) from source into a prefix, with the
# distribution's own protobuf/gRPC/thrift/boost. Versions: tools/toolchain.versions.
# TOFINO=1 adds a step: p4c's open-source Tofino backend (bf-p4c) into PREFIX/tofino; TESTGEN=1 (with
# TOFINO=1) another: p4c's P4Testgen with its Tofino target (p4testgen), from the same p4c.
# Idempotent and resumable: each finished step leaves a stamp keyed by what it
# built; a rerun skips it. `tools/toolchain.sh --help` says the rest.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/.." && pwd)
VERSIONS_FILE=${TOOLCHAIN_VERSIONS:-$HERE/toolchain.versions}

PREFIX=${PREFIX:-/opt/p4}
WORK_DIR=${TOOLCHAIN_WORK_DIR:-/var/tmp/iwlab-toolchain}
P4_SOURCES=${P4_SOURCES:-}
JOBS=${JOBS:-2}
TOFINO=${TOFINO:-0}
TESTGEN=${TESTGEN:-0}
FAKE=${TOOLCHAIN_FAKE_STEPS:-0}     # tests: every step's command replaced by a fake
FAKE_FAIL=${TOOLCHAIN_FAKE_FAIL:-}  # tests: the fake of this step fails
MODE=build

STEPS=(deps sources pi bmv2 p4c finish)
# Typical wall time of each step in seconds, measured on a 2-core, 24 GiB VM
# (Debian 12, make -j2, P4_SOURCES, 2026-11-23): deps 15 s (about 30 packages to
# install; more on a bare machine), sources 30 s, pi 4m10s, bmv2 28m22s (it also
# builds psa_switch, pna_nic and the other targets), p4c 31m16s, finish 5 s; in
# all 64 minutes. The ETA in the progress lines comes from these.
# tofino (TOFINO=1 only): 70 min (same VM, 2026-11-25, unity build; for 55 of them BMv2 and p4c were
# building on the same 2 cores, so alone it is likely shorter), then 8 s make install and 5 s smoke test.
# testgen (TESTGEN=1 only): 28 min (same VM, 2026-11-25: its own build of protobuf, abseil and p4c's libraries).
declare -A TYPICAL=([deps]=60 [sources]=30 [pi]=250 [bmv2]=1700 [p4c]=1880 [finish]=5 [tofino]=4200 [testgen]=1700)
declare -A DESC=(
    [deps]="Debian build dependencies (apt)"
    [sources]="pinned sources (git checkouts, PI's submodules)"
    [pi]="PI with its P4Runtime server (--with-proto)"
    [bmv2]="BMv2 --with-pi (simple_switch, simple_switch_grpc, simple_switch_CLI)"
    [p4c]="p4c (bmv2 and p4test backends)"
    [finish]="ldconfig, smoke test (compile a P4 program, start the binaries)"
    [tofino]="p4c's open-source Tofino backend, bf-p4c (TOFINO=1 only)"
    [testgen]="p4c's P4Testgen with its Tofino target, p4testgen (TESTGEN=1 only)"
)

APT_PACKAGES=(git ca-certificates build-essential g++ autoconf automake libtool libtool-bin pkg-config
    cmake bison flex libfl-dev python3 python3-dev python3-six python3-thrift
    libboost-dev libboost-system-dev libboost-thread-dev libboost-program-options-dev
    libboost-filesystem-dev libboost-iostreams-dev libboost-graph-dev
    libgc-dev libgmp-dev libpcap-dev libjsoncpp-dev libxxhash-dev libnanomsg-dev libreadline-dev
    libssl-dev libevent-dev libffi-dev
    libprotobuf-dev libprotoc-dev protobuf-compiler libgrpc++-dev libgrpc-dev protobuf-compiler-grpc
    libthrift-dev thrift-compiler)

PI_FLAGS=(--with-proto --without-internal-rpc --without-cli --without-bmv2)
# --with-thrift: simple_switch_grpc leaves its Thrift server out by default, and the lab sets the egress queue
# depth through it (simple_switch_CLI set_queue_depth; 64 packets otherwise)
BMV2_FLAGS=(--with-pi --with-thrift --disable-logging-macros --disable-elogger)
# TOFINO=1 (step tofino): p4c at P4C_TOFINO_REF, only its tofino backend, driver named bf-p4c, into
# PREFIX/tofino: its own build of the protobuf and abseil it pins (FetchContent, from local checkouts:
# Debian's protobuf 3.21 is too old for it), Debian's Z3 (tools/p4c-tofino.patch) and libgc. A unity build,
# as p4c's CI builds the tofino backend (tools/ci-build.sh): fewer, larger compile units, much faster on 2 cores.
TOFINO_APT_PACKAGES=(rapidjson-dev libz3-dev python3-venv python3-distutils)
TOFINO_PATCH=$HERE/p4c-tofino.patch
P4C_TOFINO_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON -DP4C_DRIVER_NAME=bf-p4c -DENABLE_TOFINO=ON
    -DENABLE_BMV2=OFF -DENABLE_P4TEST=OFF -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF
    -DENABLE_P4FMT=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF -DENABLE_DOCS=OFF
    -DCMAKE_DISABLE_FIND_PACKAGE_BMV2=ON -DUSE_PREINSTALLED_Z3=ON -DP4C_USE_PREINSTALLED_BDWGC=ON
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
# TESTGEN=1 (step testgen): the same p4c and flags as step tofino, in a build directory of its own, with the test
# tools on and only P4Testgen's Tofino target; only the p4testgen binary is built and installed.
TESTGEN_FLAGS=(-DENABLE_TEST_TOOLS=ON -DENABLE_TOOLS_MODULE_TESTGEN=ON -DENABLE_TOOLS_MODULE_SMITH=OFF
    -DENABLE_TOOLS_TARGET_TOFINO=ON -DENABLE_TOOLS_TARGET_BMV2=OFF -DENABLE_TOOLS_TARGET_EBPF=OFF
    -DENABLE_TOOLS_TARGET_PNA=OFF -DINJA_EXPORT=OFF -DINJA_INSTALL=OFF)
P4C_FLAGS=(-DCMAKE_BUILD_TYPE=Release -DENABLE_BMV2=ON -DENABLE_P4TEST=ON -DENABLE_EBPF=OFF -DENABLE_UBPF=OFF
    -DENABLE_DPDK=OFF -DENABLE_P4TC=OFF -DENABLE_P4C_GRAPHS=OFF -DENABLE_TEST_TOOLS=OFF -DENABLE_GTESTS=OFF
    -DENABLE_DOCS=OFF -DP4C_USE_PREINSTALLED_PROTOBUF=ON -DENABLE_PROTOBUF_STATIC=OFF
    -DFETCHCONTENT_FULLY_DISCONNECTED=ON)

say() { printf '[toolchain] %s\n' "$*"; }
die() { printf '[toolchain] error: %s\n' "$*" >&2; exit 2; }

usage() {
    cat <<EOF
Usage: tools/toolchain.sh [options]      (or: make toolchain [PREFIX=dir] [P4_SOURCES=dir])

Builds the pinned P4 toolchain from source into PREFIX (default /opt/p4, where
tools/p4env.sh looks): PI (P4Runtime server), BMv2 --with-pi (simple_switch_grpc,
simple_switch_CLI; built --disable-logging-macros --disable-elogger, 3.5x faster)
and p4c (bmv2 and p4test backends), with Debian 12's own protobuf 3.21, gRPC 1.51,
thrift and boost, which the first step installs with apt (needs root).
Versions: $VERSIONS_FILE (one place; make doctor and meta.json read it too).

Steps, with their typical wall time on 2 cores (make -j$JOBS):
$(for s in "${STEPS[@]}"; do printf '  %-8s %-9s %s\n' "$s" "~$(fmt_dur "${TYPICAL[$s]}")" "${DESC[$s]}"; done)
  total    ~$(fmt_dur "$(typical_total)")
$(tofino_on || printf '  %-8s %-9s %s\n' tofino "~$(fmt_dur "${TYPICAL[tofino]}")" "${DESC[tofino]}")

Options (each also settable as an environment variable / make variable):
  --prefix DIR     install prefix (PREFIX; default /opt/p4)
  --sources DIR    build from local checkouts instead of upstream git (P4_SOURCES)
  --work-dir DIR   sources, builds, logs and stamps (TOOLCHAIN_WORK_DIR;
                   default /var/tmp/iwlab-toolchain; never inside the repository)
  --jobs N         parallel compile jobs (JOBS; default 2; p4c needs ~3 GB per job)
  --dry-run, -n    print the steps and what each would do, compile nothing
  --status         which steps are done (and for which pinned versions)
  --help, -h       this text
  TOFINO=1         also build p4c $V_P4C_TOFINO_REF's open-source Tofino backend (step tofino, last):
                   the bf-p4c driver in PREFIX/tofino/bin (tools/p4env.sh puts it on PATH),
                   --target tofino --arch tna and --target tofino2 --arch t2na; its own
                   protobuf $V_PROTOBUF_REF and abseil $V_ABSEIL_REF (static), Debian's Z3 and
                   libgc, the local fixes in tools/p4c-tofino.patch, and a Python venv
                   (WORK_DIR/venv-tofino, packages from PyPI) for its build tools
  TESTGEN=1        with TOFINO=1, also build that p4c's P4Testgen with its Tofino target (step
                   testgen, last): p4testgen in PREFIX/tofino/bin (tests/test_tofino_testgen.py)

Offline machines: P4_SOURCES=DIR names git checkouts (clones; any branch checked
out; they must contain the pinned commits), one directory per repository:
  DIR/p4c               https://github.com/p4lang/p4c              (tag $V_P4C_REF)
  DIR/behavioral-model  https://github.com/p4lang/behavioral-model (tag $V_BMV2_REF)
  DIR/PI                https://github.com/p4lang/PI               ($V_PI_REF)
  DIR/p4runtime         https://github.com/p4lang/p4runtime        (for p4c and PI's proto/p4runtime)
  DIR/gnmi              https://github.com/openconfig/gnmi         (PI's proto/openconfig/gnmi)
  DIR/uthash            https://github.com/troydhanson/uthash      (PI's third_party/uthash)
  DIR/googletest        https://github.com/google/googletest       (PI's third_party/googletest)
With TOFINO=1 also (the p4c checkout must contain tag $V_P4C_TOFINO_REF):
  DIR/protobuf          https://github.com/protocolbuffers/protobuf (tag $V_PROTOBUF_REF)
  DIR/abseil-cpp        https://github.com/abseil/abseil-cpp        (tag $V_ABSEIL_REF)
  DIR/spdlog            https://github.com/gabime/spdlog            (tag $V_SPDLOG_REF)
With TESTGEN=1 also:
  DIR/inja              https://github.com/pantor/inja              ($V_INJA_COMMIT)
PI's submodules are filled from these checkouts; nothing is downloaded from git.

Idempotent and resumable: a finished step leaves \$WORK_DIR/stamps/<step>, keyed by
the pinned versions, prefix and flags; a rerun skips it and redoes a step whose
pins changed (and the steps after it). Each step's full log: \$WORK_DIR/logs/<step>.log.
EOF
}

fmt_dur() { local s=$1; if ((s >= 60)); then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi; }
typical_total() { local t=0 s; for s in "${STEPS[@]}"; do t=$((t + TYPICAL[$s])); done; echo "$t"; }

# --- pinned versions --------------------------------------------------------------
read_versions() {
    [ -r "$VERSIONS_FILE" ] || die "versions file $VERSIONS_FILE not found"
    local line n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        case "$line" in ''|'#'*) continue ;; esac
        [[ $line =~ ^([A-Z][A-Z0-9_]*)=([^[:space:]]+)$ ]] || die "$VERSIONS_FILE:$n: not KEY=VALUE: $line"
        printf -v "V_${BASH_REMATCH[1]}" '%s' "${BASH_REMATCH[2]}"
    done < "$VERSIONS_FILE"
    local k
    for k in P4C BMV2 PI P4RUNTIME PI_SUB_P4RUNTIME PI_SUB_GNMI PI_SUB_UTHASH PI_SUB_GOOGLETEST "${TOFINO_KEYS[@]}" \
             "${TESTGEN_KEYS[@]}"; do
        for f in REPO COMMIT DIR; do
            local v="V_${k}_$f"
            [ -n "${!v:-}" ] || die "$VERSIONS_FILE: ${k}_$f is missing"
        done
    done
    [ -n "${V_TOFINO_PIP:-}" ] || die "$VERSIONS_FILE: TOFINO_PIP is missing"
}
PI_SUBS=(PI_SUB_P4RUNTIME PI_SUB_GNMI PI_SUB_UTHASH PI_SUB_GOOGLETEST)
TOFINO_KEYS=(P4C_TOFINO PROTOBUF ABSEIL P4RUNTIME_TOFINO SPDLOG)
TESTGEN_KEYS=(INJA)

tofino_on() { [ "$TOFINO" = 1 ]; }
testgen_on() { [ "$TESTGEN" = 1 ]; }
# TOFINO=1 appends the step tofino (after finish: the rest of the toolchain is complete even if it fails)
setup_tofino() {
    case "$TOFINO" in
        ''|0) TOFINO=0 ;;
        1) STEPS+=(tofino) ;;
        *) die "TOFINO=$TOFINO: want 1 (also build the Tofino backend, bf-p4c) or 0" ;;
    esac
    case "$TESTGEN" in
        ''|0) TESTGEN=0 ;;
        1) tofino_on || die "TESTGEN=1 needs TOFINO=1: P4Testgen's Tofino target is built from the Tofino backend's p4c"
           STEPS+=(testgen) ;;
        *) die "TESTGEN=$TESTGEN: want 1 (also build P4Testgen, p4testgen) or 0" ;;
    esac
}

# --- arguments --------------------------------------------------------------------
need_arg() { [ $# -ge 2 ] && [ -n "$2" ] || die "option $1 needs a value (see --help)"; }
parse_args() {
    while [ $# -gt 0 ]; do
        case "$1" in
            -h|--help) MODE=help ;;
            -n|--dry-run) MODE=dry-run ;;
            --status) MODE=status ;;
            --prefix) need_arg "$@"; PREFIX=$2; shift ;;
            --prefix=*) PREFIX=${1#*=} ;;
            --sources) need_arg "$@"; P4_SOURCES=$2; shift ;;
            --sources=*) P4_SOURCES=${1#*=} ;;
            --work-dir) need_arg "$@"; WORK_DIR=$2; shift ;;
            --work-dir=*) WORK_DIR=${1#*=} ;;
            --jobs|-j) need_arg "$@"; JOBS=$2; shift ;;
            --jobs=*) JOBS=${1#*=} ;;
            *) die "unknown option '$1' (tools/toolchain.sh --help lists the options)" ;;
        esac
        shift
    done
    [[ $JOBS =~ ^[1-9][0-9]*$ ]] || die "--jobs wants a positive number, not '$JOBS'"
    [ -n "$PREFIX" ] || die "PREFIX is empty"
}

inside_repo() { local p; p=$(realpath -m "$1"); [[ $p == "$REPO_ROOT" || $p == "$REPO_ROOT"/* ]]; }

check_paths() {
    PREFIX=$(realpath -m "$PREFIX")
    WORK_DIR=$(realpath -m "$WORK_DIR")
    inside_repo "$WORK_DIR" && die "work directory $WORK_DIR is inside the repository $REPO_ROOT; p4lang sources and builds stay outside it (--work-dir DIR)"
    inside_repo "$PREFIX" && die "prefix $PREFIX is inside the repository $REPO_ROOT; install outside it (--prefix DIR)"
    if [ -n "$P4_SOURCES" ]; then
        P4_SOURCES=$(realpath -m "$P4_SOURCES")
        [ -d "$P4_SOURCES" ] || die "P4_SOURCES=$P4_SOURCES: no such directory (see --help for the layout it needs)"
        local missing=() k d keys=(P4C BMV2 PI P4RUNTIME "${PI_SUBS[@]}")
        tofino_on && keys+=("${TOFINO_KEYS[@]}")
        testgen_on && keys+=("${TESTGEN_KEYS[@]}")
        for k in "${keys[@]}"; do
            d="V_${k}_DIR"; d=$P4_SOURCES/${!d}
            local r="V_${k}_REPO"
            if ! git -C "$d" rev-parse --git-dir >/dev/null 2>&1; then
                case " ${missing[*]-} " in *" $d "*) ;; *) missing+=("$d (a git checkout of ${!r})") ;; esac
            fi
        done
        if ((${#missing[@]})); then
            printf '[toolchain] error: P4_SOURCES=%s lacks these checkouts:\n' "$P4_SOURCES" >&2
            printf '[toolchain]   %s\n' "${missing[@]}" >&2
            printf '[toolchain] (tools/toolchain.sh --help shows the layout)\n' >&2
            exit 2
        fi
    fi
}

src_url() { # KEY -> where to clone it from
    local r="V_${1}_REPO" d="V_${1}_DIR"
    if [ -n "$P4_SOURCES" ]; then echo "$P4_SOURCES/${!d}"; else echo "${!r}"; fi
}

# --- stamps -----------------------------------------------------------------------
step_key() {
    local s=$1
    case "$s" in
        deps) echo "deps ${APT_PACKAGES[*]}" ;;
        sources) echo "sources $V_P4C_COMMIT $V_BMV2_COMMIT $V_PI_COMMIT $V_P4RUNTIME_COMMIT" \
                      "$V_PI_SUB_P4RUNTIME_COMMIT $V_PI_SUB_GNMI_COMMIT $V_PI_SUB_UTHASH_COMMIT $V_PI_SUB_GOOGLETEST_COMMIT" ;;
        pi) echo "pi $V_PI_COMMIT $V_PI_SUB_P4RUNTIME_COMMIT $V_PI_SUB_GNMI_COMMIT prefix=$PREFIX ${PI_FLAGS[*]}" ;;
        bmv2) echo "bmv2 $V_BMV2_COMMIT prefix=$PREFIX ${BMV2_FLAGS[*]} [$(step_key pi)]" ;;
        p4c) echo "p4c $V_P4C_COMMIT $V_P4RUNTIME_COMMIT prefix=$PREFIX ${P4C_FLAGS[*]}" ;;
        finish) echo "finish [$(step_key bmv2)] [$(step_key p4c)] pins=$(pins_hash)" ;;
        tofino) echo "tofino $V_P4C_TOFINO_COMMIT $V_PROTOBUF_COMMIT $V_ABSEIL_COMMIT $V_P4RUNTIME_TOFINO_COMMIT" \
                     "$V_SPDLOG_COMMIT patch=$(file_hash "$TOFINO_PATCH") pip=$V_TOFINO_PIP prefix=$PREFIX/tofino" \
                     "${P4C_TOFINO_FLAGS[*]}" ;;
        testgen) echo "testgen $V_INJA_COMMIT ${TESTGEN_FLAGS[*]} [$(step_key tofino)]" ;;
    esac
}
file_hash() { if [ -r "$1" ]; then sha256sum < "$1" | cut -c1-16; else echo missing; fi; }
# finish records the pins in PREFIX/share/iwlab (make doctor compares them): redone when any pin changes
pins_hash() { grep -v '^#' "$VERSIONS_FILE" | grep . | sha256sum | cut -c1-16; }
# What a step leaves in the prefix: a stamp whose product is gone is not done.
step_product() {
    case "$1" in
        pi) echo "$PREFIX/lib/libpi.so" ;;
        bmv2) echo "$PREFIX/bin/simple_switch_grpc" ;;
        p4c) echo "$PREFIX/bin/p4c-bm2-ss" ;;
        tofino) echo "$PREFIX/tofino/bin/bf-p4c" ;;
        testgen) echo "$PREFIX/tofino/bin/p4testgen" ;;
        *) echo "" ;;
    esac
}
stamp_file() { echo "$WORK_DIR/stamps/$1"; }
# done | stale | missing | gone
step_state() {
    local f; f=$(stamp_file "$1")
    [ -f "$f" ] || { echo missing; return; }
    [ "$(cat "$f")" = "$(step_key "$1")" ] || { echo stale; return; }
    local p; p=$(step_product "$1")
    if [ -n "$p" ] && [ ! -e "$p" ]; then echo gone; return; fi
    echo done
}

# --- the steps ----------------------------------------------------------------------
apt_missing() { # [PACKAGE...] (default: APT_PACKAGES) -> those not installed
    local p out=()
    (($#)) || set -- "${APT_PACKAGES[@]}"
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || out+=("$p")
    done
    echo "${out[*]-}"
}

do_deps() {
    local missing; missing=$(apt_missing)
    if [ -z "$missing" ]; then echo "all build dependencies present"; return 0; fi
    echo "missing: $missing"
    [ "$(id -u)" -eq 0 ] || { echo "installing Debian packages needs root: run 'sudo make toolchain' (or apt-get install $missing)"; return 1; }
    export DEBIAN_FRONTEND=noninteractive
    apt-get -o DPkg::Lock::Timeout=600 update
    # shellcheck disable=SC2086
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $missing
}

# DEST's tracked files are as committed, or (with PATCH) as committed plus exactly PATCH
tree_is_pinned() {
    local dest=$1 patch=${2:-}
    [ -z "$(git -C "$dest" status --porcelain --untracked-files=no)" ] && return 0
    [ -n "$patch" ] || return 1
    [ "$(git -C "$dest" diff --name-only HEAD | sort)" = "$(sed -n 's|^+++ b/||p' "$patch" | sort)" ] \
        && git -C "$dest" apply -R --check "$patch" 2>/dev/null
}

# clone (or reuse) a checkout of KEY at its pinned commit in DEST; with PATCH, a checkout that
# has PATCH applied (and nothing else changed) is reused as it is (no rebuild of what it touches)
checkout() {
    local key=$1 dest=$2 patch=${3:-} url commit ref
    url=$(src_url "$key"); commit="V_${key}_COMMIT"; commit=${!commit}
    ref="V_${key}_REF"; ref=${!ref:-}
    if ! git -C "$dest" rev-parse --git-dir >/dev/null 2>&1; then
        rm -rf "$dest.part"
        git clone --no-checkout "$url" "$dest.part"
        mv "$dest.part" "$dest"
    fi
    git -C "$dest" cat-file -e "$commit^{commit}" 2>/dev/null || git -C "$dest" fetch --tags origin
    git -C "$dest" cat-file -e "$commit^{commit}" 2>/dev/null \
        || { echo "$key: commit $commit not found in $url"; return 1; }
    if [ -n "$ref" ] && [ "$ref" != "$commit" ]; then
        local got
        got=$(git -C "$dest" rev-parse -q --verify "refs/tags/$ref^{commit}" || true)
        [ -z "$got" ] || [ "$got" = "$commit" ] \
            || { echo "$key: tag $ref is $got in $url, but $VERSIONS_FILE pins $commit"; return 1; }
    fi
    if [ "$(git -C "$dest" rev-parse HEAD 2>/dev/null)" != "$commit" ] || ! tree_is_pinned "$dest" "$patch"; then
        if ! git -C "$dest" checkout -q --detach -f "$commit"; then
            # Snapshots of large repositories sometimes lack big files (p4c's
            # docs/*.pptx): leave out exactly the files whose contents are absent.
            local absent
            absent=$(git -C "$dest" ls-tree -r "$commit" | awk '$2 == "blob" {print $3, $4}' \
                | git -C "$dest" cat-file --batch-check='%(objectname) %(rest)' | awk '$2 == "missing" {print $1}' \
                | while read -r sha; do git -C "$dest" ls-tree -r "$commit" | awk -v s="$sha" '$3 == s {print $4}'; done)
            [ -n "$absent" ] || return 1
            echo "warning: $url lacks the contents of these files; checked out without them:"
            echo "$absent" | sed 's/^/  /'
            git -C "$dest" config core.sparseCheckout true
            local sparse; sparse=$(cd "$dest" && realpath -m "$(git rev-parse --git-path info/sparse-checkout)")
            mkdir -p "$(dirname "$sparse")"
            { echo '/*'; echo "$absent" | sed 's|^|!/|'; } > "$sparse"
            git -C "$dest" checkout -q --detach -f "$commit"
        fi
        git -C "$dest" clean -q -fdx   # a different commit: no stale build products
    fi
    echo "$key: $dest at $commit"
}

do_sources() {
    mkdir -p "$WORK_DIR/src"
    checkout P4C "$WORK_DIR/src/$V_P4C_DIR"
    checkout BMV2 "$WORK_DIR/src/$V_BMV2_DIR"
    checkout P4RUNTIME "$WORK_DIR/src/p4runtime-for-p4c"
    checkout PI "$WORK_DIR/src/$V_PI_DIR"
    local pi=$WORK_DIR/src/$V_PI_DIR k path url commit paths=()
    for k in "${PI_SUBS[@]}"; do
        path="V_${k}_PATH"; path=${!path}; paths+=("$path")
        url=$(src_url "$k")
        git -C "$pi" submodule init -- "$path"
        git -C "$pi" config "submodule.$path.url" "$url"
    done
    git -C "$pi" -c protocol.file.allow=always submodule update --force -- "${paths[@]}"
    for k in "${PI_SUBS[@]}"; do
        path="V_${k}_PATH"; path=${!path}; commit="V_${k}_COMMIT"; commit=${!commit}
        [ "$(git -C "$pi/$path" rev-parse HEAD)" = "$commit" ] \
            || { echo "PI's $path is at $(git -C "$pi/$path" rev-parse HEAD), $VERSIONS_FILE pins $commit"; return 1; }
        echo "PI/$path at $commit"
    done
}

build_env() {
    export PATH="$PREFIX/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    unset PYTHONPATH VIRTUAL_ENV PYTHONHOME
    export PYTHON=/usr/bin/python3
    export CPPFLAGS="-I$PREFIX/include"
    export LDFLAGS="-L$PREFIX/lib -Wl,-rpath,$PREFIX/lib"
    export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
    mkdir -p "$PREFIX"
}

do_pi() {
    build_env
    cd "$WORK_DIR/src/$V_PI_DIR"
    ./autogen.sh
    ./configure --prefix="$PREFIX" "${PI_FLAGS[@]}"
    make -j"$JOBS"
    make install
}

do_bmv2() {
    build_env
    cd "$WORK_DIR/src/$V_BMV2_DIR"
    ./autogen.sh
    ./configure --prefix="$PREFIX" "${BMV2_FLAGS[@]}"
    make -j"$JOBS"
    make install
    test -x "$PREFIX/bin/simple_switch_grpc"
}

do_p4c() {
    build_env
    mkdir -p "$WORK_DIR/build/p4c"
    cd "$WORK_DIR/build/p4c"
    cmake "$WORK_DIR/src/$V_P4C_DIR" -DCMAKE_INSTALL_PREFIX="$PREFIX" "${P4C_FLAGS[@]}" \
        -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME="$WORK_DIR/src/p4runtime-for-p4c"
    make -j"$JOBS"
    make install
}

do_finish() {
    build_env
    if [ "$(id -u)" -eq 0 ] && [ -d /etc/ld.so.conf.d ]; then
        echo "$PREFIX/lib" > /etc/ld.so.conf.d/iwlab-p4.conf
        ldconfig
    else
        echo "not root: no ldconfig (the binaries carry an rpath to $PREFIX/lib)"
    fi
    # what was installed, for make doctor and meta.json
    mkdir -p "$PREFIX/share/iwlab"
    { echo "# installed by iwlab tools/toolchain.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ)"; grep -v '^#' "$VERSIONS_FILE" | grep .; } \
        > "$PREFIX/share/iwlab/toolchain.versions"
    local t; t=$(mktemp -d)
    cat > "$t/smoke.p4" <<'P4'
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser P(packet_in p, out headers_t h, inout meta_t m, inout standard_metadata_t s) {
    state start { p.extract(h.eth); transition accept; } }
control VC(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t s) {
    action fwd(bit<9> port) { s.egress_spec = port; }
    table t { key = { s.ingress_port : exact; } actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { t.apply(); } }
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t s) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out p, in headers_t h) { apply { p.emit(h.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
P4
    "$PREFIX/bin/p4c-bm2-ss" --arch v1model --std p4-16 -o "$t/smoke.json" --p4runtime-files "$t/smoke.p4info.txtpb" "$t/smoke.p4"
    "$PREFIX/bin/p4c-bm2-ss" --version
    "$PREFIX/bin/p4test" --version
    "$PREFIX/bin/simple_switch_grpc" --version
    "$PREFIX/bin/simple_switch_grpc" --help > "$t/help.txt" 2>&1 || true
    grep -q -- "--grpc-server-addr" "$t/help.txt" || { cat "$t/help.txt"; echo "simple_switch_grpc --help does not show its gRPC options"; return 1; }
    "$PREFIX/bin/simple_switch_CLI" --help > /dev/null
    rm -rf "$t"
    echo "smoke test passed"
}

# --- TOFINO=1: p4c's open-source Tofino backend ---------------------------------------------
tofino_src() { echo "$WORK_DIR/src/p4c-tofino"; }
tofino_cmake_args() { # one per line
    printf '%s\n' "-DCMAKE_INSTALL_PREFIX=$PREFIX/tofino" "${P4C_TOFINO_FLAGS[@]}" \
        "-DFETCHCONTENT_SOURCE_DIR_PROTOBUF=$WORK_DIR/src/$V_PROTOBUF_DIR" \
        "-DFETCHCONTENT_SOURCE_DIR_ABSEIL=$WORK_DIR/src/$V_ABSEIL_DIR" \
        "-DFETCHCONTENT_SOURCE_DIR_P4RUNTIME=$WORK_DIR/src/p4runtime-for-p4c-tofino"
}
# Its build runs Python tools that need PyPI packages (jsonschema; pyinstaller and jsl package
# p4c-build-logs, which bf-p4c -g runs): a venv of their own, first on PATH during the build.
# Nothing else from PREFIX: this p4c is separate from the one in PREFIX/bin.
tofino_env() {
    export PATH="$WORK_DIR/venv-tofino/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    unset PYTHONPATH VIRTUAL_ENV PYTHONHOME CPPFLAGS LDFLAGS CFLAGS CXXFLAGS PKG_CONFIG_PATH
    export PYTHON=/usr/bin/python3
}

tofino_venv() {
    local venv=$WORK_DIR/venv-tofino pkgs p missing=0
    IFS=, read -r -a pkgs <<< "$V_TOFINO_PIP"
    # a venv without pip (its creation was killed half-way) is made again, or every resume fails here
    if ! "$venv/bin/python3" -m pip --version >/dev/null 2>&1; then
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
    fi
    local have; have=$("$venv/bin/python3" -m pip freeze --disable-pip-version-check 2>/dev/null || true)
    for p in "${pkgs[@]}"; do grep -qixF -- "$p" <<< "$have" || missing=1; done
    if ((missing)); then
        "$venv/bin/python3" -m pip install --disable-pip-version-check "${pkgs[@]}"
    else
        echo "$venv has ${pkgs[*]}"
    fi
}

do_tofino() {
    local missing; missing=$(apt_missing "${TOFINO_APT_PACKAGES[@]}")
    if [ -n "$missing" ]; then
        [ "$(id -u)" -eq 0 ] || { echo "installing $missing needs root: sudo make toolchain TOFINO=1"; return 1; }
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends $missing
    fi
    [ -r "$TOFINO_PATCH" ] || { echo "$TOFINO_PATCH is missing"; return 1; }
    local src; src=$(tofino_src)
    mkdir -p "$WORK_DIR/src"
    checkout P4C_TOFINO "$src" "$TOFINO_PATCH"
    if git -C "$src" apply -R --check "$TOFINO_PATCH" 2>/dev/null; then
        echo "$TOFINO_PATCH: already applied"
    else
        git -C "$src" apply "$TOFINO_PATCH"
    fi
    # backends/tofino/cmake/spdlog.cmake takes spdlog from here when it is there (else: git download)
    checkout SPDLOG "$src/backends/tofino/third_party/spdlog"
    checkout PROTOBUF "$WORK_DIR/src/$V_PROTOBUF_DIR"
    checkout ABSEIL "$WORK_DIR/src/$V_ABSEIL_DIR"
    checkout P4RUNTIME_TOFINO "$WORK_DIR/src/p4runtime-for-p4c-tofino"
    tofino_venv
    tofino_env
    local args; mapfile -t args < <(tofino_cmake_args)
    mkdir -p "$WORK_DIR/build/p4c-tofino"
    cd "$WORK_DIR/build/p4c-tofino"
    cmake "$src" "${args[@]}"
    make -j"$JOBS"
    make install
    tofino_smoke
}

tofino_smoke() { # compile a small program for Tofino (tna) and Tofino 2 (t2na), with -g (the logs)
    local bf=$PREFIX/tofino/bin/bf-p4c t arch
    t=$(mktemp -d)
    "$bf" --version
    for arch in tna t2na; do smoke_program "$arch" > "$t/smoke_$arch.p4"; done
    "$bf" --target tofino --arch tna -g -o "$t/tofino" "$t/smoke_tna.p4"
    "$bf" --target tofino2 --arch t2na -g -o "$t/tofino2" "$t/smoke_t2na.p4"
    local f
    for f in tofino/pipe/logs/table_summary.log tofino/pipe/logs/mau.resources.log tofino/pipe/logs/resources.json \
             tofino2/pipe/logs/table_summary.log; do
        [ -s "$t/$f" ] || { ls -R "$t"; echo "bf-p4c -g did not write $f"; return 1; }
    done
    rm -rf "$t"
    echo "tofino smoke test passed: bf-p4c compiled a program for tofino (tna) and tofino2 (t2na)"
}

smoke_program() { # ARCH (tna or t2na): a small forwarding program
    local arch=$1
    cat <<P4
#include <core.p4>
#include <$arch.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
struct headers_t { ethernet_t eth; }
struct meta_t { }
parser IP(packet_in p, out headers_t h, out meta_t m, out ingress_intrinsic_metadata_t ig) {
    state start { p.extract(ig); p.advance(PORT_METADATA_SIZE); p.extract(h.eth); transition accept; } }
control I(inout headers_t h, inout meta_t m, in ingress_intrinsic_metadata_t ig,
          in ingress_intrinsic_metadata_from_parser_t prs, inout ingress_intrinsic_metadata_for_deparser_t dpr,
          inout ingress_intrinsic_metadata_for_tm_t tm) {
    action fwd(PortId_t port) { tm.ucast_egress_port = port; }
    table t { key = { h.eth.dst : exact; } actions = { fwd; NoAction; } default_action = NoAction(); size = 1024; }
    apply { t.apply(); } }
control ID(packet_out p, inout headers_t h, in meta_t m, in ingress_intrinsic_metadata_for_deparser_t dpr) {
    apply { p.emit(h.eth); } }
parser EP(packet_in p, out headers_t h, out meta_t m, out egress_intrinsic_metadata_t eg) {
    state start { p.extract(eg); p.extract(h.eth); transition accept; } }
control E(inout headers_t h, inout meta_t m, in egress_intrinsic_metadata_t eg,
          in egress_intrinsic_metadata_from_parser_t prs, inout egress_intrinsic_metadata_for_deparser_t dpr,
          inout egress_intrinsic_metadata_for_output_port_t oport) { apply { } }
control ED(packet_out p, inout headers_t h, in meta_t m, in egress_intrinsic_metadata_for_deparser_t dpr) {
    apply { p.emit(h.eth); } }
Pipeline(IP(), I(), ID(), EP(), E(), ED()) pipe;
Switch(pipe) main;
P4
}

# --- TESTGEN=1: P4Testgen with its Tofino target ----------------------------------------------
testgen_cmake_args() { # one per line: step tofino's, the test tools, and the local inja
    tofino_cmake_args
    printf '%s\n' "${TESTGEN_FLAGS[@]}" "-DFETCHCONTENT_SOURCE_DIR_INJA=$WORK_DIR/src/$V_INJA_DIR"
}

do_testgen() {
    checkout INJA "$WORK_DIR/src/$V_INJA_DIR"
    tofino_env
    local args; mapfile -t args < <(testgen_cmake_args)
    mkdir -p "$WORK_DIR/build/p4c-testgen"
    cd "$WORK_DIR/build/p4c-testgen"
    cmake "$(tofino_src)" "${args[@]}"
    make -j"$JOBS" p4testgen
    # only the binary: `make install` here would install this tree's bf-p4c, which it did not build
    install -D -m0755 backends/p4tools/modules/testgen/p4testgen "$PREFIX/tofino/bin/p4testgen"
    testgen_smoke
}

testgen_smoke() { # packet tests for a small program, Tofino 1 and 2 (it needs __TARGET_TOFINO__, as bf-p4c sets it)
    local tg=$PREFIX/tofino/bin/p4testgen t arch n
    t=$(mktemp -d)
    for arch in tna t2na; do
        smoke_program "$arch" > "$t/smoke_$arch.p4"
        local target=tofino define=1
        [ "$arch" = t2na ] && target=tofino2 define=2
        "$tg" --target "$target" --arch "$arch" "-D__TARGET_TOFINO__=$define" --max-tests 3 --seed 1 \
            --test-backend STF --out-dir "$t/$arch" "$t/smoke_$arch.p4"
        n=$(find "$t/$arch" -name '*.stf' | wc -l)
        ((n > 0)) || { echo "p4testgen wrote no test for $arch"; return 1; }
    done
    rm -rf "$t"
    echo "testgen smoke test passed: p4testgen wrote packet tests for tofino (tna) and tofino2 (t2na)"
}

fake_step() { # TOOLCHAIN_FAKE_STEPS=1: stands in for each step's commands (tests)
    echo "fake $1: $(step_key "$1")"
    if [ "$FAKE_FAIL" = "$1" ]; then
        for i in $(seq 1 40); do echo "fake $1 log line $i"; done
        echo "fake $1: failing as TOOLCHAIN_FAKE_FAIL asks"
        return 1
    fi
    local p; p=$(step_product "$1")
    if [ -n "$p" ]; then mkdir -p "$(dirname "$p")"; : > "$p"; fi
}

step_cmds() { # for --dry-run
    case "$1" in
        deps) local m; m=$(apt_missing); echo "apt-get install ${m:-(nothing: all ${#APT_PACKAGES[@]} packages present)}" ;;
        sources)
            echo "git clone $(src_url P4C) @ $V_P4C_REF ($V_P4C_COMMIT)"
            echo "git clone $(src_url BMV2) @ $V_BMV2_REF ($V_BMV2_COMMIT)"
            echo "git clone $(src_url P4RUNTIME) @ $V_P4RUNTIME_COMMIT (for p4c, instead of its FetchContent download)"
            echo "git clone $(src_url PI) @ $V_PI_COMMIT; submodules:"
            local k p u c
            for k in "${PI_SUBS[@]}"; do p="V_${k}_PATH"; c="V_${k}_COMMIT"; u=$(src_url "$k")
                echo "  ${!p} <- $u @ ${!c}"; done ;;
        pi) echo "cd $WORK_DIR/src/$V_PI_DIR && ./autogen.sh && ./configure --prefix=$PREFIX ${PI_FLAGS[*]} && make -j$JOBS && make install" ;;
        bmv2) echo "cd $WORK_DIR/src/$V_BMV2_DIR && ./autogen.sh && ./configure --prefix=$PREFIX ${BMV2_FLAGS[*]} && make -j$JOBS && make install" ;;
        p4c) echo "cmake $WORK_DIR/src/$V_P4C_DIR -DCMAKE_INSTALL_PREFIX=$PREFIX ${P4C_FLAGS[*]} -DFETCHCONTENT_SOURCE_DIR_P4RUNTIME=$WORK_DIR/src/p4runtime-for-p4c && make -j$JOBS && make install" ;;
        finish) echo "ldconfig ($PREFIX/lib); compile a small v1model program; simple_switch_grpc --help; simple_switch_CLI --help" ;;
        tofino)
            local m; m=$(apt_missing "${TOFINO_APT_PACKAGES[@]}")
            echo "apt-get install ${m:-(nothing: ${TOFINO_APT_PACKAGES[*]} present)}"
            echo "git clone $(src_url P4C_TOFINO) @ $V_P4C_TOFINO_REF ($V_P4C_TOFINO_COMMIT) into $(tofino_src);" \
                 "git apply $TOFINO_PATCH"
            echo "git clone $(src_url SPDLOG) @ $V_SPDLOG_REF into $(tofino_src)/backends/tofino/third_party/spdlog"
            echo "git clone $(src_url PROTOBUF) @ $V_PROTOBUF_REF, $(src_url ABSEIL) @ $V_ABSEIL_REF," \
                 "$(src_url P4RUNTIME_TOFINO) @ $V_P4RUNTIME_TOFINO_COMMIT (for its FetchContent)"
            echo "python3 -m venv $WORK_DIR/venv-tofino && pip install ${V_TOFINO_PIP//,/ }"
            echo "cmake $(tofino_src) $(tofino_cmake_args | tr '\n' ' ')&& make -j$JOBS && make install"
            echo "$PREFIX/tofino/bin/bf-p4c -g: a small program," \
                 "--target tofino --arch tna and --target tofino2 --arch t2na" ;;
        testgen)
            echo "git clone $(src_url INJA) @ $V_INJA_COMMIT (for its FetchContent)"
            echo "cmake $(tofino_src) $(testgen_cmake_args | tr '\n' ' ')&& make -j$JOBS p4testgen" \
                 "(in $WORK_DIR/build/p4c-testgen) && install it as $PREFIX/tofino/bin/p4testgen"
            echo "$PREFIX/tofino/bin/p4testgen: packet tests for a small program, tna and t2na" ;;
    esac
}

# --- running ------------------------------------------------------------------------
TICKER=
stop_ticker() { if [ -n "$TICKER" ]; then kill "$TICKER" 2>/dev/null || true; wait "$TICKER" 2>/dev/null || true; TICKER=; fi; }

run_step() {
    local i=$1 s=$2 n=${#STEPS[@]} state
    state=$(step_state "$s")
    if [ "$state" = done ]; then
        say "$i/$n $s: already done ($(stamp_file "$s")), skipped"
        return 0
    fi
    [ "$state" = stale ] && say "$i/$n $s: stamp is for other pinned versions or flags: redoing"
    [ "$state" = gone ] && say "$i/$n $s: stamp present but $(step_product "$s") is gone: redoing"
    rm -f "$(stamp_file "$s")"
    local log=$WORK_DIR/logs/$s.log typ=${TYPICAL[$s]} start
    start=$(date +%s)
    say "$i/$n $s: ${DESC[$s]} -- typical $(fmt_dur "$typ"), ETA $(date -d "@$((start + typ))" +%H:%M) (log: $log)"
    {
        echo "# $s started $(date -u +%Y-%m-%dT%H:%M:%SZ); key: $(step_key "$s")"
    } > "$log"
    # progress: rewritten in place on a terminal, a line every 5 minutes otherwise
    (
        trap 'kill "$nap" 2>/dev/null; exit 0' TERM
        while :; do
            sleep 5 & nap=$!; wait "$nap"
            local now el left
            now=$(date +%s); el=$((now - start)); left=$((typ - el))
            if [ -t 1 ]; then
                if ((left > 0)); then printf '\r[toolchain] %d/%d %s: %s elapsed, about %s left   ' "$i" "$n" "$s" "$(fmt_dur $el)" "$(fmt_dur $left)"
                else printf '\r[toolchain] %d/%d %s: %s elapsed (typical %s)   ' "$i" "$n" "$s" "$(fmt_dur $el)" "$(fmt_dur "$typ")"; fi
            elif ((el % 300 < 5)) && ((el >= 300)); then
                say "$i/$n $s: still running, $(fmt_dur $el) elapsed of typical $(fmt_dur "$typ")"
            fi
        done
    ) &
    TICKER=$!
    # (not `( ... ) || rc=$?`: that would switch off set -e inside the step)
    local rc=0
    set +e
    if [ "$FAKE" = 1 ]; then
        ( set -e; fake_step "$s" ) >> "$log" 2>&1
    else
        ( set -ex; "do_$s" ) >> "$log" 2>&1
    fi
    rc=$?
    set -e
    stop_ticker
    [ -t 1 ] && printf '\r\033[K'
    local el=$(( $(date +%s) - start ))
    if ((rc != 0)); then
        echo "# $s FAILED (exit $rc) after ${el}s" >> "$log"
        {
            say "$i/$n $s: FAILED after $(fmt_dur $el) (exit $rc). Last lines of $log:"
            tail -n 30 "$log" | sed 's/^/    | /'
            say "What to do: read $log, fix the cause (a missing package, the pins in $VERSIONS_FILE,"
            say "  disk space, P4_SOURCES), then run the same command again: finished steps are skipped"
            say "  and this one is redone. To redo it from a clean tree: rm -rf $WORK_DIR/src/<its checkout> first."
        } >&2
        exit 1
    fi
    step_key "$s" > "$(stamp_file "$s")"
    printf '%s\t%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$s" "$el" "$(nproc 2>/dev/null || echo ?)cpu" >> "$WORK_DIR/times.tsv"
    echo "# $s done in ${el}s" >> "$log"
    say "$i/$n $s: done in $(fmt_dur $el)"
}

show_status() {
    local i=0 s n=${#STEPS[@]}
    say "prefix $PREFIX, work directory $WORK_DIR${P4_SOURCES:+, sources $P4_SOURCES}"
    for s in "${STEPS[@]}"; do
        i=$((i + 1))
        local st; st=$(step_state "$s")
        case "$st" in
            done) say "$i/$n $s: done" ;;
            stale) say "$i/$n $s: stale (built for other pinned versions or flags; will be redone)" ;;
            gone) say "$i/$n $s: stale ($(step_product "$s") is gone; will be redone)" ;;
            *) say "$i/$n $s: not done" ;;
        esac
    done
}

main() {
    read_versions
    parse_args "$@"
    setup_tofino
    if [ "$MODE" = help ]; then usage; exit 0; fi
    check_paths
    case "$MODE" in
        status) show_status; exit 0 ;;
        dry-run)
            local i=0 s n=${#STEPS[@]} todo=0
            say "dry run: nothing is compiled or installed. prefix $PREFIX, work directory $WORK_DIR, make -j$JOBS"
            say "sources: ${P4_SOURCES:-upstream git (https://github.com/...)}"
            for s in "${STEPS[@]}"; do
                i=$((i + 1))
                local st; st=$(step_state "$s")
                if [ "$st" = done ]; then say "$i/$n $s: done, would skip"
                else
                    todo=$((todo + TYPICAL[$s]))
                    say "$i/$n $s: would run (typical $(fmt_dur "${TYPICAL[$s]}")): ${DESC[$s]}"
                    step_cmds "$s" | sed 's/^/[toolchain]       /'
                fi
            done
            say "would take about $(fmt_dur $todo) on 2 cores"
            tofino_on || say "(TOFINO=1 would add step tofino: p4c's open-source Tofino backend, bf-p4c)"
            tofino_on && ! testgen_on && say "(TESTGEN=1 would add step testgen: P4Testgen, p4testgen)"
            exit 0 ;;
    esac
    mkdir -p "$WORK_DIR/logs" "$WORK_DIR/stamps" || die "cannot create $WORK_DIR"
    exec 9> "$WORK_DIR/.lock"
    flock -n 9 || die "another toolchain build is running in $WORK_DIR"
    trap stop_ticker EXIT
    local t0 i=0 s todo=0
    t0=$(date +%s)
    for s in "${STEPS[@]}"; do [ "$(step_state "$s")" = done ] || todo=$((todo + TYPICAL[$s])); done
    say "building into $PREFIX (work directory $WORK_DIR, make -j$JOBS; sources: ${P4_SOURCES:-upstream git})"
    ((todo == 0)) || say "about $(fmt_dur $todo) to go on 2 cores, ETA $(date -d "@$((t0 + todo))" +%H:%M)"
    for s in "${STEPS[@]}"; do
        i=$((i + 1))
        run_step "$i" "$s"   # a later step's key includes what it builds on: redone when that changes
    done
    say "done in $(fmt_dur $(( $(date +%s) - t0 ))): $PREFIX/bin has p4c-bm2-ss, simple_switch_grpc, simple_switch_CLI."
    tofino_on && say "$PREFIX/tofino/bin has bf-p4c (--target tofino --arch tna, --target tofino2 --arch t2na)."
    testgen_on && say "$PREFIX/tofino/bin has p4testgen (P4Testgen, --target tofino / tofino2)."
    say "next: make build (compiles p4src/), make doctor, make test"
}

main "$@"; exit $?   # one line: bash has read it all before it runs (safe to edit this file meanwhile)
