"""No import circles among first-party modules, read from the source (no module is imported).

Every `import` / `from ... import` counts, wherever it stands: module level, inside a function, under
`if TYPE_CHECKING:`. A circle hidden in a function body is still a circle (the two modules cannot be
understood or moved apart), so a lazy import is no way out of this test: the shared name has to move.
Installed package names map to their source folders as pyproject's package-dir says (`lwap.train` →
train/, ...), and `benchmarks` is benchmarks/ (the scripts import each other as benchmarks.<folder>.<x>):
in the graph, and never imported by the installed packages (the wheel does not ship it).
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

# package name -> source folder; a folder that does not exist (yet) is skipped
ROOTS = {
    "lwap": "lwap",
    "benchmarks": "benchmarks",
    "lwap.train": "train",
    "lwap.eval": "eval",
    "lwap.compare": "compare",
}


def find_modules(repo: Path, roots: dict[str, str]) -> dict[str, Path]:
    """Dotted module name -> source file, for every .py file under each root folder."""
    modules: dict[str, Path] = {}
    for package, folder in roots.items():
        base = repo / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    return modules


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The dotted names one import statement may load: `from a import b` may mean module a.b."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the module's own package, then up level - 1
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def import_graph(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """Edges module -> first-party modules it imports, and first-party imports that name no module."""
    first_party = tuple({name.split(".")[0] for name in modules})
    graph: dict[str, set[str]] = {name: set() for name in modules}
    unresolved: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            candidates = _imported(node, name, path.name == "__init__.py")
            if not candidates[0].startswith(first_party):
                continue
            if isinstance(node, ast.Import):
                targets = [c for c in candidates if c in modules]
                missing = [c for c in candidates if c not in modules and c.startswith(first_party)]
            else:  # `from base import x`: the submodule base.x if there is one, else base itself
                base, names = candidates[0], candidates[1:]
                targets = [n for n in names if n in modules]
                if len(targets) < len(names):
                    targets.append(base)
                missing = [t for t in targets if t not in modules]
                targets = [t for t in targets if t in modules]
            graph[name].update(t for t in targets if t != name)
            unresolved += [f"{name} (line {node.lineno}): {m}" for m in missing]
    return graph, unresolved


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per circle: each strongly connected group of two or more modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(_circle_through(graph, set(group)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def _circle_through(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A concrete circle a -> b -> ... -> a inside one strongly connected group, for the error message."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:  # breadth first: the shortest way back to `start`
        node = queue.pop(0)
        for target in sorted(graph[node] & group):
            if target == start:
                return [*paths[node], start]
            if target not in paths:
                paths[target] = [*paths[node], target]
                queue.append(target)
    raise AssertionError(f"not strongly connected: {sorted(group)}")


def test_no_import_circles_in_the_source_tree() -> None:
    modules = find_modules(REPO, ROOTS)
    graph, unresolved = import_graph(modules)
    assert not unresolved, "first-party imports naming no module:\n" + "\n".join(unresolved)
    found = cycles(graph)
    assert not found, "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_graph_sees_the_imports_it_must() -> None:
    """The edges a real import of each kind makes are in the graph, so an empty cycle list means something."""
    graph, _ = import_graph(find_modules(REPO, ROOTS))
    assert "lwap.module_io" in graph["lwap.layerwise_attention"]  # module level
    assert "lwap.layerwise_attention" in graph["lwap.registry"]  # inside a builder function
    assert "lwap.train.config" in graph["lwap.train"]  # `from lwap.train import config` in a function
    assert "lwap.model" in graph["lwap"]  # under `if TYPE_CHECKING:`
    assert len(graph) > 50 and "benchmarks.speed.speedbench.flops" in graph
    # a script's import of another folder's script, and of the package's own table
    assert "benchmarks.backbone.budget_probe" in graph["benchmarks.backbone.gate_diagnosis"]
    assert "benchmarks" in graph["benchmarks.speed.speedbench.settings"]


def test_the_installed_packages_import_nothing_from_benchmarks() -> None:
    """`lwap compare`'s engine (and all of lwap) works from a wheel: the repository's own report plugs
    into it (benchmarks/grid/report_repository.py), never the reverse."""
    graph, _ = import_graph(find_modules(REPO, ROOTS))
    assert "lwap.compare.report" in graph["benchmarks.grid.report_repository"]
    installed = {name: targets for name, targets in graph.items() if name.split(".")[0] == "lwap"}
    wrong = [f"{n} -> {t}" for n, targets in installed.items() for t in targets if not t.startswith("lwap")]
    assert not wrong, "installed modules importing benchmarks/:\n" + "\n".join(wrong)


def test_circles_are_found_however_the_import_is_written(tmp_path: Path) -> None:
    """A three-module circle through a relative, a lazy (in-function) and a TYPE_CHECKING import."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import thing\n")
    (pkg / "b.py").write_text("def f():\n    from pkg import c\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.a\n")
    (pkg / "d.py").write_text("import pkg.a\nimport os\n")
    modules = find_modules(tmp_path, {"pkg": "pkg"})
    graph, unresolved = import_graph(modules)
    assert not unresolved
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    (pkg / "c.py").write_text("import pkg.missing\n")
    graph, unresolved = import_graph(find_modules(tmp_path, {"pkg": "pkg"}))
    assert cycles(graph) == [] and len(unresolved) == 1 and unresolved[0].endswith("pkg.missing")
