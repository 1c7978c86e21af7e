"""Events: rule matches in a bundle's files, each placed on the job's UTC clock (built by build.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from slurm_hooks.rules import Rule


@dataclass
class Event:
    rule: Rule
    source: str  # bundle-relative: logs/job.out, kernel/<node>.log
    line_no: int
    text: str
    task: int | None  # srun task label
    rank: int | None
    node: str | None
    time: datetime | None  # UTC, from the line itself
    fields: dict[str, str] = field(default_factory=dict)
    local_rank: int | None = None  # torchrun [defaultN]
    offset: int = 0  # byte offset of the line in its file
    lo: datetime | None = None  # untimed lines: the neighbours' stamps
    hi: datetime | None = None

    @property
    def family(self) -> str:
        return self.rule.family

    @property
    def role(self) -> str:
        return self.rule.role

    @property
    def when(self) -> datetime | None:
        return self.time or self.lo or self.hi

    @property
    def earliest(self) -> datetime | None:
        return self.time or self.lo

    @property
    def latest(self) -> datetime | None:
        return self.time or self.hi

    def field_int(self, name: str) -> int | None:
        value = self.fields.get(name)
        return int(value) if value and value.lstrip("-").isdigit() else None


@dataclass
class Timeline:
    """Every event of a job in time order; which rank and node each belongs to is the classifier's to say."""

    events: list[Event]
    notes: list[str]
    # notes of lines a work cap counted without matching them (hits.py): a fault may hide there
    unexamined: list[str] = field(default_factory=list)
