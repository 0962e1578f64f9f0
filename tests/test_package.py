"""The runner's shape (issue 15's acceptance): no import circle among the lab package's modules, and one
replication function short enough to read (workloads and helpers carry the rest)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import accessnet
from accessnet.replication import run_rep

PKG = Path(accessnet.__file__).parent


def imports_of(path: Path) -> set[str]:
    """Sibling modules a module imports (relative ``from .x import`` and ``accessnet.x``), at any depth."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                out.add(node.module.split(".")[0])
            elif node.level == 1:
                out.update(a.name for a in node.names)
            elif node.module and node.module.startswith("accessnet."):
                out.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            out.update(a.name.split(".")[1] for a in node.names if a.name.startswith("accessnet."))
    return out


def test_no_import_circle_in_the_lab_package():
    graph = {p.stem: imports_of(p) & {q.stem for q in PKG.glob("*.py")} for p in PKG.glob("*.py")}
    assert "sweep" not in graph["run"] and "run" not in graph["sweep"]
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for n in sorted(graph.get(m, ())):
            assert state.get(n) != 1, f"import circle: {' -> '.join(path + [m, n])}"
            if n not in state:
                visit(n, path + [m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_the_replication_function_stays_short():
    assert len(inspect.getsource(run_rep).splitlines()) < 60
