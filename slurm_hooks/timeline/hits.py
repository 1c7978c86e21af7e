"""Keyword hits -> candidate rules, with the work each rule family may cause per file capped.

A log of a million `srun: error: x` lines would put a million lines through the rules. Each
family examines at most `limits.hits_per_family` lines per file; past that its rules are off for
the file and its lines are only counted (said in `skipped`). When the hits that reach us are
mostly for spent families, the file is scanned on from there without their keywords, so the
rest of the file costs ripgrep's time, not Python's, and a crash after the flood is still found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

from slurm_hooks.bundle import BundleFile
from slurm_hooks.rules import Rule
from slurm_hooks.timeline.scan import Hit, Scanner

RESCAN_AFTER = 2000  # hits in a row for spent families before the scan goes on without their keywords


class FamilyCap:
    def __init__(self, rules: Sequence[Rule], cap: int) -> None:
        self.rules = list(rules)
        self.cap = cap
        self.examined: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()
        # Each keyword once, with the rules (by their place in the pack) that hold it: a line costs
        # one substring test per distinct keyword, not one per rule and keyword.
        self.holders: dict[str, list[int]] = {}
        for i, rule in enumerate(self.rules):
            for k in rule.keywords:
                self.holders.setdefault(k, []).append(i)
        self._pairs = tuple(self.holders.items())  # a flat loop: the hottest one on a big job's log

    def candidates(self, line: str) -> list[Rule]:
        """Rules with a keyword in `line` whose family still has work left; counts the line."""
        found = [holders for k, holders in self._pairs if k in line]
        # each holders list is in pack order already: one keyword's rules need no sort
        order = found[0] if len(found) == 1 else sorted({i for holders in found for i in holders})
        hit = [self.rules[i] for i in order]
        families = {r.family for r in hit}
        for family in families:
            if self.examined[family] >= self.cap:
                self.cut[family] += 1
            else:
                self.examined[family] += 1
        return [r for r in hit if not self.cut[r.family]]

    def live_keywords(self, keywords: Sequence[str]) -> list[str]:
        live = {k for r in self.rules if self.examined[r.family] < self.cap for k in r.keywords}
        return [k for k in keywords if k in live]

    def notes(self, source: str) -> list[str]:
        return [
            f"{source}: {n} more '{family}' lines counted, not examined (limits.hits_per_family={self.cap})"
            for family, n in sorted(self.cut.items())
        ]


def capped_hits(
    file: BundleFile, scanner: Scanner, keywords: Sequence[str], cap: FamilyCap, notes: list[str]
) -> Iterator[tuple[Hit, list[Rule]]]:
    """(hit, candidate rules) for each line of `file` some family with work left may match."""
    live, after, offset = list(keywords), 0, 0
    while live:
        with file.open() as fh:
            idle = 0
            for hit in scanner.scan(fh, live, notes, after, offset):
                rules = cap.candidates(hit.text)
                idle = 0 if rules else idle + 1
                if rules:
                    yield hit, rules
                elif idle >= RESCAN_AFTER and len(still := cap.live_keywords(live)) < len(live):
                    live, after, offset = still, hit.line_no, hit.offset
                    break
            else:
                return
