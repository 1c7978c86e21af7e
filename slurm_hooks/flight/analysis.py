"""Every node's flight-recorder digests -> which ranks never arrived.

Per process group (its name, the same on every rank that made the groups in the same order), the
highest `collective_seq_id` each rank entered and completed. A rank that entered fewer
collectives than the group's others is behind; a rank with no dump while others wrote one is
without a dump (a crashed rank writes none). Both are suspects. Only ranks of nodes that sent a
digest count as without a dump: a node whose Epilog sent nothing says nothing. The digests come
from a reader that ran with the job user's rights, so they are bounded here again (ranks, groups).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from slurm_hooks.bundle import BundleFile

MAX_DOC_BYTES = 32 << 20
MAX_RANKS_SHOWN = 256  # per group in details; a larger group shows its ranks behind and a tally
MAX_RANK = 1 << 20  # a digest is the job user's reader's output: a rank past this is not one
MAX_GROUPS = 64


@dataclass
class Group:
    desc: str = ""
    entered: dict[int, int] = field(default_factory=dict)
    completed: dict[int, int] = field(default_factory=dict)

    def behind(self) -> list[int]:
        top = max(self.entered.values(), default=None)
        return sorted(r for r, seq in self.entered.items() if top is not None and seq < top)

    def to_details(self) -> dict[str, Any]:
        shown = sorted(self.entered)[:MAX_RANKS_SHOWN]
        out: dict[str, Any] = {
            "desc": self.desc,
            "last_entered": {str(r): self.entered[r] for r in shown},
            "last_completed": {str(r): self.completed[r] for r in shown if r in self.completed},
            "behind": self.behind()[:MAX_RANKS_SHOWN],
        }
        if len(self.entered) > len(shown):
            out["ranks_not_shown"] = len(self.entered) - len(shown)
        return out


@dataclass
class FlightView:
    groups: dict[str, Group]
    dumped: dict[int, str]  # rank -> node that held its dump
    without_dump: list[int]
    skipped: list[str]

    @property
    def behind(self) -> list[int]:
        return sorted({r for g in self.groups.values() for r in g.behind()})

    @property
    def suspects(self) -> list[int]:
        return sorted(set(self.behind) | set(self.without_dump))

    def to_details(self) -> dict[str, Any]:
        return {
            "dumps": len(self.dumped),
            "groups": {name: g.to_details() for name, g in sorted(self.groups.items())},
            "behind": self.behind[:MAX_RANKS_SHOWN],
            "without_dump": self.without_dump[:MAX_RANKS_SHOWN],
            "suspects": self.suspects[:MAX_RANKS_SHOWN],
            "skipped": self.skipped[:20],
        }


def load_docs(files: list[BundleFile], skipped: list[str]) -> list[dict[str, Any]]:
    """bundle/flight/<node>.json, each checked to be a mapping; what is not usable goes to `skipped`."""
    docs = []
    for f in files:
        try:
            with f.open() as fh:
                raw = fh.read(MAX_DOC_BYTES + 1)
            doc = json.loads(raw) if len(raw) <= MAX_DOC_BYTES else None
        except (OSError, ValueError, RecursionError) as exc:
            skipped.append(f"{f.rel}: not read ({type(exc).__name__})")
            continue
        if isinstance(doc, dict) and isinstance(doc.get("dumps", []), list):
            docs.append({**doc, "node": str(doc.get("node") or f.name.removesuffix(".json"))})
        else:
            skipped.append(f"{f.rel}: not a flight-recorder digest; ignored")
    return docs


def analyse(docs: list[dict[str, Any]], world: int, node_of: Callable[[int], str | None]) -> FlightView:
    groups: dict[str, Group] = {}
    dumped: dict[int, str] = {}
    skipped = [f"{d['node']}: {s}" for d in docs for s in d.get("skipped", []) if isinstance(s, str)]
    for doc in docs:
        for dump in doc["dumps"]:
            rank = dump.get("rank") if isinstance(dump, dict) else None
            digest = dump.get("digest") if isinstance(dump, dict) else None
            if not isinstance(rank, int) or not 0 <= rank < MAX_RANK or rank in dumped or not isinstance(digest, dict):
                continue  # the same rank twice: a dump prefix on a shared file system, read by every node
            dumped[rank] = doc["node"]
            _add(groups, rank, digest.get("groups"))
    reporting = {d["node"] for d in docs}
    top = min(max(world, max(dumped, default=-1) + 1), MAX_RANK)
    without = [] if not dumped else [r for r in range(top) if r not in dumped and node_of(r) in (*reporting, None)]
    return FlightView(groups, dumped, without, skipped)


def _add(groups: dict[str, Group], rank: int, found: Any) -> None:
    if not isinstance(found, dict):
        return
    for name, g in found.items():
        if not isinstance(g, dict) or not isinstance(g.get("entered"), int):
            continue
        if str(name)[:80] not in groups and len(groups) >= MAX_GROUPS:
            return
        group = groups.setdefault(str(name)[:80], Group(desc=str(g.get("desc") or "")[:80]))
        group.entered[rank] = g["entered"]
        if isinstance(g.get("completed"), int):
            group.completed[rank] = g["completed"]
