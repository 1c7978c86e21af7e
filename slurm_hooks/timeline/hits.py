"""Keyword hits -> candidate rules, with the work each rule family may cause per file capped.

A log of a million `srun: error: x` lines would put a million lines through the rules. Each
family examines at most `limits.hits_per_family` lines per file; past that its rules are off for
the file and its lines are only counted (said in `skipped`). When the hits that reach us are
mostly for spent families, the file is scanned on from there without their keywords, so the
rest of the file costs ripgrep's time, not Python's, and a crash after the flood is still found.

Lines are not the only cost: RE2 is linear in a line, but a pattern whose DFA keeps needing new
states (`[ab]*a[ab]{1000}c`, admitted by every static cap that admits the shipped pack) costs
~100 ms an 8 KiB line. A family's patterns get MATCH_BUDGET_S of matching in a share; past it
they are off for the share's rest, and the lines are counted as for the line cap.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from slurm_hooks.bundle import BundleFile
from slurm_hooks.rules import Rule
from slurm_hooks.rules.pattern import KeywordSet
from slurm_hooks.timeline.scan import Hit, Scanner
from slurm_hooks.timeline.structured import keyword_forms

RESCAN_AFTER = 2000  # hits in a row for spent families before the scan goes on without their keywords
# A job log's lines a family examines grow with the job's nodes: each rank prints a per-rank family a
# few times (torchrun's summary 3 lines a rank, a traceback's starts 2-3, watchdog reports 2), 8 ranks
# a node on H100/H200. Below that, a 2,600-node job's later ranks would look silent (a hang's witness).
# At most MAX_GROWTH times the limit: a log flooding every family then costs at most that many times
# what it could before: 13.7 s of a 30 s Epilog, 0.8 GiB, on 2 cores (tests/test_hostile_scale.py).
HITS_PER_NODE = 32
MAX_GROWTH = 4
# Seconds of pattern matching a family may spend in one share (a process's files). A shipped family
# spends under 0.5 s on 40,000 lines of a dense log; a hostile one stops here, whatever its lines.
MATCH_BUDGET_S = 2.0
# What a note says of lines a cap left unmatched: the diagnosis is then a guess (confidence.py).
UNEXAMINED = "counted, not examined"


def log_cap(hits_per_family: int, nodes: int) -> tuple[int, str]:
    """(lines a family examines in one job log, and why that many): the limit, or HITS_PER_NODE a node."""
    grown = min(HITS_PER_NODE * nodes, MAX_GROWTH * hits_per_family)
    if grown > hits_per_family:
        return (
            grown,
            f"{HITS_PER_NODE} a node of the job's {nodes}, up to {MAX_GROWTH}x "
            f"limits.hits_per_family={hits_per_family}",
        )
    return hits_per_family, f"limits.hits_per_family={hits_per_family}"


class KeywordIndex:
    """Each keyword of some rules once, with the rules that hold it: a line costs one pass of RE2's
    Set, not one substring test per keyword. Built once a bundle for each kind of file."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = list(rules)
        own = list(dict.fromkeys(k for r in self.rules for k in r.keywords))  # in pack order
        # what a JSON or logfmt record's escapes cannot hide of a keyword: scanned for, and a
        # candidate for the keyword's rules, which then match the record's decoded lines (§8.35)
        self.forms: dict[str, list[str]] = {}  # form -> the keywords it stands for
        for k in own:
            for f in keyword_forms(k):
                if f not in own:
                    self.forms.setdefault(f, []).append(k)
        self.keywords = own + list(self.forms)
        holders: dict[str, list[int]] = {}  # the rules' places, so each list is in pack order
        for i, rule in enumerate(self.rules):
            for k in rule.keywords:
                holders.setdefault(k, []).append(i)
        self._holders = list(holders.values())
        self._set = KeywordSet(list(holders)) if holders else None
        self._escaped = self._set  # the set with each keyword's forms too: what the scan's hits are tested with
        if self.forms:
            for form, keywords in self.forms.items():
                holders[form] = sorted({i for k in keywords for i in holders[k]})
            self._escaped_holders = list(holders.values())
            self._escaped = KeywordSet(list(holders))
        else:
            self._escaped_holders = self._holders

    def rules_in(self, line: str, escaped: bool = False) -> list[Rule]:
        """Rules with a keyword in `line`; `escaped`: or a keyword's form, as a record may hold it."""
        keywords, holders = (self._escaped, self._escaped_holders) if escaped else (self._set, self._holders)
        found = [holders[i] for i in keywords.found(line)] if keywords else []
        order = found[0] if len(found) == 1 else sorted({i for held in found for i in held})
        return [self.rules[i] for i in order]


@dataclass
class MatchMeter:
    """The time each family's patterns took in one share; a family past `budget` is off for its rest."""

    budget: float = MATCH_BUDGET_S
    clock: Callable[[], float] = time.perf_counter
    spent: dict[str, float] = field(default_factory=dict)
    off: set[str] = field(default_factory=set)

    def matches(self, rules: Iterable[Rule], body: str) -> list[tuple[Rule, dict[str, str]]]:
        """(rule, fields) of each rule matching `body` whose family still has time left."""
        found = []
        for rule in rules:
            if rule.family in self.off:
                continue
            start = self.clock()
            fields = rule.search(body)
            spent = self.spent[rule.family] = self.spent.get(rule.family, 0.0) + self.clock() - start
            if spent > self.budget:
                self.off.add(rule.family)
            if fields is not None:
                found.append((rule, fields))
        return found


class FamilyCap:
    def __init__(self, index: KeywordIndex | None, cap: int, why: str = "", meter: MatchMeter | None = None) -> None:
        self.index = index
        self.cap = cap
        self.why = why or f"limits.hits_per_family={cap}"
        self.meter = meter
        self.examined: Counter[str] = Counter()
        self.cut: Counter[str] = Counter()
        self.slow: Counter[str] = Counter()  # lines of families the meter turned off

    def candidates(self, line: str) -> list[Rule]:
        """Rules with a keyword in `line` whose family still has work left; counts the line."""
        hit = self.index.rules_in(line, escaped=True) if self.index else []
        spent = self.admit({r.family for r in hit})
        return [r for r in hit if r.family not in spent]

    def admit(self, families: Iterable[str]) -> set[str]:
        """Counts a line for `families`: those whose work is spent, it is cut for (counted only)."""
        spent = set()
        off = self.meter.off if self.meter else ()
        for family in families:
            if family in off:
                self.slow[family] += 1
                spent.add(family)
            elif self.examined[family] >= self.cap:
                self.cut[family] += 1
                spent.add(family)
            else:
                self.examined[family] += 1
        return spent

    def live_keywords(self, keywords: Sequence[str]) -> list[str]:
        rules = self.index.rules if self.index else []
        off = self.meter.off if self.meter else ()
        live = {k for r in rules if self.examined[r.family] < self.cap and r.family not in off for k in r.keywords}
        forms = self.index.forms if self.index else {}
        return [k for k in keywords if k in live or any(f in live for f in forms.get(k, ()))]

    def notes(self, source: str) -> list[str]:
        return [
            f"{source}: {n} more '{family}' lines {UNEXAMINED} ({self.why})" for family, n in sorted(self.cut.items())
        ] + [f"{source}: {n}" for n in self.slow_notes()]

    def slow_notes(self) -> list[str]:
        budget = self.meter.budget if self.meter else MATCH_BUDGET_S
        return [
            f"{n} more '{family}' lines {UNEXAMINED} (its patterns took over {budget:g} s of matching: "
            "too costly for these lines)"
            for family, n in sorted(self.slow.items())
        ]


@dataclass(frozen=True)
class Span:
    """A file's lines after line `after` (which starts at byte `offset`; with `after` 0, the line there
    is line 1) up to the one that starts at byte `stop`, as the scanners count them."""

    after: int = 0
    offset: int = 0
    stop: int | None = None  # None: to the end


WHOLE = Span()


def capped_hits(
    file: BundleFile, scanner: Scanner, keywords: Sequence[str], cap: FamilyCap, notes: list[str], span: Span = WHOLE
) -> Iterator[tuple[Hit, list[Rule]]]:
    """(hit, candidate rules) for each line of `file` (within `span`) some family with work left may match."""
    live, after, offset = list(keywords), span.after, span.offset
    while live:
        with file.open() as fh:
            idle = 0
            for hit in scanner.scan(fh, live, notes, after, offset):
                if span.stop is not None and hit.offset >= span.stop:
                    return
                rules = cap.candidates(hit.text)
                idle = 0 if rules else idle + 1
                if rules:
                    yield hit, rules
                elif idle >= RESCAN_AFTER and len(still := cap.live_keywords(live)) < len(live):
                    live, after, offset = still, hit.line_no, hit.offset
                    break
            else:
                return
