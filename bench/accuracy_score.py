"""What `make accuracy` counts: a case's truth, a tool's answer, and the marks one gets against the other.

The definitions are DEFINITIONS below; docs/accuracy.md prints them. The one that matters most:
an answer is confidently wrong when it is not marked low confidence and claims what the truth does
not hold (a label other than `unknown`, a root node or a root rank that the truth does not have).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFINITIONS = (
    ("label right", "the answer's label is the truth's label"),
    (
        "node right, rank right",
        "the answer's root node (compared by its first DNS label) or root rank is the truth's; naming "
        "none is right only where the truth names none",
    ),
    ("fully right", "label, node and rank right together"),
    (
        "low confidence",
        "the tool said itself it is not sure: slurm-hooks' `details.confidence.level` is `low`; NVRx's "
        "answer carries no such mark, so none of its answers counts as low",
    ),
    (
        "confidently wrong",
        "an answer not marked low confidence that claims what the truth does not hold: a label other "
        "than `unknown` that is not the truth's, or a root node or root rank that it names and the truth "
        "does not (the truth names another one, or none). `unknown`, and naming no node or rank, are "
        "never confidently wrong, only not right",
    ),
    ("named right", "of the cases whose truth names a node (a rank), those where the answer names that one"),
    (
        "errors",
        "cases the tool gave no answer for (it failed or ran out of time): wrong in every part, never low, "
        "never confidently wrong; shown beside the confidently wrong count where there are any",
    ),
)


# expected.json's optional keys (tests/corpus/README.md) and how an answer is put in their terms
# from `diagnose --json`'s details: the fatal signal's name, how many earlier runs the job held,
# whether a fault the job survived was listed.
DETAILS = ("signal", "previous_runs", "survived")


def answer_details(details: dict[str, Any]) -> tuple[tuple[str, object], ...]:
    return (
        ("signal", details.get("signal")),
        ("previous_runs", len(details.get("previous_runs") or [])),
        ("survived", bool(details.get("survived"))),
    )


@dataclass(frozen=True)
class Truth:
    label: str
    node: str | None
    rank: int | None
    details: tuple[tuple[str, object], ...] = ()  # the optional DETAILS expected.json names

    @classmethod
    def read(cls, case: Path) -> Truth:
        doc = json.loads((case / "expected.json").read_text())
        details = tuple((k, doc[k]) for k in DETAILS if k in doc)
        return cls(str(doc["label"]), doc.get("root_node"), doc.get("root_rank"), details)


@dataclass(frozen=True)
class Answer:
    label: str | None
    node: str | None
    rank: int | None
    low: bool = False
    error: str = ""  # why there is no answer
    said: str = ""  # what else the tool said, for the per-case lines (confidence level, NVRx's class)
    details: tuple[tuple[str, object], ...] = ()  # its answer to each of DETAILS (slurm-hooks only)


@dataclass(frozen=True)
class Marks:
    label: bool
    node: bool
    rank: bool
    full: bool
    low: bool
    confidently_wrong: bool
    error: bool
    details: tuple[tuple[str, bool], ...] = ()  # per DETAILS key the truth names: whether the answer agrees


def _host(name: str | None) -> str | None:
    return name.split(".", 1)[0].lower() if name else None


def mark(truth: Truth, answer: Answer) -> Marks:
    if answer.error:  # no answer is right in no part, not even where the truth names no root
        return Marks(False, False, False, False, False, False, True, tuple((k, False) for k, _ in truth.details))
    label = answer.label == truth.label
    node = _host(answer.node) == _host(truth.node)
    rank = answer.rank == truth.rank
    claims_wrong = (
        (answer.label not in (None, "unknown") and not label)
        or (answer.node is not None and not node)
        or (answer.rank is not None and not rank)
    )
    sure = not answer.low
    said = dict(answer.details)
    details = tuple((k, k in said and said[k] == v) for k, v in truth.details)
    full = label and node and rank
    return Marks(label, node, rank, full, answer.low, sure and claims_wrong, False, details)


@dataclass
class Tally:
    """One tool's marks over one set of cases."""

    cases: int = 0
    label: int = 0
    node: int = 0
    rank: int = 0
    full: int = 0
    low: int = 0
    confidently_wrong: int = 0
    error: int = 0
    node_named: int = 0  # truth names a node and the answer names that one
    node_truths: int = 0  # truth names a node
    rank_named: int = 0
    rank_truths: int = 0
    details_given: dict[str, int] = field(default_factory=dict)  # cases whose truth names the key
    details_agree: dict[str, int] = field(default_factory=dict)

    def add(self, truth: Truth, m: Marks) -> None:
        self.cases += 1
        for name in ("label", "node", "rank", "full", "low", "confidently_wrong", "error"):
            setattr(self, name, getattr(self, name) + int(getattr(m, name)))
        if truth.node is not None:
            self.node_truths += 1
            self.node_named += int(m.node)
        if truth.rank is not None:
            self.rank_truths += 1
            self.rank_named += int(m.rank)
        for key, agrees in m.details:
            self.details_given[key] = self.details_given.get(key, 0) + 1
            self.details_agree[key] = self.details_agree.get(key, 0) + int(agrees)


SETS = {
    "public": "public seen",
    "real": "real seen",
    "heldout-public": "held-out public",
    "heldout-real": "held-out real",
}
SEEN = ("public", "real")
MATRIX_KEYS = ("launcher", "framework", "form", "shape", "failure", "confounder")


@dataclass(frozen=True)
class Case:
    id: str  # its path under the corpus root (or under --dir)
    set: str  # a key of SETS, or the --dir name
    path: Path
    truth: Truth
    matrix: dict[str, tuple[str, ...]]

    @property
    def seen(self) -> bool:
        return not self.set.startswith("heldout")


@dataclass(frozen=True)
class Scored:
    case: Case
    ours: Answer
    ours_marks: Marks
    nvrx: Answer | None
    nvrx_marks: Marks | None
