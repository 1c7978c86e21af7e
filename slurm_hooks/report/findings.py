"""What an admin should act on: every test the report can make on a window's tallies, corrected
together (Benjamini–Hochberg over all of them, every cluster's), kept only where the effect is
also large enough to matter, ordered by the strength of its evidence, then by the node-hours it
cost (a chance repeat on a costly node must not read above a sick node). docs/operators/report-findings.md
says how each kind is tested and what the test assumes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.causes import EVIDENCE, evidence
from slurm_hooks.report.factors import Found, fold_effects, fold_into_changes
from slurm_hooks.report.finding import ALPHA, Test
from slurm_hooks.report.findings_fleet import config_cells, config_tests, group_tests, node_tests
from slurm_hooks.report.findings_trend import change_tests, scale_tests
from slurm_hooks.report.significance import benjamini_hochberg
from slurm_hooks.report.wording import sentence


def findings(tallies: list[Tally]) -> list[dict[str, Any]]:
    made = [test for t in tallies for test in tests(t)]
    first = benjamini_hochberg([test.p_raw for test in made])
    best: dict[tuple[Any, ...], tuple[float, Test]] = {}
    for test, p in zip(made, first, strict=True):
        if p >= ALPHA or not test.large:
            continue
        # one change point per label, one of nodes/racks spanned per label: the strongest
        key = (test.kind, test.label, *sorted(test.subject.items()), *test.extra.get("factors", ()))
        if test.kind in ("change", "scale"):
            key = (test.kind, test.label, test.subject["cluster"])
        if key not in best or test.p_raw < best[key][1].p_raw:
            best[key] = (p, test)
    chosen = {id(test) for _, test in fold(list(best.values()), {t.cluster: t for t in tallies})}
    # A second pass: a significant test folded into a finding, or a weaker change point of a label,
    # tested the same effect, and is not counted as a second discovery (its p is 1 now), so one
    # strong effect tested many ways cannot make the correction lenient for the rest.
    again = [
        test.p_raw if id(test) in chosen or p >= ALPHA or not test.large else 1.0
        for test, p in zip(made, first, strict=True)
    ]
    second = benjamini_hochberg(again)
    kept = [(p, test) for test, p in zip(made, second, strict=True) if id(test) in chosen and p < ALPHA]
    found = [test.finding(p) for p, test in kept]
    for f in found:
        f["tests"] = len(made)
        f["evidence"] = evidence(f["p_value"])
        f["text"] = sentence(f)
    strength = [name for name, _ in EVIDENCE]
    return sorted(
        found,
        key=lambda f: (
            strength.index(f["evidence"]),
            -f["node_hours"],
            -f["gpu_hours"],
            f["p_value"],
            f["kind"],
            f["label"],
        ),
    )


def fold(found: list[Found], tallies: dict[str, Tally]) -> list[Found]:
    """The fewest factors (factors.py): configuration subsets of one label and cluster folded into
    the one that explains them, then into a change of that label whose day first saw them."""
    configs: dict[tuple[str, str], list[Found]] = defaultdict(list)
    for p, test in found:
        if test.kind in ("config", "scale"):
            configs[test.subject["cluster"], test.label].append((p, test))
    rest = [(p, test) for p, test in found if test.kind not in ("config", "scale")]
    for (cluster, _), group in sorted(configs.items()):
        rest += fold_effects(group, config_cells(tallies[cluster]))
    return fold_into_changes(rest)


def tests(t: Tally) -> Iterator[Test]:
    """Every test made on one cluster's tally, in a fixed order."""
    yield from config_tests(t)
    yield from node_tests(t)
    yield from change_tests(t)
    yield from scale_tests(t)
    yield from group_tests(t)
