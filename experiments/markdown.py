"""Markdown of the report and its tables: a table, and a mean with its 95 % confidence interval."""

from __future__ import annotations


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
