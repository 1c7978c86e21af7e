"""The package's layers, checked over every import (static, so imports inside functions count too).

A module may import its own layer and the layers below it, never one above: the hooks and the CLI
sit on top, the classifier in the middle, readers of files and Slurm below, plain helpers at the
bottom. A new top-level module must be given a layer here.
"""

from __future__ import annotations

import ast
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


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_no_module_is_above_400_lines(path: Path) -> None:
    """Split by responsibility, not by count: past 250 lines a module is worth a look (a warning),
    past 400 it holds more than one idea (issue 21)."""
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines > 250:
        warnings.warn(f"{path.name}: {lines} lines; does it still hold one idea?", stacklevel=1)
    assert lines <= 400, "split it by responsibility"
