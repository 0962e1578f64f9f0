"""Markdown of the report and its tables: a table, and a mean with its 95 % confidence interval."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def fmt_ci(ci: dict, scale: float = 1.0, digits: int = 1, missing: str = "missing") -> str:
    """'mean ± half-width' (half width only with >= 2 replications), '–' without values; replications
    without a value are counted, never dropped silently."""
    if ci["mean"] is None:
        return "–" + (f" ({ci['n_missing']} {missing})" if ci["n_missing"] else "")
    out = f"{ci['mean'] * scale:.{digits}f}"
    if ci["ci95"] is not None:
        out += f" ± {ci['ci95'] * scale:.{digits}f}"
    if ci["n_missing"]:
        out += f" ({ci['n_missing']} {missing})"
    return out


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def esc(x: str) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    return (["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
            + ["| " + " | ".join(esc(x) for x in r) + " |" for r in rows])


def write_block(path: Path, block: list[str]) -> None:
    """Put ``block`` into ``path`` between its own first and last lines (its markers, e.g. ``<!-- x begin -->``
    and ``<!-- x end -->``): replace what is between them, or create the file; an existing file without both
    markers raises ValueError (a document is never overwritten). Written atomically."""
    path = Path(path)
    begin, end = block[0], block[-1]
    text = "\n".join(block) + "\n"
    if path.exists():
        old = path.read_text()
        if begin not in old or end not in old[old.index(begin):]:
            raise ValueError(f"{path}: exists without the lines {begin} and {end}; put them where the table goes")
        i = old.index(begin)
        j = old.index(end, i) + len(end)
        text = old[:i] + "\n".join(block) + old[j:]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def emit_block(make: Callable[[], list[str]], out: Path | None) -> int:
    """A generated table's command line: make the block, print it without its markers (``out`` None) or write it
    into ``out`` (``write_block``); a bad input (every error of the analysis is a ValueError: MetricsError,
    ReportError) or an unreadable file is one line on stderr and exit status 1."""
    try:
        block = make()
        if out is None:
            print("\n".join(block[1:-1]).strip())
        else:
            write_block(out, block)
            print(out)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def table_main(argv: list[str] | None, *, prog: str, description: str,
               table_block: Callable[[Sequence[Path], float], list[str]], jitter_buffer_ms: float,
               run_dir_help: str = "results/<run> (holding <case>/rep<k>/) or a digest directory "
                                   "(<case>/rep<k>.json)") -> int:
    """The command line of a generated table (``python -m experiments.<x>_table RUN_DIR... [--out FILE]
    [--jitter-buffer MS]``): ``table_block(run_dirs, jitter_buffer_ms)`` makes the block, ``emit_block`` prints
    it or writes it between its markers. One parser for every generated table, so they take the same options."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("run_dirs", nargs="+", type=Path, metavar="RUN_DIR", help=run_dir_help)
    ap.add_argument("--out", type=Path, metavar="FILE",
                    help="write the block into FILE between its begin and end marker lines (an existing FILE "
                         "must hold them; a new one is created; default: print the block)")
    ap.add_argument("--jitter-buffer", type=float, default=jitter_buffer_ms, metavar="MS",
                    help=f"jitter buffer of the level >= 2 share (default {jitter_buffer_ms:g})")
    a = ap.parse_args(argv)
    return emit_block(lambda: table_block(a.run_dirs, a.jitter_buffer), a.out)
