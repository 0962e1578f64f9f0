# Sourced by the Makefile's shell steps: puts the P4 toolchain on PATH.
# The toolchain is found on PATH or under $P4_PREFIX/bin (default /opt/p4); the Tofino
# compiler bf-p4c (make toolchain TOFINO=1) under $P4_PREFIX/tofino/bin when it is there.
P4_PREFIX="${P4_PREFIX:-/opt/p4}"
export P4_PREFIX
case ":$PATH:" in *":$P4_PREFIX/bin:"*) ;; *) PATH="$PATH:$P4_PREFIX/bin" ;; esac
if [ -d "$P4_PREFIX/tofino/bin" ]; then
    case ":$PATH:" in *":$P4_PREFIX/tofino/bin:"*) ;; *) PATH="$PATH:$P4_PREFIX/tofino/bin" ;; esac
fi
export PATH
