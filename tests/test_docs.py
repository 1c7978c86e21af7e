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
