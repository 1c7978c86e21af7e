"""The package's layers, and no import cycle between its modules, checked over every import
(static, so imports inside functions count too).

A module may import its own layer and the layers below it, never one above: the hooks and the CLI
sit on top, the classifier in the middle, readers of files and Slurm below, plain helpers (`core/`)
at the bottom. A new top-level package or module must be given a layer here. Within a layer, and
within a package, no two modules may need each other, directly or round a longer loop.
"""

from __future__ import annotations

import ast
import sys
import warnings
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "slurm_hooks"

LAYERS = (  # top first
    {"__main__", "cli"},
    {"hooks", "report", "doctor"},
    {"collect", "deliver"},
    {"diagnose"},
    {"timeline"},
    {"bundle", "rules", "facts", "slurm", "flight"},
    {"config"},
    {"__init__", "core"},
)
FORBIDDEN = {  # the contracts issue 7 names, spelt out even where the layers already imply them
    "bundle": {"timeline", "diagnose"},
    "diagnose": {"hooks", "slurm", "cli", "collect", "deliver"},
    "timeline": {"diagnose", "hooks", "slurm"},
}


def _component(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imports(path: Path) -> set[str]:
    """Top-level slurm_hooks components that `path` imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if (
                parts[0] == "slurm_hooks"
                and len(parts) > 1
                and ((PACKAGE / parts[1]).is_dir() or (PACKAGE / f"{parts[1]}.py").is_file())
            ):
                out.add(parts[1])
    return out


def _layer(component: str) -> int:
    for i, layer in enumerate(LAYERS):
        if component in layer:
            return i
    raise AssertionError(f"slurm_hooks/{component} has no layer: add it to LAYERS in {__file__}")


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_no_module_imports_a_layer_above_its_own(path: Path) -> None:
    mine = _component(path)
    above = {c for c in _imports(path) - {mine} if _layer(c) < _layer(mine)}
    assert not above, f"{path.relative_to(PACKAGE)} ({mine}) imports {sorted(above)}, a layer above its own"
    assert not _imports(path) & FORBIDDEN.get(mine, set())


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from slurm_hooks.timeline.clocks import log_time\n    import slurm_hooks.bundle\n")
    assert _imports(probe) == {"timeline", "bundle"}


# ------------------------------------------------------------------ no import cycles
# Module by module (`slurm_hooks.config.parse`, a package by its `__init__`). Every import statement
# counts, wherever it stands: at module level, inside a function, under `if TYPE_CHECKING:`. A
# deferred or typing-only import keeps a cycle from failing at load time, not from being one: the two
# modules still need each other, and the first refactoring that moves the import up turns it into an
# ImportError on a job's start. (The four cycles of issue 21 were each hidden that way.) Importing
# `slurm_hooks.a.b` runs `slurm_hooks/a/__init__.py` first, so from outside package `a` it is an
# import of `a` too; from inside `a`, whose `__init__` already runs, it is not.


def _module_name(path: Path, package: Path) -> str:
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph(package: Path) -> dict[str, set[str]]:
    """Each module of `package` -> the modules of `package` it imports, or whose package it imports through."""
    names = {_module_name(p, package): p for p in package.rglob("*.py")}

    def resolve(dotted: str) -> str | None:  # the module an import names: a function's module, not the function
        while dotted and dotted not in names:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {}
    for me, path in names.items():
        mine = me if path.name == "__init__.py" else me.rpartition(".")[0]  # the package this module runs in
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets |= {resolve(f"{node.module}.{a.name}") for a in node.names}
            elif isinstance(node, ast.Import):
                targets |= {resolve(a.name) for a in node.names}
        edges = set()
        for target in targets - {None, me}:
            assert target is not None
            edges.add(target)
            parents = target.split(".")[1:-1]  # the packages Python runs first, below the top one
            for i in range(len(parents)):
                parent = ".".join([package.name, *parents[: i + 1]])
                if not (mine == parent or mine.startswith(parent + ".")):
                    edges.add(parent)
        graph[me] = edges - {me}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The modules of `graph` that sit on an import cycle, one set for each knot of them
    (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append({v, *component})

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _loop(graph: dict[str, set[str]], component: set[str], start: str) -> list[str]:
    """One path start -> ... -> start inside a strongly connected component, for the failure message."""
    paths = {start: [start]}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & component):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                todo.append(w)
    raise AssertionError(f"{start} is in no loop of {sorted(component)}")


def test_no_import_cycles() -> None:
    graph = _module_graph(PACKAGE)
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300, "the check found too little to check"
    loops = [" -> ".join(_loop(graph, knot, min(knot))) for knot in _cycles(graph)]
    assert not loops, "import cycles (move what both need to where it belongs): " + "; ".join(loops)


def test_the_cycle_check_sees_deferred_typing_and_package_imports(tmp_path: Path) -> None:
    package = tmp_path / "slurm_hooks"
    (package / "a").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "records.py": "X = 1\n",
        "top.py": "from slurm_hooks.records import X\n",  # no cycle: records needs nothing
        "bottom.py": "def f():\n    from slurm_hooks.lazy import g\n",  # deferred, still a cycle with lazy
        "lazy.py": "from slurm_hooks.bottom import f\n\ndef g():\n    pass\n",
        "typed.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from slurm_hooks.user import U\n",
        "user.py": "from slurm_hooks.typed import T\n",
        "a/__init__.py": "from slurm_hooks.a.sub import Y\n\ndef run():\n    import slurm_hooks.outside\n",
        "a/sub.py": "from slurm_hooks.a.other import Y\n",  # inside a, whose __init__ already runs: no edge to it
        "a/other.py": "Y = 1\n",
        "outside.py": "from slurm_hooks.a.sub import Y\n",  # outside a: it runs a's __init__ first
    }
    for name, text in files.items():
        (package / name).write_text(text)
    graph = _module_graph(package)
    found = {frozenset(c) for c in _cycles(graph)}
    assert found == {
        frozenset({"slurm_hooks.bottom", "slurm_hooks.lazy"}),
        frozenset({"slurm_hooks.typed", "slurm_hooks.user"}),
        frozenset({"slurm_hooks.a", "slurm_hooks.outside"}),
    }
    assert _loop(graph, {"slurm_hooks.a", "slurm_hooks.outside"}, "slurm_hooks.a") == [
        "slurm_hooks.a",
        "slurm_hooks.outside",
        "slurm_hooks.a",
    ]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_no_module_is_above_400_lines(path: Path) -> None:
    """Split by responsibility, not by count: past 250 lines a module is worth a look (a warning),
    past 400 it holds more than one idea (issue 21)."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines > 250:
        warnings.warn(f"{path.name}: {lines} lines; does it still hold one idea?", stacklevel=1)
    assert lines <= 400, "split it by responsibility"
