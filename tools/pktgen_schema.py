#!/usr/bin/env python3
"""Write controller/pktgen_schema.json: the names, types and sizes of the packet generator's BF-Runtime tables
(the fixed tables ``tf1.pktgen.*`` and ``tf2.pktgen.*``), read from the SDE's own description of them.

The generator is not part of a P4 program, so bf-p4c's bf-rt.json does not describe it: the driver does, in
``pkgsrc/bf-drivers/src/bf_rt/bf_rt_pktgen/bf_rt_pktgen_tf{1,2}.json`` of p4lang/open-p4studio. This keeps only
what a client's writes are checked against (controller/pktgen.py: ``check_writes``), so CI needs no SDE:

    python tools/pktgen_schema.py OPEN_P4STUDIO_CHECKOUT [--out controller/pktgen_schema.json]

``tests/test_tofino_pktgen.py`` compares the committed file with a fresh extraction where a checkout is given
(``OPEN_P4STUDIO=DIR``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

SOURCE_DIR = "pkgsrc/bf-drivers/src/bf_rt/bf_rt_pktgen"
FILES = {"tofino": "bf_rt_pktgen_tf1.json", "tofino2": "bf_rt_pktgen_tf2.json"}
OUT = Path(__file__).resolve().parents[1] / "controller" / "pktgen_schema.json"


def _type(t: dict) -> dict:
    out = {"type": t["type"]}
    if "width" in t:
        out["width"] = t["width"]
    if "choices" in t:
        out["choices"] = list(t["choices"])
    return out


def table_schema(t: dict) -> dict:
    """One table: its key fields, data fields (``repeated``: a list), actions with their data, size, APIs."""
    data = {}
    for d in t.get("data", []):
        f = d.get("singleton", d)
        data[f["name"]] = {**_type(f["type"]), "repeated": bool(f.get("repeated")),
                           "read_only": bool(d.get("read_only"))}
    return {
        "size": t.get("size"),
        "keys": {k["name"]: _type(k["type"]) for k in t.get("key", [])},
        "data": data,
        "actions": {a["name"]: {f["name"]: _type(f["type"]) for f in a.get("data", [])}
                    for a in t.get("action_specs", [])},
        "apis": sorted(t.get("supported_apis", {})),
    }


def extract(root: Path) -> dict:
    """The schema of both targets from an open-p4studio checkout at ``root``."""
    out: dict = {"source": {"repository": "p4lang/open-p4studio", "path": SOURCE_DIR}}
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        out["source"]["commit"] = commit
    except (OSError, subprocess.CalledProcessError):
        pass
    for target, name in FILES.items():
        path = root / SOURCE_DIR / name
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not there (an open-p4studio checkout holds {SOURCE_DIR}/{name})")
        tables = json.loads(path.read_text())["tables"]
        out[target] = {t["name"]: table_schema(t) for t in tables}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path, help="an open-p4studio checkout (its bf_rt_pktgen directory at least)")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    try:
        schema = extract(a.checkout)
    except (OSError, ValueError, KeyError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    a.out.write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
    print(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
