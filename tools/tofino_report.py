"""docs/tofino.md's resource tables, from the compiler's own reports.

    python tools/tofino_report.py BUILD_DIR DOC           (make build TARGET=tofino|tofino2 runs this)
    python tools/tofino_report.py --capacity TARGET ...   how many access links fit one pipe

The first form reads, for each target built (BUILD_DIR/tofino, BUILD_DIR/tofino2), bf-p4c's
pipe/logs/resources.json (per MAU stage: logical tables, SRAMs, TCAMs, map RAMs, stateful
ALUs), pipe/logs/metrics.json (PHV containers, latency in cycles) and table_summary.log (the
critical path through the table dependency graph), and rewrites the part of DOC between its two
marker lines. The second compiles the TNA program with N_LINKS = 2^k for growing k, into a
scratch directory, until bf-p4c fails; the largest that compiles, with the compiler's last
complaint, goes to docs/tofino-capacity.json, which the first form reports.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "p4src" / "tofino" / "bottleneck_tna.p4"
CAPACITY = ROOT / "docs" / "tofino-capacity.json"
TARGETS = {"tofino": "tna", "tofino2": "t2na"}
REPORTED = {**TARGETS, "tofino2-red": "t2na", "tofino2-iwa": "t2na"}   # the builds the resource table shows (make build TARGET=...)
BEGIN = "<!-- tools/tofino_report.py writes what follows, from the compiler's reports -->"
END = "<!-- end of tools/tofino_report.py's part -->"


def stage_usage(resources: dict) -> dict:
    """Totals over the MAU stages: used / available."""
    mau = resources["resources"]["mau"]
    stages = mau["mau_stages"]
    used = dict(stages=0, srams=0, tcams=0, map_rams=0, salus=0, logical_tables=0)
    avail = dict(stages=mau["nStages"], srams=0, tcams=0, map_rams=0, salus=0, logical_tables=0)
    for st in stages:
        n_tables = len(st["logical_tables"]["ids"])
        used["stages"] += n_tables > 0
        used["logical_tables"] += n_tables
        avail["logical_tables"] += st["logical_tables"]["size"]
        used["srams"] += len(st["rams"]["srams"])
        avail["srams"] += st["rams"]["nRows"] * st["rams"]["nColumns"]
        used["tcams"] += len(st["tcams"]["tcams"])
        avail["tcams"] += st["tcams"]["nRows"] * st["tcams"]["nColumns"]
        used["map_rams"] += len(st["map_rams"]["maprams"])
        avail["map_rams"] += st["map_rams"]["nRows"] * st["map_rams"]["nUnits"]
        used["salus"] += len(st["meter_alus"]["meters"])
        avail["salus"] += st["meter_alus"]["nAlus"]
    # stages the program does not reach are absent from the list: count their units as available
    missing = mau["nStages"] - len(stages)
    if stages and missing > 0:
        st = stages[0]
        avail["srams"] += missing * st["rams"]["nRows"] * st["rams"]["nColumns"]
        avail["tcams"] += missing * st["tcams"]["nRows"] * st["tcams"]["nColumns"]
        avail["map_rams"] += missing * st["map_rams"]["nRows"] * st["map_rams"]["nUnits"]
        avail["salus"] += missing * st["meter_alus"]["nAlus"]
        avail["logical_tables"] += missing * st["logical_tables"]["size"]
    return {"used": used, "avail": avail}


def critical_path(summary: str) -> dict:
    out = {}
    for key, pat in (("critical_path", r"Critical path length through the table dependency graph: (\d+)"),
                     ("ingress_stages", r"Number of stages for ingress table allocation: (\d+)"),
                     ("egress_stages", r"Number of stages for egress table allocation: (\d+)")):
        found = re.findall(pat, summary)   # the log holds every allocation bf-p4c tried: the last is the result
        if found:
            out[key] = int(found[-1])
    return out


def phv(metrics: dict) -> str:
    parts = []
    for kind in ("normal", "tagalong"):
        for c in metrics["phv"].get(kind, []):
            parts.append(f"{c['containers_occupied']}×{c['bit_width']}b" + (" tagalong" if kind == "tagalong" else ""))
    return ", ".join(parts)


def target_rows(build: Path) -> list[tuple[str, str]]:
    logs = build / "pipe" / "logs"
    res = json.loads((logs / "resources.json").read_text())
    metrics = json.loads((logs / "metrics.json").read_text())
    summary = (logs / "table_summary.log").read_text() if (logs / "table_summary.log").exists() else ""
    u = stage_usage(res)
    used, avail = u["used"], u["avail"]
    cp = critical_path(summary)
    lat = ", ".join(f"{x['gress']} {x['cycles']}" for x in metrics["mau"].get("latency", []))

    def frac(k: str) -> str:
        pct = 100 * used[k] / avail[k] if avail[k] else 0
        return f"{used[k]} / {avail[k]} ({pct:.0f} %)"

    return [
        ("bf-p4c's version in its reports", str(res.get("compiler_version", "?"))),
        ("MAU stages used (ingress, egress)",
         f"{cp.get('ingress_stages', '?')}, {cp.get('egress_stages', '?')} of {avail['stages']}"),
        ("critical path (table dependency graph)", f"{cp.get('critical_path', '?')} stages; latency {lat} cycles"),
        ("SRAM blocks", frac("srams")),
        ("TCAM blocks", frac("tcams")),
        ("map RAMs", frac("map_rams")),
        ("stateful ALUs", frac("salus")),
        ("logical tables", frac("logical_tables")),
        ("PHV containers", phv(metrics)),
    ]


def render(build_dir: Path) -> str:
    lines = []
    built = [t for t in REPORTED if (build_dir / t / "pipe" / "logs" / "resources.json").exists()]
    if not built:
        return "(no build found: `make build TARGET=tofino` and `tofino2` write this part)\n"
    rows = {t: dict(target_rows(build_dir / t)) for t in built}
    keys = list(next(iter(rows.values())))
    lines.append("| | " + " | ".join(f"{t} (`--arch {REPORTED[t]}`)" for t in built) + " |")
    lines.append("|---|" + "---|" * len(built))
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(rows[t].get(k, "") for t in built) + " |")
    lines.append("")
    lines.append(f"With N_LINKS = the program's default (p4src/tofino/bottleneck_tna.p4). Regenerated by "
                 f"`make build TARGET=...` on {time.strftime('%Y-%m-%d')}.")
    lines.append("")
    cap = json.loads(CAPACITY.read_text()) if CAPACITY.exists() else {}
    if cap:
        lines.append("Access links per pipe (`python tools/tofino_report.py --capacity tofino tofino2`: "
                     "N_LINKS = 2^k compiled for growing k until bf-p4c fails):")
        lines.append("")
        lines.append("| target | largest N_LINKS that compiles | the next one fails with |")
        lines.append("|---|---|---|")
        for t, c in cap.items():
            lines.append(f"| {t} | {c['largest']} | {c['failure']} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write_doc(build_dir: Path, doc: Path) -> None:
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        sys.exit(f"{doc}: the marker lines are missing ({BEGIN!r} ... {END!r})")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + BEGIN + "\n" + render(build_dir) + END + tail)
    print(f"{doc}: resource tables rewritten")


def compiles(target: str, k: int, scratch: Path) -> tuple[bool, str]:
    out = scratch / f"{target}-{k}"
    r = subprocess.run(["bf-p4c", "--target", target, "--arch", TARGETS[target], "-o", str(out),
                        f"-DN_LINKS={1 << k}", f"-DLINK_BITS={k}", str(PROGRAM)],
                       capture_output=True, text=True)
    errors = [ln.strip().replace(f"{ROOT}/", "") for ln in (r.stdout + r.stderr).splitlines()
              if "error" in ln.lower() and not re.match(r"\d+ errors?, \d+ warnings? generated", ln.strip())]
    shutil.rmtree(out, ignore_errors=True)
    return r.returncode == 0, (errors[0][:160] if errors else f"exit {r.returncode}")


def capacity(targets: list[str], first: int, last: int) -> None:
    if shutil.which("bf-p4c") is None:
        sys.exit("--capacity: bf-p4c is not on PATH (make toolchain TOFINO=1; tools/p4env.sh)")
    cap = json.loads(CAPACITY.read_text()) if CAPACITY.exists() else {}
    with tempfile.TemporaryDirectory() as d:
        for t in targets:
            largest, failure = None, f"none up to 2^{last}"
            for k in range(first, last + 1):
                t0 = time.monotonic()
                ok, why = compiles(t, k, Path(d))
                print(f"{t}: N_LINKS = 2^{k} = {1 << k}: {'fits' if ok else 'fails: ' + why} "
                      f"({time.monotonic() - t0:.0f} s)", flush=True)
                if not ok:
                    failure = f"2^{k} = {1 << k}: {why}"
                    break
                largest = 1 << k
            cap[t] = {"largest": largest, "failure": failure, "date": time.strftime("%Y-%m-%d")}
    CAPACITY.write_text(json.dumps(cap, indent=2) + "\n")
    print(f"{CAPACITY}: written")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", type=Path, default=ROOT / "build")
    ap.add_argument("doc", nargs="?", type=Path, default=ROOT / "docs" / "tofino.md")
    ap.add_argument("--capacity", nargs="+", choices=sorted(TARGETS), help="search N_LINKS for these targets")
    ap.add_argument("--first", type=int, default=12, help="smallest k tried (N_LINKS = 2^k)")
    ap.add_argument("--last", type=int, default=20, help="largest k tried")
    a = ap.parse_args(argv)
    if a.capacity:
        capacity(a.capacity, a.first, a.last)
    write_doc(a.build_dir, a.doc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
