"""The contracts the code cites resolve inside the repository: every `DESIGN.md "Section"` names a
heading of docs/DESIGN.md, every `log-signatures §N[.M]` a section (or numbered rule) of
docs/log-signatures.md, and the docs' relative links point at files that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
CODE = sorted(p for p in (ROOT / "slurm_hooks").rglob("*") if p.suffix in (".py", ".yaml"))


def citations(pattern: str) -> list[tuple[str, str]]:
    return [(f"{p.relative_to(ROOT)}", m) for p in CODE for m in re.findall(pattern, p.read_text())]


def test_code_cites_design_sections_that_exist() -> None:
    headings = [ln for ln in (DOCS / "DESIGN.md").read_text().splitlines() if ln.startswith("## ")]
    cited = citations(r'DESIGN\.md "([^"]+)"')
    assert cited, "the check found nothing to check"
    for where, section in cited:
        assert any(section in h for h in headings), f"{where}: no section {section!r} in docs/DESIGN.md"


def test_code_cites_log_signature_sections_that_exist() -> None:
    text = (DOCS / "log-signatures.md").read_text()
    cited = [(w, s) for w, block in citations(r"§[0-9][0-9.,§ –-]*") for s in re.findall(r"[0-9]+(?:\.[0-9]+)*", block)]
    assert len(cited) > 10
    for where, number in cited:
        major, _, minor = number.partition(".")
        section = re.search(rf"^## {major}\. .*?(?=^## |\Z)", text, re.M | re.S)
        assert section, f"{where}: no section {major} in docs/log-signatures.md"
        if minor:
            assert re.search(rf"^(### {major}\.{minor} |{minor.split('.')[0]}\. )", section.group(0), re.M), (
                f"{where}: no §{number} in docs/log-signatures.md"
            )


PAGES = [p for p in sorted(DOCS.rglob("*.md")) if p.name != "log-signatures.md"]  # that one quotes regexes


@pytest.mark.parametrize(
    "page",
    [*PAGES, ROOT / "CONTRIBUTING.md", ROOT / "README.md", ROOT / "deploy/sunk/README.md"],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_relative_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), f"{page.relative_to(ROOT)}: broken link {target}"


# ------------------------------------------------------------------ what the docs cite exists
# The README and docs/ name modules, files, flags, config keys, make targets, bench figures and
# layers; each name must be one the code has, so the docs cannot drift from it unnoticed.

CLAIMS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(p for p in PAGES if p.name != "reliability.md")]


def _ticked(page: Path) -> list[str]:
    """Backticked spans and code-block lines of a page."""
    text = page.read_text()
    blocks = re.findall(r"^```.*?$(.*?)^```", text, re.M | re.S)
    return re.findall(r"`([^`\n]+)`", re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)) + [
        ln for b in blocks for ln in b.splitlines()
    ]


def _claims(pattern: str) -> list[tuple[str, str]]:
    return [(str(p.relative_to(ROOT)), m) for p in CLAIMS for span in _ticked(p) for m in re.findall(pattern, span)]


PACKAGES = {p.name for p in (ROOT / "slurm_hooks").iterdir() if p.is_dir()}
TOP = {"slurm_hooks", "deploy", "docs", "tests", "bench", *PACKAGES}


def _file_exists(name: str) -> bool:
    if "/" not in name.rstrip("/"):  # a bare file name, as in a module map row: anywhere in the tree
        return name.endswith("/") or any(ROOT.rglob(name))  # a bare `jobs/` is the spool's, not ours
    bases = (ROOT, ROOT / "slurm_hooks", ROOT / "docs", ROOT / "tests", ROOT / "deploy")
    return any((base / name).exists() for base in bases)


def test_cited_files_and_modules_exist() -> None:
    cited = _claims(r"(?<![\w/<.-])((?:[\w-]+/)*[\w-]+(?:\.(?:py|yaml|md|c|sh|snippet)|/))(?![\w/])")
    # Paths of the repository start with one of its folders; `outbox/quarantine/` is the spool's layout.
    cited = [(w, n) for w, n in cited if "/" not in n.rstrip("/") or n.split("/")[0] in TOP]
    assert len(cited) > 40, "the check found too little to check"
    missing = sorted({(w, n) for w, n in cited if not _file_exists(n)})
    assert not missing, f"cited but not in the repository: {missing}"


def _options() -> dict[str, set[str]]:
    import argparse

    from slurm_hooks.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}


def test_cited_commands_and_flags_exist() -> None:
    options = _options()
    seen = 0
    for where, line in _claims(r"^(?:\$ )?slurm-hooks ([a-z-]+(?: [^`|]*)?)"):  # an invocation, not prose
        command, *rest = line.split()
        assert command in options, f"{where}: no command slurm-hooks {command}"
        for flag in re.findall(r"(?<![\w-])(--?[a-z][a-z-]*)", " ".join(rest)):
            seen += 1
            assert flag in options[command], f"{where}: slurm-hooks {command} has no {flag}"
    assert seen > 15


def test_cited_config_keys_exist() -> None:
    from slurm_hooks.config import Config

    fields = {k: type(v)._fields if hasattr(v, "_fields") else () for k, v in Config()._asdict().items()}
    # a path (rules/limits.py) is no key
    dotted = _claims(r"(?<![\w./])(budgets|limits|annotation|report|slurm)\.(?!conf\b)([a-z_]+)\b")
    assert len(dotted) > 15
    for where, (section, key) in dotted:
        assert key in fields[section], f"{where}: no config key {section}.{key}"
    bare = _claims(r"^([a-z]+_[a-z_]+)(?::|$)")
    suffixes = ("_dir", "_file", "_root", "_files", "_sources", "_timezone", "_days", "_mb")
    keys = [(w, k) for w, k in bare if k.endswith(suffixes)]
    assert len(keys) > 8
    for where, key in keys:
        assert key in fields or any(key in f for f in fields.values()), f"{where}: no config key {key}"


def test_cited_make_targets_exist() -> None:
    targets = set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))
    cited = _claims(r"(?<![\w-])make ([a-z][a-z-]*)")
    assert len(cited) > 10
    for where, target in cited:
        assert target in targets, f"{where}: no make target {target}"


def test_cited_bench_figures_are_ones_a_bench_prints() -> None:
    bench = "".join(p.read_text() for p in (ROOT / "bench").glob("*.py"))
    named = re.search(r"NAMED = \(([^)]*)\)", bench)  # prolog_imports prints <package>_import_ms for these
    assert named
    printed = set(re.findall(r'"([a-z0-9_]+)"', bench)) | {f"{n}_import_ms" for n in re.findall(r'"(\w+)"', named[1])}
    cited = _claims(r"^([a-z0-9]+(?:_[a-z0-9]+)*_(?:ms|projected|vs_python_S_pass))$")
    assert len(cited) >= 5
    for where, name in cited:
        assert name in printed, f"{where}: no bench prints {name}"


def test_the_layers_the_design_notes_list_are_the_layer_tests() -> None:
    from tests.test_layers import LAYERS

    text = (DOCS / "design.md").read_text()
    listed = re.findall(r"^\d\. (`.*)$", text.split("Top first:")[1].split("\n\n")[1], re.M)
    assert [set(re.findall(r"`(\w+)`", row)) for row in listed] == [layer - {"__init__"} for layer in LAYERS]


def test_the_labels_the_readme_lists_are_the_rule_packs() -> None:
    from slurm_hooks.rules.families import LABELS

    section = (ROOT / "README.md").read_text().split("## Labels")[1].split("##")[0]
    assert set(re.findall(r"`([a-z_]+)`", section)) == set(LABELS)


def test_readme_is_for_users_and_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300
