"""Every label's text, rendered from a bundle, reads as sentences: nothing unknown printed into them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import LABELS, diagnose
from slurm_hooks.diagnose.render import to_text
from slurm_hooks.diagnose.wording import _render
from slurm_hooks.rules import AdviceLine
from tests.conftest import BUNDLES, SCENARIOS

ALL = sorted(
    p for root in (BUNDLES, SCENARIOS) if root.is_dir() for p in root.iterdir() if (p / "expected.json").exists()
)
_UNKNOWN = re.compile(r"\?|\bNone\b|\b[Uu]nknown\b")


def _sentences(text: str) -> list[str]:
    """The lines of `diagnose` text a person reads as prose: summary, root, node facts, advice (not quoted logs)."""
    blocks = text.split("\n\n")
    prose = [blocks[1]]  # the summary, wrapped
    for block in blocks[2:]:
        head = block.splitlines()[0]
        if head.startswith(("root:", "what to do:")):
            prose.append(block)  # "node facts:" is key=value (cdmm=unknown is a value), not a sentence
        elif head.startswith("first fault"):
            prose.append(head)  # its second line quotes the log
    return prose


@pytest.mark.parametrize("path", ALL, ids=[p.name for p in ALL])
def test_text_has_nothing_unknown_inside_a_sentence(path: Path, pack) -> None:
    text = to_text(diagnose(load_bundle(path), pack))
    for block in _sentences(text):
        assert not _UNKNOWN.search(block), f"{path.name}: {block!r}"


def test_every_label_is_rendered_by_some_bundle(pack) -> None:
    labels = {diagnose(load_bundle(p), pack).label for p in ALL}
    assert labels == set(LABELS)


def test_json_keeps_the_design_contract(pack) -> None:
    """DESIGN.md: label, summary, root_node, root_rank, first_fault{time, kind, node, rank, source, line},
    evidence, advice, facts."""
    for path in ALL:
        got = json.loads(json.dumps(diagnose(load_bundle(path), pack).to_dict()))
        assert {"label", "summary", "root_node", "root_rank", "first_fault", "evidence", "advice", "facts"} <= set(got)
        assert got["label"] in LABELS and isinstance(got["summary"], str) and "\n" not in got["summary"]
        assert got["root_node"] is None or isinstance(got["root_node"], str)
        assert got["root_rank"] is None or isinstance(got["root_rank"], int)
        if got["first_fault"] is not None:
            assert {"time", "kind", "node", "rank", "source", "line"} <= set(got["first_fault"])
        assert all(isinstance(a, str) for a in got["advice"]) and isinstance(got["facts"], dict)
        assert all({"time", "kind", "source", "line"} <= set(e) for e in got["evidence"])


@pytest.mark.parametrize(
    ("template", "known", "expected"),
    [
        ("Drain {node}.", {"node": "n1"}, "Drain n1."),
        ("Drain {node}.", {}, None),  # a line that needs what is unknown is left out
        ("The link failed[[ on {node}]].", {}, "The link failed."),
        ("Send the trace[[ and the versions of {node}: {versions}]].", {"node": "n1"}, "Send the trace."),
        (
            "Send the trace[[ and the versions of {node}: {versions}]].",
            {"node": "n1", "versions": "CDMM on"},
            "Send the trace and the versions of n1: CDMM on.",
        ),
    ],
)
def test_advice_templates_leave_out_the_unknown(template: str, known: dict[str, str], expected: str | None) -> None:
    assert _render(AdviceLine(template), known) == expected
