"""The diagnosis record (DESIGN.md `diagnose --json` contract) and how events appear in it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from slurm_hooks.rules import LABELS
from slurm_hooks.timeline.events import Event

__all__ = ["LABELS", "Diagnosis", "event_record", "fault_record", "iso"]


@dataclass
class Diagnosis:
    job_id: str
    label: str
    summary: str
    root_node: str | None
    root_rank: int | None
    first_fault: dict[str, Any] | None
    evidence: list[dict[str, Any]]
    advice: list[str]
    facts: dict[str, Any]
    details: dict[str, Any] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def iso(t: datetime | None) -> str | None:
    return t.isoformat().replace("+00:00", "Z") if t else None


def event_record(ev: Event) -> dict[str, Any]:
    return {
        "time": iso(ev.when),
        "time_exact": ev.time is not None,
        "kind": ev.family,
        "rule": ev.rule.name,
        "node": ev.node,
        "rank": ev.rank,
        "source": f"{ev.source}:{ev.line_no}",
        "line": ev.text,
    }


def fault_record(ev: Event) -> dict[str, Any]:
    rec = event_record(ev)
    return {k: rec[k] for k in ("time", "time_exact", "kind", "node", "rank", "source", "line")}
