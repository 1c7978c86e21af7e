"""The `app_exception` verdict: which rank raised what, where, and what to tell the user (§8.26)."""

from __future__ import annotations

from typing import Any

from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.verdict import Seen, Verdict
from slurm_hooks.rules.families import KIND_CONDITION
from slurm_hooks.timeline.events import Event

_EXCEPTION_CHARS = 160


def exception_verdict(ctx: Context, fault: Event, after: Seen | None) -> Verdict:
    """The exception and its other sightings (the rank's own traceback, torchrun's error_file copy)."""
    same = [
        e
        for e in ctx.events
        if e is not fault
        and ctx.has(e, "exception")
        and e.fields.get("exc_type") == fault.fields.get("exc_type")
        and e.fields.get("msg") == fault.fields.get("msg")
        and (e.rank is None or fault.rank is None or e.rank == fault.rank)
        and (e.node is None or fault.node is None or e.node == fault.node)
    ]
    sightings = [fault, *same]
    rank = next((e.rank for e in sightings if e.rank is not None), None)
    node = next((e.node for e in sightings if e.node), None) or ctx.ranks.node_of(rank)
    nodes = ctx.ranks.nodes
    node = node if node in nodes else (nodes[0] if len(nodes) == 1 else None)  # one node: it is the place
    f = fault.fields
    details: dict[str, Any] = {
        "exception": {
            "type": f.get("exc_type", ""),
            "message": f.get("msg", ""),
            "frame": f.get("frame") or None,
            "kind": f.get("kind", "other"),
            "ranks": max(int(f.get("ranks", "1")), 1),
            "points_at_node": bool(f.get("node_fault")),
        }
    }
    others = [e for e in ctx.events if ctx.has(e, "exception") and e not in sightings][:4]
    evidence = [*sightings[:3], *others, *([after.first] if after else [])]
    return Verdict("primary", "app_exception", fault, node, rank, evidence, details, after)


def described(v: Verdict) -> str:
    """`OSError: [Errno 28] No space left on device` (cut), for summaries and advice."""
    exc = v.details["exception"]
    text = f"{exc['type']}: {exc['message']}" if exc["message"] else exc["type"]
    return text if len(text) <= _EXCEPTION_CHARS else text[: _EXCEPTION_CHARS - 1] + "…"


def summary(v: Verdict, who: str, at: str) -> str:
    exc = v.details["exception"]
    text = f"{who} raised {described(v)}"
    if exc["kind"] != "other":
        text += f" ({exc['kind'].replace('_', ' ')})"
    if exc["frame"]:
        text += f" in {exc['frame']}"
    text += at
    if exc["ranks"] > 1:
        text += f"; {exc['ranks'] - 1} more rank{'s' if exc['ranks'] > 2 else ''} raised the same"
    return text


def advice_values(v: Verdict) -> dict[str, Any]:
    exc = v.details.get("exception") if v.label == "app_exception" else None
    if not exc:
        return {}
    path = next((e.fields["path"] for e in v.evidence if e is v.fault and "path" in e.fields), None)
    return {"exception": described(v), "path": path}


def conditions(v: Verdict) -> set[str]:
    exc = v.details.get("exception") if v.label == "app_exception" else None
    return {KIND_CONDITION + exc["kind"]} if exc else set()
