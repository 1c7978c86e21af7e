"""Untimed lines on the clock: crash, marker and first-symptom lines take their neighbours' stamps,
every other one the time of the nearest event in its file."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from slurm_hooks.bundle import BundleFile
from slurm_hooks.timeline.clocks import ClockContext, log_time
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.longlines import decode
from slurm_hooks.timeline.prefixes import strip_prefixes
from slurm_hooks.timeline.scan import MAX_LINE, Hit, line_terminator

MAX_PLACED = 500  # untimed lines placed between their neighbours, per file
NEIGHBOUR_WINDOW = 1 << 16  # bytes searched each way for a neighbour's timestamp


def place_untimed(
    file: BundleFile, events: list[Event], hits: dict[int, Hit], ctx: ClockContext, notes: list[str]
) -> None:
    """Give untimed crash, marker and first-symptom lines the stamps of their neighbours.

    The neighbour of the same srun task is preferred (srun forwards each task's stream in
    order); without one, the nearest stamped line of any task bounds it.
    """
    wanted: list[Event] = []
    first_symptom: set[str] = set()
    for ev in events:
        if ev.time is not None:
            continue
        if ev.role == "symptom":
            if ev.family in first_symptom:
                continue
            first_symptom.add(ev.family)
        elif ev.role not in ("primary", "marker"):
            continue
        wanted.append(ev)
    if len(wanted) > MAX_PLACED:
        notes.append(f"{file.rel}: {len(wanted) - MAX_PLACED} untimed lines left unplaced (ordered by position only)")
        wanted = wanted[:MAX_PLACED]
    if not wanted:
        _carry_position_clock(events)
        return
    with file.open() as fh:
        term = line_terminator(fh)
        for ev in wanted:
            offset = hits[ev.line_no].offset
            start = max(0, offset - NEIGHBOUR_WINDOW)
            fh.seek(start)
            before = fh.read(offset - start).split(term)
            if start > 0:
                before = before[1:]  # cut mid-line
            fh.seek(offset)
            after = fh.read(NEIGHBOUR_WINDOW).split(term)[1:-1]  # past the event's own line; last may be cut
            ev.lo = _nearest_stamp(reversed(before), ev.task, ctx)
            ev.hi = _nearest_stamp(after, ev.task, ctx)
    _carry_position_clock(events)


def _carry_position_clock(events: list[Event]) -> None:
    """Every other untimed line takes the time of the nearest earlier (else later) event in its file."""
    carry: datetime | None = None
    for ev in events:
        if ev.when is None:
            ev.lo = carry
        carry = ev.when or carry
    carry = None
    for ev in reversed(events):
        if ev.when is None:
            ev.hi = carry
        carry = ev.when or carry


def _nearest_stamp(lines: Iterable[bytes], task: int | None, ctx: ClockContext) -> datetime | None:
    fallback = None
    for raw in lines:
        pre = strip_prefixes(decode(raw[:MAX_LINE]))
        stamp = log_time(pre.body, ctx)
        if stamp is None:
            continue
        if task is None or pre.task == task:
            return stamp
        fallback = fallback or stamp
    return fallback
