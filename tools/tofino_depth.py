#!/usr/bin/env python3
"""How many MAU stages the TNA program's dependency chains need, in about a minute instead of a whole compile.

bf-p4c writes ``pipe/logs/table_dependency_graph.log`` early in a compile (before PHV allocation, which takes
most of the time), twice; its second "Maximum stage number according to dependences" is what table placement
will face, per gress. This starts bf-p4c, waits for that line, stops the compile and prints the numbers, so a
restructuring of a chain (docs/tofino.md: IWA's grant in egress) is measured before PHV and placement matter:

    python tools/tofino_depth.py -DWITH_IWA=1 -DWITH_CODEL=1 -DWITH_PIE=0 -DIWA_SLOT_BITS=15 -DIWA_GRANT_EGRESS=1

Tofino 2 (``--target tofino2 --arch t2na``) unless ``--target tofino``. A pass has 20 stages on Tofino 2, 12 on
Tofino 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tofino" / "bottleneck_tna.p4"
ARCH = {"tofino": "tna", "tofino2": "t2na"}
MARK = "Maximum stage number according to dependences"


def depths(log: str) -> list[dict[str, int]]:
    """Every "Maximum stage number" block of a table_dependency_graph.log: {gress: stages}, in order."""
    out = []
    for block in log.split(MARK)[1:]:
        out.append({g.lower(): int(n) for g, n in re.findall(r"^\s*(INGRESS|EGRESS|GHOST):\s*(\d+)", block[:200], re.M)})
    return out


def probe(target: str, defines: list[str], timeout_s: float = 600) -> dict[str, int]:
    """Compile until the second dependency graph is written, then stop; its depths."""
    bf = shutil.which("bf-p4c") or str(Path(os.environ.get("P4_PREFIX", "/opt/p4")) / "tofino" / "bin" / "bf-p4c")
    if not Path(bf).exists():
        raise FileNotFoundError("bf-p4c is not on PATH nor in $P4_PREFIX/tofino/bin (make toolchain TOFINO=1)")
    with tempfile.TemporaryDirectory(prefix="tofino-depth-") as tmp:
        log = Path(tmp) / "pipe" / "logs" / "table_dependency_graph.log"
        proc = subprocess.Popen([bf, "--target", target, "--arch", ARCH[target], *defines, "-g", "-o", tmp,
                                 str(PROGRAM)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        start, found = time.monotonic(), []
        try:
            while time.monotonic() - start < timeout_s:
                found = depths(log.read_text()) if log.exists() else []
                if len(found) >= 2 or proc.poll() is not None:
                    break
                time.sleep(2)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
            output = proc.communicate()[0]
        if not found:
            errors = [ln for ln in output.splitlines() if "error" in ln.lower()][:5]
            raise RuntimeError("bf-p4c stopped before its dependency graph: " + ("; ".join(errors) or "no error said"))
        return found[-1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", choices=sorted(ARCH), default="tofino2")
    a, defines = ap.parse_known_args(argv)
    try:
        d = probe(a.target, defines)
    except (OSError, RuntimeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(" ".join(f"{g} {n}" for g, n in d.items()), f"(a pass holds {20 if a.target == 'tofino2' else 12})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
