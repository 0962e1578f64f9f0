#!/usr/bin/env bash
# make setup: idempotent. Debian/Ubuntu packages, the pinned Python virtual
# environment, and the P4 toolchain check (official p4lang packages where the
# distribution is supported and their source is reachable). Always exits 0
# when the parts everything else needs are in place; says what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/p4env.sh

say() { printf '[setup] %s\n' "$*"; }

APT_PACKAGES=(mininet iproute2 iputils-ping tcpdump ethtool python3-venv python3-dev python3-thrift
              build-essential procps psmisc
              clang libbpf-dev   # clang, libbpf-dev: the BPF programs (irto_s, client_window_bytes)
              linux-perf binutils)  # make bench's exact work per packet (uprobes on BMv2: experiments/bmv2_work.py)

# --- 1. Debian/Ubuntu packages --------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        say "missing packages: ${missing[*]} (run 'make setup' as root to install them)"
    else
        say "installing: ${missing[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
else
    say "system packages: present"
fi

# --- 2. Python virtual environment (pinned) -----------------------------------
# Debian's python3 has Mininet's Python package; the venv sees it through
# --system-site-packages, and the pins in requirements.txt take precedence.
PY=/usr/bin/python3
stamp=.venv/.requirements.sha256
# pip quiet when it works; when it fails, its whole output (not -q's silence) and a second try (a registry's
# hiccup: a first install once failed here with nothing printed, and the same command then succeeded).
pip_install() {
    local log try rc
    log=$(mktemp)
    for try in 1 2; do
        rc=0
        .venv/bin/python -m pip install --disable-pip-version-check "$@" >"$log" 2>&1 || rc=$?
        if [ "$rc" = 0 ]; then
            rm -f "$log"
            return 0
        fi
        echo "setup: pip install $* failed (try $try of 2, exit $rc); its output:" >&2
        tail -n 60 "$log" >&2
    done
    rm -f "$log"
    return 1
}
want=$(sha256sum requirements.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "creating .venv with pinned requirements"
    [ -x .venv/bin/python ] || "$PY" -m venv --system-site-packages .venv
    pip_install -r requirements.txt
    pip_install --no-deps --no-build-isolation -e .
    echo "$want" > "$stamp"
else
    say "python environment: up to date"
fi

# --- 2b. the project's native helper (userspace delay line) -----------------------
bash mininet/accessnet/build_native.sh && say "native helpers: build/delayline$([ -x build/irto-attach ] && echo ', build/irto.bpf.o, build/irto-attach, build/rwnd.bpf.o, build/rwnd-attach')$([ -x build/pion-rtc ] && echo ', build/pion-rtc')"

# --- 3. P4 toolchain -------------------------------------------------------------
have_p4() { command -v p4c-bm2-ss >/dev/null && command -v simple_switch_grpc >/dev/null; }
if have_p4; then
    say "P4 toolchain: $(command -v p4c-bm2-ss), $(command -v simple_switch_grpc)"
else
    . /etc/os-release 2>/dev/null || true
    obs=""
    case "${ID:-}-${VERSION_ID:-}" in
        ubuntu-22.04|ubuntu-24.04) obs="xUbuntu_${VERSION_ID}" ;;
        debian-12) obs="Debian_12" ;;
    esac
    url="https://download.opensuse.org/repositories/home:/p4lang/${obs}"
    if [ -n "$obs" ] && [ "$(id -u)" -eq 0 ] && command -v curl >/dev/null \
        && curl -fsS --max-time 10 -o /tmp/p4lang-release.key "$url/Release.key" 2>/dev/null; then
        say "installing p4lang's binary packages from $url"
        gpg --dearmor < /tmp/p4lang-release.key > /etc/apt/trusted.gpg.d/home_p4lang.gpg
        echo "deb $url/ /" > /etc/apt/sources.list.d/home:p4lang.list
        apt-get -o DPkg::Lock::Timeout=600 update -qq
        apt-get -o DPkg::Lock::Timeout=600 install -y -qq p4lang-p4c p4lang-bmv2 >/dev/null || true
    fi
    if have_p4; then
        say "P4 toolchain: installed"
    else
        cat <<MSG
[setup] P4 toolchain: MISSING (p4c-bm2-ss and simple_switch_grpc are not on PATH nor under
[setup]   \$P4_PREFIX/bin = $P4_PREFIX/bin${obs:+; the p4lang binary packages for $obs were not reachable}).
[setup]   To install it (pinned p4c, BMv2 with simple_switch_grpc, PI, from source; about 65 minutes
[setup]   on 2 cores; resumable):
[setup]       make toolchain
[setup]   (offline: make toolchain P4_SOURCES=<dir of git checkouts>; tools/toolchain.sh --help)
[setup]   Until then everything but P4 works: the reference model (refmodel/), the model tests,
[setup]   the controller's logic, the analysis; 'make mininet' runs with the reference model as the
[setup]   switch. Skipped: p4c compilation and the BMv2 tests.
MSG
    fi
fi
touch .setup-stamp
exit 0
