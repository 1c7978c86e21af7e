"""The fewest factors behind an effect.

A configuration effect is tested on each factor alone (driver, CDMM, ncore, GPU), then on pairs
of them: never on whole configuration tuples, which split one effect into as many findings as the
tuples that happen to share its factor. Significant subsets of the same label then fold into one
finding: the one that explains the others. X explains Y when, once X's jobs are set aside, what is
left of Y is no more often failed than the jobs in neither, and, where Y lies within X (Y adds a
factor), the added factor changes nothing inside X. A change point also explains a configuration
whose values were all first seen on its day: one image rolled out everywhere that day is one
effect, and the counts cannot tell the two apart. docs/operators/report-findings.md says more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from slurm_hooks.report.finding import ALPHA, Test
from slurm_hooks.report.significance import binom_sf, fisher_greater, fisher_two_sided
from slurm_hooks.report.wording import CONFIG_KEYS, SCALE_KEYS

# raw p at or above which what is left, or a factor added, counts as nothing: what stands apart
# must be as clear as a finding (finding.ALPHA)
EXPLAINED_P = ALPHA


DIMENSIONS = (*CONFIG_KEYS, *SCALE_KEYS)
UNKNOWN = ("", "0")  # an unknown value, or a job on no node, is not a factor
Cell = tuple[str, str, str]  # configuration, nodes bucket, racks bucket


@dataclass(frozen=True)
class Subset:
    factors: tuple[str, ...]  # the defining keys, in DIMENSIONS' order
    values: dict[str, str]  # every key whose value is the same in all its cells
    cells: frozenset[Cell]


def dimensions(cell: Cell) -> dict[str, str]:
    config, nodes, racks = cell
    return {**dict(zip(CONFIG_KEYS, config.split(" "), strict=True)), "nodes": nodes, "racks": racks}


def subsets(cells: list[Cell]) -> Iterator[Subset]:
    """Each configuration factor's values alone, then each pair of factors with at least one of the
    configuration's (width alone is the trend test's); a subset holding the same cells as a smaller
    (or earlier) one is that one, and a subset of every cell is no subset."""
    split = {cell: dimensions(cell) for cell in cells}
    seen: set[frozenset[Cell]] = {frozenset(cells), frozenset()}
    for key in SCALE_KEYS:  # width alone is the trend test's: a pair that is only a width is not tested
        seen.update(frozenset(c for c in cells if split[c][key] == v) for v in {split[c][key] for c in cells})
    for keys in (*combinations(CONFIG_KEYS, 1), *(k for k in combinations(DIMENSIONS, 2) if k[0] in CONFIG_KEYS)):
        for value in sorted({tuple(split[c][k] for k in keys) for c in cells}):
            if any(v in UNKNOWN for v in value):
                continue
            members = frozenset(c for c in cells if tuple(split[c][k] for k in keys) == value)
            if members in seen:
                continue
            seen.add(members)
            first = split[next(iter(members))]
            common = {k: v for k, v in first.items() if v not in UNKNOWN and all(split[c][k] == v for c in members)}
            yield Subset(keys, {k: common[k] for k in DIMENSIONS if k in common}, members)


class Cells:
    """Jobs and failures by cell (configuration x width): any subset's counts, summed on demand."""

    def __init__(self, by_cell: dict[Cell, Counter[str]]) -> None:
        self.by_cell = by_cell
        self.jobs = {cell: sum(labels.values()) for cell, labels in by_cell.items()}

    def count(self, cells: frozenset[Cell], label: str) -> tuple[int, int]:
        return sum(self.by_cell[c][label] for c in cells), sum(self.jobs[c] for c in cells)

    def greater(self, inside: frozenset[Cell], outside: frozenset[Cell], label: str) -> float:
        (a, n1), (c, n2) = self.count(inside, label), self.count(outside, label)
        return fisher_greater(a, n1 - a, c, n2 - c) if n1 and n2 else 1.0

    def explains(self, x: frozenset[Cell], y: frozenset[Cell], label: str) -> float | None:
        """The p-value that shows x explains y (the larger of the tests made), or None if it does not."""
        if not x & y:
            return None
        neither = frozenset(self.by_cell) - x - y
        p = self.greater(y - x, neither, label) if y - x else 1.0
        if y <= x:  # y adds a factor to x: does it change anything inside x?
            (a, n1), (c, n2) = self.count(y, label), self.count(x - y, label)
            p = fisher_two_sided(a, n1 - a, c, n2 - c) if n1 and n2 else 1.0
        return p if p >= EXPLAINED_P else None

    def quarters(self, test: Test) -> list[dict[str, Any]]:
        """A pair's four cells: both factors, each alone, neither, with their rates."""
        first, second = (
            frozenset(c for c in self.by_cell if dimensions(c)[k] == test.subject[k]) for k in test.extra["factors"]
        )
        everything = frozenset(self.by_cell)
        out = []
        for one, two, cells in (
            (True, True, first & second),
            (True, False, first - second),
            (False, True, second - first),
            (False, False, everything - first - second),
        ):
            a, n = self.count(cells, test.label)
            out.append({"first": one, "second": two, "jobs": n, "failures": a, "rate": round(a / n, 4) if n else 0.0})
        return out

    def interaction(self, test: Test) -> float:
        """One-sided p that the pair's cell fails more than either model of two separate effects
        predicts (rates adding, or multiplying): small means the factors act together."""
        both, first, second, neither = ((q["failures"], q["jobs"]) for q in self.quarters(test))
        r1, r2, r0 = (a / n if n else 0.0 for a, n in (first, second, neither))
        expected = min(1.0, max(r1 + r2 - r0, r1 * r2 / r0 if r0 else 0.0))
        return binom_sf(both[0], both[1], expected) if expected > 0 else (0.0 if both[0] else 1.0)


Found = tuple[float, Test]  # the corrected p-value and its test


def fold_effects(found: list[Found], cells: Cells) -> list[Found]:
    """One label's significant configuration subsets and width trends in one cluster, folded:
    fewest factors first, strongest first; each is kept unless one kept already explains it, and a
    pair of factors is kept beside what it overlaps only where the two act together (interaction)."""
    for _, test in found:
        if test.kind == "scale":  # its widest bucket's cells
            test.members = _bucket(cells, test.subject["spanned"], test.subject["bucket"])
    kept: list[Found] = []
    for p, test in sorted(found, key=lambda pt: (_size(pt[1]), pt[1].p_raw)):
        if _absorbed(kept, test, cells):
            continue
        if len(test.extra.get("factors", ())) == 2:
            quarters, together = cells.quarters(test), cells.interaction(test)
            overlapping = [other for _, other in kept if other.members & test.members]
            if overlapping and together >= EXPLAINED_P:  # what the overlapping effects predict together
                also(overlapping[0], test, together)
                continue
            test.extra.update(cells=quarters, interaction_p=float(f"{together:.3g}"))
        rest = []
        for q, other in kept:
            shown = cells.explains(test.members, other.members, test.label)
            if shown is None:
                rest.append((q, other))
            else:
                also(test, other, shown)
        kept = [*rest, (p, test)]
    return kept


def _size(test: Test) -> int:
    """How many factors a finding names: a width trend, one (the width)."""
    return len(test.extra.get("factors", ())) or 1


def _absorbed(kept: list[Found], test: Test, cells: Cells) -> bool:
    for _, other in kept:
        members = other.members
        spanned = other.subject.get("spanned")
        if other.kind == "scale" and spanned in test.subject:  # within the pair's own width bucket
            members = _bucket(cells, spanned, test.subject[spanned])
        shown = cells.explains(members, test.members, test.label)
        if shown is not None:
            also(other, test, shown)
            return True
    return False


def _bucket(cells: Cells, spanned: str, bucket: str) -> frozenset[Cell]:
    return frozenset(c for c in cells.by_cell if dimensions(c)[spanned] == bucket)


def fold_into_changes(found: list[Found]) -> list[Found]:
    """A configuration whose defining values were all first seen on the day a change of its label
    rose folds into that change."""
    changes = [t for _, t in found if t.kind == "change" and t.subject["direction"] == "up"]
    out: list[Found] = []
    for p, test in found:
        change = next((c for c in changes if test.kind == "config" and _new_then(test, c)), None)
        if change is None:
            out.append((p, test))
        else:
            also(change, test, None)
    return out


def _new_then(config: Test, change: Test) -> bool:
    if (config.label, config.subject["cluster"]) != (change.label, change.subject["cluster"]):
        return False
    new = change.extra["new"]
    return all(config.subject[k] in new.get(k, ()) for k in config.extra["factors"])


def also(into: Test, test: Test, p: float | None) -> None:
    """Fold `test` (and what it had folded) into `into`, with the evidence that it adds nothing."""
    entry: dict[str, Any] = {"kind": test.kind, "subject": test.subject, "failures": test.failures, "jobs": test.jobs}
    if "factors" in test.extra:
        entry["factors"] = test.extra["factors"]
    entry["p_adds_nothing"] = float(f"{p:.3g}") if p is not None else None
    into.extra.setdefault("also_seen_in", []).extend([entry, *test.extra.pop("also_seen_in", [])])
