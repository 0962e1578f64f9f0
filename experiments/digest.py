"""Replication digests: what the held-out tables read of a finished replication, in one small JSON file.

A sweep too long for one session (``iwa-eval``: about 400 replications, five hours on one 2-core machine) runs
in parts, on different days and machines, and results/ does not survive a machine. So each part's
replications are digested into ``experiments/data/<sweep>/<case>/rep<k>.json`` and kept in git: meta.json as
the run wrote it, ``metrics.summarize_rep``'s summary (every BRIEF metric at the standard jitter buffers) and
flows.csv's rows (a web user's pages). ``experiments.cases.load_cases`` reads a directory of digests as it reads
a run directory, so ``python -m experiments.iwa_table experiments/data/iwa-eval`` builds the table from every
part measured so far; the next part skips what is digested (``accessnet.sweep --skip-digested DIR``).

A digest keeps no per-packet data: tables of means over replications work from it, figures of packets need
the run directory itself. Where the replication has the switch's telemetry, the digest's summary also holds
``single_bottleneck``: ``experiments.bottleneck_check``'s statistics of the audio's delay beyond the sojourn
the switch predicted for it (what the host, not the modelled queue, added), so a table can tell a replication
that measured the machine from one that measured the AQM.

``python -m experiments.digest RUN_DIR [RUN_DIR ...] --into experiments/data/<sweep> [--replace]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from accessnet.record import DIGEST_SUFFIX as SUFFIX
from accessnet.record import digest_path

from .base import MetricsError
from .bottleneck_check import summary as single_bottleneck
from .metrics import JITTER_BUFFERS_MS, audio_packets, find_reps, summarize_packets

FORMAT = 1  # the digest's layout; a reader refuses others
__all__ = ["FORMAT", "SUFFIX", "digest_meta", "digest_path", "find_digests", "make_digest", "read_digest",
           "write_digests"]


def make_digest(rep: Path) -> dict:
    """The digest of one finished replication directory (MetricsError naming the file if it failed or its data
    are bad: a failed replication is not digested, its run directory says why)."""
    rep = Path(rep)
    packets, meta, flows = audio_packets(rep, JITTER_BUFFERS_MS)  # meta with the base delay: as load_cases reads it
    summary = summarize_packets(rep, packets, meta, flows, list(JITTER_BUFFERS_MS))
    if (rep / "telemetry.pcap").exists():
        try:
            summary["single_bottleneck"] = single_bottleneck(rep)
        except MetricsError:   # no audio records in it (e.g. a capture cut short): the check is left out
            pass
    rows = None if flows is None else json.loads(flows.to_json(orient="records"))
    return {"format": FORMAT, "key": rep_key(rep, meta), "meta": meta, "summary": summary, "flows": rows}


def rep_key(rep: Path, meta: dict) -> str:
    """``<case>/rep<k>``: the sweep's name of the replication (``accessnet.sweep --list``)."""
    return f"{meta.get('case') or rep.parent.name}/rep{meta.get('rep', rep.name.removeprefix('rep'))}"


def read_digest(path: Path) -> tuple[dict, dict, pd.DataFrame | None]:
    """(summary, meta, flows) of a digest file; MetricsError naming the file if it is not one this reads."""
    path = Path(path)
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MetricsError(f"{path}: not a readable digest ({e})") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT or not {"meta", "summary", "flows"} <= d.keys():
        raise MetricsError(f"{path}: not a replication digest of format {FORMAT} (experiments.digest)")
    meta = d["meta"]
    if not isinstance(meta, dict) or meta.get("status") != "ok":
        raise MetricsError(f"{path}: its meta is not that of a finished replication (status "
                           f"{meta.get('status') if isinstance(meta, dict) else None!r})")
    flows = None if d["flows"] is None else pd.DataFrame(d["flows"])
    return d["summary"], meta, flows


def digest_meta(path: Path) -> dict:
    """The meta of a digest file whatever its state, {} if none can be read (to name a failed one)."""
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    meta = d.get("meta") if isinstance(d, dict) else None
    return meta if isinstance(meta, dict) else {}


def find_digests(path: Path) -> list[Path]:
    """Digest files under ``path``: ``<case>/rep<k>.json``."""
    return sorted(p for p in Path(path).glob(f"*/rep[0-9]*{SUFFIX}") if p.is_file())


def write_digests(run_dirs: Sequence[Path], into: Path, replace: bool = False) -> dict[str, list[str]]:
    """Digest every finished replication of ``run_dirs`` into ``into``. A replication already digested there is
    kept (the first measurement of a replication stands; ``replace`` overwrites it); failed ones are listed,
    never digested. Each file is written whole (a temporary file renamed): an interrupted call loses nothing
    and leaves no half digest. Returns the keys written, kept and failed."""
    done: dict[str, list[str]] = {"written": [], "kept": [], "failed": []}
    for run in map(Path, run_dirs):
        reps = find_reps(run)
        if not reps:
            raise MetricsError(f"{run}: no replication directories (<case>/rep<k>/ with meta.json)")
        for rep in reps:
            try:
                d = make_digest(rep)
            except MetricsError as e:
                done["failed"].append(f"{rep}: {e}")
                continue
            out = digest_path(into, d["key"])
            if out.exists() and not replace:
                done["kept"].append(d["key"])
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            tmp = out.with_suffix(".tmp")
            tmp.write_text(json.dumps(d, sort_keys=True, separators=(",", ":")) + "\n")
            os.replace(tmp, out)
            done["written"].append(d["key"])
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.digest", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("runs", nargs="+", type=Path, help="sweep or run directories")
    ap.add_argument("--into", type=Path, required=True, help="the digest directory, e.g. experiments/data/iwa-eval")
    ap.add_argument("--replace", action="store_true", help="overwrite digests already there")
    a = ap.parse_args(argv)
    try:
        done = write_digests(a.runs, a.into, a.replace)
    except MetricsError as e:
        print(f"digest error: {e}", file=sys.stderr)
        return 2
    for line in done["failed"]:
        print(f"not digested (failed): {line}", file=sys.stderr)
    print(f"{a.into}: {len(done['written'])} written, {len(done['kept'])} already there (kept), "
          f"{len(done['failed'])} failed replications not digested")
    return 0


if __name__ == "__main__":
    sys.exit(main())
