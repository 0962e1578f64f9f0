"""The import graph of the project's packages (experiments, accessnet, controller, refmodel), read with ``ast``
from every module's source, imports inside functions counted as well as those at module level: no module may
import itself back through any chain (a cycle), and the lab (accessnet) never imports the analysis (experiments).

A module's ``if __name__ == "__main__":`` block is its command line, not its library: its imports are edges of
the graph like any other (so they count for cycles), but the layering rule is about what importing a module
pulls in, and a command line may put the layers together (``python -m accessnet.run`` prints the report of the
run it made). Importing ``pkg.mod`` runs ``pkg/__init__.py`` first; that implicit edge is not drawn (a package's
own modules import their package's ``__init__``, which is already in sys.modules while it imports them).

``python tests/test_import_graph.py`` prints the graph, one edge a line, each with where the import stands.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"experiments": ROOT / "experiments", "accessnet": ROOT / "mininet" / "accessnet",
            "controller": ROOT / "controller", "refmodel": ROOT / "refmodel"}
LAYERS = [("accessnet", "experiments")]  # (package, package it must not import)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    line: int
    where: str  # "module", "function" (in a def, a method or a lambda) or "main" (the __main__ block)

    def __str__(self) -> str:
        return f"{self.src} -> {self.dst}  (line {self.line}, {self.where})"


def modules(packages: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file below each package's directory."""
    out = {}
    for pkg, d in packages.items():
        for path in sorted(d.rglob("*.py")):
            parts = list(path.relative_to(d).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join([pkg, *parts])] = path
    return out


def _main_guard(node: ast.stmt) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Compare) and isinstance(t.left, ast.Name) and t.left.id == "__name__"
            and len(t.comparators) == 1 and isinstance(t.comparators[0], ast.Constant)
            and t.comparators[0].value == "__main__")


def _targets(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, known: dict[str, Path]) -> list[str]:
    """The project modules an import statement of module ``name`` imports (none for third-party ones)."""
    if isinstance(node, ast.Import):
        out = []
        for a in node.names:
            parts = a.name.split(".")
            deepest = next((".".join(parts[:k]) for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in known),
                           None)
            if deepest:
                out.append(deepest)
        return out
    if node.level:
        pkg = name.split(".") if is_package else name.split(".")[:-1]
        pkg = pkg[:len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = []
    for a in node.names:
        if f"{base}.{a.name}" in known:  # from pkg import submodule
            out.append(f"{base}.{a.name}")
        elif base in known:
            out.append(base)
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> list[Edge]:
    """Every import of a project module in ``path``'s source, where it stands and on which line."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    out: list[Edge] = []

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            here = where
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) and where == "module":
                here = "function"
            elif node is tree and _main_guard(child):
                here = "main"
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.extend(Edge(name, t, child.lineno, here) for t in _targets(child, name, is_package, known)
                           if t != name)
            walk(child, here)

    walk(tree, "module")
    return out


def graph(packages: dict[str, Path]) -> list[Edge]:
    known = modules(packages)
    return [e for name, path in known.items() for e in imports(name, path, known)]


def _succ(edges: list[Edge]) -> dict[str, list[Edge]]:
    succ: dict[str, list[Edge]] = {}
    for e in edges:
        succ.setdefault(e.src, []).append(e)
        succ.setdefault(e.dst, [])
    return succ


def components(edges: list[Edge]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm): each module of one
    imports every other through some chain."""
    succ = _succ(edges)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[set[str]] = []

    def strong(v: str) -> None:  # recursive: the graph has a few hundred nodes at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for e in succ[v]:
            if e.dst not in index:
                strong(e.dst)
                low[v] = min(low[v], low[e.dst])
            elif e.dst in on:
                low[v] = min(low[v], index[e.dst])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(succ):
        if v not in index:
            strong(v)
    return comps


def cycles(edges: list[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges, the first edge's src = the last edge's dst) per strongly connected component:
    a shortest way from the component's first module back to it."""
    succ = _succ(edges)
    out = []
    for comp in components(edges):
        start = min(comp)
        back: dict[str, Edge] = {}  # breadth-first from start within comp, until an edge returns to it
        frontier, seen, found = [start], {start}, None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for e in sorted(succ[v], key=lambda e: (e.dst, e.line)):
                    if e.dst not in comp:
                        continue
                    if e.dst == start:
                        found = e
                        break
                    if e.dst not in seen:
                        seen.add(e.dst)
                        back[e.dst] = e
                        nxt.append(e.dst)
                if found:
                    break
            frontier = nxt
        path = [found]
        while path[0].src != start:
            path.insert(0, back[path[0].src])
        out.append(path)
    return out


def crossings(edges: list[Edge], layers: list[tuple[str, str]]) -> list[Edge]:
    """Imports against the layering: a module of ``low`` importing one of ``high``, outside a __main__ block."""
    def pkg(m: str) -> str:
        return m.split(".")[0]

    return [e for e in edges for low, high in layers if pkg(e.src) == low and pkg(e.dst) == high
            and e.where != "main"]


def show(cycle: list[Edge]) -> str:
    return " -> ".join([cycle[0].src, *(e.dst for e in cycle)]) + "\n" + "\n".join(f"  {e}" for e in cycle)


# ----------------------------------------------------------------------------- the project


def test_the_project_has_no_import_cycle():
    edges = graph(PACKAGES)
    assert len(edges) > 100  # the packages were found and read
    found = cycles(edges)
    assert not found, "import cycles:\n" + "\n".join(
        f"among {', '.join(sorted(comp))}:\n{show(c)}" for comp, c in zip(components(edges), found))


def test_the_lab_does_not_import_the_analysis():
    bad = crossings(graph(PACKAGES), LAYERS)
    assert not bad, "accessnet imports experiments:\n" + "\n".join(f"  {e}" for e in bad)


# ----------------------------------------------------------------------------- the checker, on packages made here


def write(root: Path, files: dict[str, str]) -> None:
    for rel, src in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(src))


def test_a_cycle_hidden_in_a_function_is_found(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from . import b\n",
        "pkg/b.py": "import json\n\n\ndef f():\n    from .sub.c import g\n    return g\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": "import pkg.a as a\n\n\ndef g():\n    return a\n",
        "pkg/d.py": "from .a import b\nfrom pkg.sub import c\n",  # into the cycle, not on it
    })
    edges = graph({"pkg": tmp_path / "pkg"})
    assert {(e.src, e.dst, e.where) for e in edges} == {
        ("pkg.a", "pkg.b", "module"), ("pkg.b", "pkg.sub.c", "function"), ("pkg.sub.c", "pkg.a", "module"),
        ("pkg.d", "pkg.a", "module"), ("pkg.d", "pkg.sub.c", "module")}
    [cycle] = cycles(edges)
    assert show(cycle).splitlines()[0] == "pkg.a -> pkg.b -> pkg.sub.c -> pkg.a"
    assert [e.line for e in cycle] == [1, 5, 1]


def test_relative_imports_two_levels_up_and_packages_own_init(tmp_path):
    write(tmp_path, {
        "pkg/__init__.py": "from .x import X\n",  # the package's __init__ imports its module: no cycle
        "pkg/x.py": "from . import y\nX = 1\n",
        "pkg/y.py": "",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "from ..x import X\nfrom .. import y\nfrom pkg import X as Y\n",
    })
    edges = graph({"pkg": tmp_path / "pkg"})
    assert sorted((e.src, e.dst) for e in edges) == [("pkg", "pkg.x"), ("pkg.sub.deep", "pkg"),
                                                     ("pkg.sub.deep", "pkg.x"), ("pkg.sub.deep", "pkg.y"),
                                                     ("pkg.x", "pkg.y")]
    assert cycles(edges) == []


def test_a_two_package_cycle_and_the_layering(tmp_path):
    write(tmp_path, {
        "lab/__init__.py": "",
        "lab/run.py": "import sys\n\n\nclass R:\n    def m(self):\n        import ana.report\n\n\n"
                      "if __name__ == '__main__':\n    from ana.summary import s\n",
        "ana/__init__.py": "",
        "ana/report.py": "from lab.run import R\n",
        "ana/summary.py": "",
    })
    edges = graph({"lab": tmp_path / "lab", "ana": tmp_path / "ana"})
    [cycle] = cycles(edges)
    assert {e.src for e in cycle} == {"lab.run", "ana.report"}
    bad = crossings(edges, [("lab", "ana")])
    assert [(e.dst, e.where, e.line) for e in bad] == [("ana.report", "function", 6)]  # not the __main__ one
    assert [(e.dst, e.where) for e in edges if e.where == "main"] == [("ana.summary", "main")]


if __name__ == "__main__":
    for edge in sorted(graph(PACKAGES), key=lambda e: (e.src, e.line)):
        print(edge)
    for c in cycles(graph(PACKAGES)):
        print("CYCLE", show(c))
    sys.exit(0)
