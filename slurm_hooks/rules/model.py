"""The rule pack's records: rules, the Xid and ordering policies, and the pack they make up."""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_hooks.rules.families import AdviceLine, Family
from slurm_hooks.rules.pattern import LinearPattern


class RulePackError(ValueError):
    """A rule file is unreadable or invalid; the message names the file and the key."""


@dataclass(frozen=True)
class Rule:
    name: str
    family: str
    role: str
    source: str
    keywords: tuple[str, ...]
    regex: LinearPattern
    fields: dict[str, str] = field(default_factory=dict)
    priority: int = 0
    unless: LinearPattern | None = None  # a line this also matches is not this rule (RE2 has no `(?!...)`)

    def applies_to(self, source_kind: str) -> bool:
        return self.source in ("any", source_kind)

    def search(self, body: str) -> dict[str, str] | None:
        """The event fields when `body` matches, else None."""
        m = self.regex.search(body)
        if m is None or (self.unless is not None and self.unless.search(body)):
            return None
        return {**self.fields, **{k: v for k, v in m.groupdict().items() if v is not None}}


@dataclass(frozen=True)
class XidPolicy:
    fatal: frozenset[int]
    fatal_at_or_above: int

    def is_fatal(self, xid: int, known: frozenset[int]) -> bool:
        return xid in self.fatal or (xid not in known and xid >= self.fatal_at_or_above)


@dataclass(frozen=True)
class Ordering:
    simultaneous_s: float = 2.0
    window_margin_s: float = 120.0
    crash_merge_s: float = 60.0
    frame_lines: int = 200
    teardown_s: float = 900.0
    save_window_s: float = 1800.0  # a save open this long, with no end marker, is over (§8.31)


ORDERING_MAX = 7 * 86400  # seconds or lines; beyond a week no ordering value means anything


@dataclass(frozen=True)
class RulePack:
    rules: tuple[Rule, ...]
    ordering: Ordering
    xid: XidPolicy
    xid_known: frozenset[int]
    advice: dict[str, tuple[AdviceLine, ...]]
    sources: tuple[str, ...]
    skipped: tuple[str, ...] = ()  # operator rule files left out, and why
    families: dict[str, Family] = field(default_factory=dict)
    progress: tuple[LinearPattern, ...] = ()  # lines that say training went on (read on demand, never scanned)
    # counters (progress bars) that say it went on only where their `n` goes up (timeline/progress.py)
    progress_counters: tuple[LinearPattern, ...] = ()
    launchers: tuple[LinearPattern, ...] = ()  # launcher prefixes (pdsh, Open MPI) in front of a line (§8.19)

    def has(self, family: str, trait: str) -> bool:
        fam = self.families.get(family)
        return fam is not None and trait in fam.traits

    def keywords(self, source_kind: str) -> list[str]:
        seen: dict[str, None] = {}
        for rule in self.rules:
            if rule.applies_to(source_kind):
                seen.update(dict.fromkeys(rule.keywords))
        return list(seen)
