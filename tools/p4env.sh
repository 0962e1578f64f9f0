# Sourced by the Makefile's shell steps: puts the P4 toolchain on PATH.
# The toolchain is found on PATH or under $P4_PREFIX/bin (default /opt/p4).
P4_PREFIX="${P4_PREFIX:-/opt/p4}"
export P4_PREFIX
case ":$PATH:" in *":$P4_PREFIX/bin:"*) ;; *) PATH="$PATH:$P4_PREFIX/bin" ;; esac
export PATH
