"""Clocks of different nodes: per-node offsets from events that happen at one instant on every node (§8.22).

A node with broken NTP stamps its lines seconds off. Lines that every node prints at one moment
(the world communicator's `Init COMPLETE`, torchrun's rendezvous completing: the pack's
`sync_point` families) show each node's offset from the first node; the median over such
moments is the offset, and every stamp from that node (its ranks' lines, its kernel log) is
moved by it. Offsets within the pack's `simultaneous_s` are noise and left alone.
"""

from __future__ import annotations

import statistics
from datetime import datetime, timedelta, timezone

from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event


def node_offsets(events: list[Event], pack: RulePack, nodes: tuple[str, ...]) -> dict[str, timedelta]:
    """How far each node's clock runs ahead of the first node's (only offsets beyond the tolerance)."""
    moments: dict[str, dict[str, datetime]] = {}
    for ev in events:
        if ev.time is None or ev.node is None or not pack.has(ev.family, "sync_point"):
            continue
        at = moments.setdefault(f"{ev.rule.name}:{ev.fields.get('sync', '')}", {})
        at[ev.node] = min(at.get(ev.node, ev.time), ev.time)  # the first rank of a node to get there
    if not nodes:
        return {}
    ref, tol = nodes[0], timedelta(seconds=pack.ordering.simultaneous_s)
    offsets: dict[str, timedelta] = {}
    for node in nodes[1:]:
        diffs = [(m[node] - m[ref]).total_seconds() for m in moments.values() if node in m and ref in m]
        if diffs and abs(offset := timedelta(seconds=statistics.median(diffs))) > tol:
            offsets[node] = offset
    return offsets


def correct(events: list[Event], offsets: dict[str, timedelta]) -> list[Event]:
    """Every stamp of a skewed node moved onto the first node's clock; the events in corrected time order."""
    if not offsets:
        return events
    for ev in events:
        if ev.node in offsets:
            shift = offsets[ev.node]
            ev.time = ev.time - shift if ev.time else None
            ev.lo = ev.lo - shift if ev.lo else None
            ev.hi = ev.hi - shift if ev.hi else None
    sources = {s: i for i, s in enumerate(dict.fromkeys(ev.source for ev in events))}
    floor = datetime.min.replace(tzinfo=timezone.utc)  # the timeline's own order (timeline/build.py)
    return sorted(events, key=lambda e: (e.when or floor, sources[e.source], e.line_no))
