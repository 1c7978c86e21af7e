"""One crash from its sightings: the dump, the launcher's report and the kernel line; its frames and save window."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from slurm_hooks.diagnose.order import Order
from slurm_hooks.diagnose.ranks import RankMap
from slurm_hooks.rules import Ordering
from slurm_hooks.timeline.events import Event


@dataclass
class Crash:
    sightings: list[Event]
    frames: list[Event]
    save_start: Event | None
    rank: int | None
    node: str | None


def following(events: list[Event], sightings: list[Event], family: str, span: int) -> list[Event]:
    """Events of `family` printed at most `span` lines after a sighting, in the same task's stream."""
    out = []
    for ev in events:
        if ev.family != family:
            continue
        if any(s.source == ev.source and s.task == ev.task and 0 < ev.line_no - s.line_no <= span
               for s in sightings):
            out.append(ev)
    return out


def open_save(events: list[Event], crash: Event, order: Order) -> Event | None:
    """The checkpoint-start marker whose save was still running when `crash` happened."""
    latest: Event | None = None
    for m in events:
        if m.family not in ("checkpoint_start", "checkpoint_end"):
            continue
        before = order.precedes(m, crash)
        # A save that starts too close to the crash for the clocks to order still counts as open.
        opened = before or (before is None and m.family == "checkpoint_start" and m.source != crash.source)
        if opened and (latest is None or order.precedes(latest, m) is not False):
            latest = m
    return latest if latest is not None and latest.family == "checkpoint_start" else None


def collect_crash(fault: Event, events: list[Event], order: Order, ranks: RankMap, ordering: Ordering) -> Crash:
    merge = timedelta(seconds=ordering.crash_merge_s)
    rank, node = fault.rank, fault.node

    def same_crash(e: Event) -> bool:
        if e.family != "segfault":
            return False
        if rank is not None and e.rank is not None:
            return e.rank == rank
        if node and e.node and e.node != node:
            return False
        return order.near(e, fault, merge) and (node is None or e.node == node or e.source == fault.source)

    sightings = [e for e in events if e is fault or same_crash(e)]
    # Fill rank and node from whichever sighting names them (dump, launcher line, kernel line).
    rank = next((e.rank for e in sightings if e.rank is not None), None)
    node = next((e.node for e in sightings if e.node), None) or ranks.node_of(rank)
    frames = following(events, sightings, "checkpoint_frame", ordering.frame_lines)
    if rank is None:  # torchrun's failure summary names the global rank a few lines later
        rank = next((e.rank for e in following(events, sightings, "torchrun_rank", ordering.frame_lines)), None)
    save_start = next((s for e in sightings if (s := open_save(events, e, order))), None)
    return Crash(sightings, frames, save_start, rank, node)
