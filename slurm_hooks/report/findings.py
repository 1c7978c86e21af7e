"""What an admin should act on: every test the report can make on a window's tallies, corrected
together (Benjamini–Hochberg over all of them, every cluster's), kept only where the effect is
also large enough to matter, ordered by the node-hours it cost. docs/operators/report-findings.md
says how each kind is tested and what the test assumes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.finding import ALPHA, Test
from slurm_hooks.report.findings_fleet import config_tests, group_tests, node_tests
from slurm_hooks.report.findings_trend import change_tests, scale_tests
from slurm_hooks.report.significance import benjamini_hochberg
from slurm_hooks.report.wording import sentence


def findings(tallies: list[Tally]) -> list[dict[str, Any]]:
    made = [test for t in tallies for test in tests(t)]
    adjusted = benjamini_hochberg([test.p_raw for test in made])
    best: dict[tuple[Any, ...], tuple[float, Test]] = {}
    for test, p in zip(made, adjusted, strict=True):
        if p >= ALPHA or not test.large:
            continue
        # one change point per label, one of nodes/racks spanned per label: the strongest
        key = (test.kind, test.label, test.subject["cluster"], *sorted(test.subject.items()))
        if test.kind in ("change", "scale"):
            key = (test.kind, test.label, test.subject["cluster"])
        if key not in best or test.p_raw < best[key][1].p_raw:
            best[key] = (p, test)
    found = [test.finding(p) for p, test in best.values()]
    for f in found:
        f["tests"] = len(made)
        f["text"] = sentence(f)
    return sorted(found, key=lambda f: (-f["node_hours"], -f["gpu_hours"], f["p_value"], f["kind"], f["label"]))


def tests(t: Tally) -> Iterator[Test]:
    """Every test made on one cluster's tally, in a fixed order."""
    yield from config_tests(t)
    yield from node_tests(t)
    yield from change_tests(t)
    yield from scale_tests(t)
    yield from group_tests(t)
