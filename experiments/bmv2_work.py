"""What BMv2 executes per packet, counted exactly: the deterministic side of `make bench`.

BMv2's CPU time per packet on this shared VM moves by tens of per cent from run to run; what the program
makes BMv2 do does not. This counts, per packet, the match-action tables applied (p4c-bm2-ss turns every
straight-line block of an apply body into a keyless table of its own), the `if` conditions evaluated, the
action primitives executed (each assignment, register access, counter update, ...) and the expressions
evaluated, with Linux uprobes on the four functions of simple_switch_grpc that do these things (`perf
probe`, `perf stat`). It also counts the metadata fields BMv2 zeroes for every packet it receives (every
field of the P4 metadata and every local variable and compiler temporary: the JSON's metadata headers).

Needs root and `perf`; the uprobes are removed again afterwards. Counting slows BMv2 (a trap per event),
so frames are offered slowly and counted once BMv2 has forwarded them all.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

GROUP = "iwlab_bmv2"
# probe name -> the start of the function's demangled signature in simple_switch_grpc (nm -C)
FUNCTIONS = {
    "tables": "bm::MatchActionTable::operator()(bm::Packet*) const",
    "conditions": "bm::Conditional::operator()(bm::Packet*) const",
    "primitives": "bm::ActionPrimitiveCall::execute(",
    "expressions": "bm::Expression::eval_(",
}


@dataclass(frozen=True)
class Work:
    """Events per packet."""
    tables: float
    conditions: float
    primitives: float
    expressions: float


def metadata_fields(bmv2_json: Path) -> int:
    """Fields BMv2 resets to 0 for each packet it receives: those of every metadata header in the JSON
    (p4c-bm2-ss puts the P4 metadata, every local variable and every temporary into 'scalars')."""
    j = json.loads(Path(bmv2_json).read_text())
    types = {t["name"]: t for t in j["header_types"]}
    return sum(len(types[h["header_type"]]["fields"]) for h in j["headers"] if h["metadata"])


def missing() -> str | None:
    """Why the counts cannot be taken here, or None."""
    if not shutil.which("perf"):
        return "perf not found (apt install linux-perf)"
    if not shutil.which("nm"):
        return "nm not found (apt install binutils)"
    if not any(Path(d, "uprobe_events").exists() for d in ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")):
        return "this kernel has no uprobes (no uprobe_events under /sys/kernel/tracing)"
    return None


def probe_addresses(binary: str) -> dict[str, int]:
    """Each probe's function address in ``binary`` (from its symbol table)."""
    out = subprocess.run(["nm", "-C", "--defined-only", binary], capture_output=True, text=True, check=True).stdout
    found: dict[str, int] = {}
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 3 or parts[1] not in ("T", "t"):
            continue
        for name, sig in FUNCTIONS.items():
            if parts[2].startswith(sig) and name not in found:
                found[name] = int(parts[0], 16)
    lost = sorted(set(FUNCTIONS) - set(found))
    if lost:
        raise RuntimeError(f"{binary}: no symbol for {', '.join(FUNCTIONS[n] for n in lost)} (stripped binary?)")
    return found


@contextmanager
def uprobes(binary: str) -> Iterator[list[str]]:
    """The four uprobes on ``binary`` (event names GROUP:name), removed on exit."""
    subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)
    events = []
    try:
        for name, addr in probe_addresses(binary).items():
            r = subprocess.run(["perf", "probe", "-q", "-x", binary, "-a", f"{GROUP}:{name}={addr:#x}"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"perf probe {name}: {r.stderr.strip()}")
            events.append(f"{GROUP}:{name}")
        yield events
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)


def parse_stat(text: str) -> dict[str, int]:
    """`perf stat -x,` output -> event name (without the group) -> count."""
    counts = {}
    for line in text.splitlines():
        cols = line.split(",")
        if len(cols) >= 3 and cols[2].startswith(f"{GROUP}:"):
            if not cols[0].strip().isdigit():
                raise RuntimeError(f"perf stat could not count {cols[2]}: {line.strip()}")
            counts[cols[2].split(":", 1)[1]] = int(cols[0])
    return counts


def count(pid: int, events: list[str], packets: int, drive: Callable[[], None], out: Path) -> Work:
    """Events per packet while ``drive()`` makes BMv2 (process ``pid``) handle ``packets`` packets
    (``drive`` returns once BMv2 has handled them all)."""
    perf = subprocess.Popen(["perf", "stat", "-x,", "-e", ",".join(events), "-p", str(pid), "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.3)   # perf attaches
        drive()
    finally:
        perf.send_signal(2)
        perf.wait(timeout=10)
    c = parse_stat(out.read_text())
    if set(c) != {e.split(":", 1)[1] for e in events}:
        raise RuntimeError(f"perf stat counted only {sorted(c)}: {out}")
    return Work(*(c[name] / packets for name in FUNCTIONS))
