"""Was a checkpoint save running when a crash happened? Windows open and close (log-signatures §8.3, §8.12, §8.31).

A window opens at a start marker and closes at the end marker of that save, when training went on
after the start (for a synchronous save), or by the pack's bound `ordering.save_window_s`: a
save open that long with no end marker is over, and a crash long after it is not a checkpoint
crash. Markers are ordered against the crash by position in one file first, then by the clocks;
an end marker the clocks cannot place closes a window just as an unplaceable start marker opens
one. Training going on is looked for in the marker's own file (the marker's srun task, by
position) and in the job's other logs (stdout and stderr apart: the same task, by the clocks). An
async save's window stays open through training until its finalize line, or the bound.
"""

from __future__ import annotations

from bisect import bisect_left
from datetime import datetime, timedelta, timezone
from pathlib import Path

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.context import Context
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.progress import Patterns, Progress, progress_after, read_on

MAX_OTHER_LOGS = 8  # other log files read for a save's progress (stdout beside stderr, a few per-rank files)
MAX_SIGHTINGS = 4096  # crash lines looked at for a crash's stamped sightings
MAX_WALK = 4096  # events looked at back from a save's start for another log's last line before it
_FLOOR = datetime.min.replace(tzinfo=timezone.utc)


def open_save(ctx: Context, crash: Event) -> Event | None:
    """The start marker of the save still running at `crash`, or None."""
    order = ctx.order
    markers = ctx.with_any("save_start", "async_save", "save_end")  # found once, not per sighting
    starts = [m for m in markers if not ctx.has(m, "save_end") and order.precedes(m, crash) is not False]
    if not starts:
        return None
    start = starts[-1]  # the timeline is in time order: the latest save that began before the crash
    later = [m for m in markers if m is not start and order.precedes(start, m) is not False]
    if any(ctx.has(m, "save_end") and order.precedes(m, crash) is not False for m in later):
        return None
    if _past_bound(ctx, start, crash):
        return None
    is_async = ctx.has(start, "async_save") or any(
        ctx.has(m, "async_save") and order.precedes(m, crash) is not False for m in later
    )
    if not is_async and _trained_since(ctx, start, crash):
        return None
    return start


def patterns(ctx: Context) -> Patterns:
    return Patterns(ctx.pack.progress, ctx.pack.progress_counters)


def _crash_time(ctx: Context, crash: Event) -> datetime | None:
    """When the crash happened: its own stamp, else its stamped sightings' (a kernel line, a stamped
    launcher line of its node or rank the clocks cannot part from it), else the earliest it can be."""
    if crash.time is not None:
        return crash.time
    stamped = [
        e.time
        for e in ctx.with_trait("crash")[:MAX_SIGHTINGS]
        if e.time is not None
        and ((crash.rank is not None and e.rank == crash.rank) or (crash.node is not None and e.node == crash.node))
        and (crash.rank is None or e.rank is None or e.rank == crash.rank)
        and ctx.order.coincide(e, crash, ctx.merge_span)
    ]
    return min(stamped, default=crash.earliest)


def _past_bound(ctx: Context, start: Event, crash: Event) -> bool:
    """The crash came more than the pack's bound after the save began (both placed by their clocks)."""
    began, crashed = start.latest, _crash_time(ctx, crash)
    bound = timedelta(seconds=ctx.pack.ordering.save_window_s)
    return began is not None and crashed is not None and crashed - began > bound + ctx.order.tol


def _trained_since(ctx: Context, start: Event, crash: Event) -> bool:
    """The start marker's srun task logged training progress after it, before the crash."""
    same_file = crash.source == start.source
    pats = patterns(ctx)
    until = crash.line_no if same_file else None
    found = progress_after(ctx.bundle.root, start, pats, ctx.bundle.job, until_line=until)
    if found is not None:
        _, when = found
        if same_file or (when is not None and crash.earliest is not None and when < crash.earliest - ctx.order.tol):
            return True
    return any(_trained_in(ctx, source, start, crash, pats) for source in _other_logs(ctx, start))


def _other_logs(ctx: Context, start: Event) -> list[str]:
    return [f.rel for f in ctx.bundle.logs if f.rel != start.source][:MAX_OTHER_LOGS]


def _trained_in(ctx: Context, source: str, start: Event, crash: Event, pats: Patterns) -> bool:
    """A stamped progress line of the marker's task in another log, between the save's start and
    the crash by the clocks: read from that log's last event before the start (or its head)."""
    began, crashed = start.latest, _crash_time(ctx, crash)
    if began is None:
        return False  # an unstamped marker has no place in another file
    anchor = _last_before(ctx, source, start)
    offset, line_no = (anchor.offset, anchor.line_no) if anchor is not None else (0, 1)
    after = began + ctx.order.tol
    first = _first_stamped(ctx.bundle.root, source, offset, line_no, start.task, after, pats, ctx.bundle.job)
    return first is not None and (crashed is None or first < crashed - ctx.order.tol)


_FIRST: dict[tuple[object, ...], datetime | None] = {}  # each crash stream of one save asks the same
MAX_REMEMBERED = 256


def _first_stamped(
    root: Path, source: str, offset: int, line_no: int, task: int | None, after: datetime, pats: Patterns, job: JobInfo
) -> datetime | None:
    """The time of the first progress line of `task` stamped past `after`, read from a line on; read
    once for all the crash streams of one save (crash.py asks per stream)."""
    pattern_text = tuple(p.pattern for p in (*pats.lines, *pats.counters))
    key = (str(root), job.job_id, job.start, source, offset, line_no, task, after, pattern_text)
    if key in _FIRST:
        return _FIRST[key]

    def accept(p: Progress) -> bool | None:
        return True if p.time is not None and (task is None or p.task == task) and p.time > after else None

    found = read_on(root, source, offset, line_no, pats, job, accept, skip_first=offset > 0)
    if len(_FIRST) >= MAX_REMEMBERED:
        _FIRST.clear()
    _FIRST[key] = found.time if found is not None else None
    return _FIRST[key]


def _last_before(ctx: Context, source: str, start: Event) -> Event | None:
    """The last event of `source` the clocks place before the save's start: where reading it begins.

    The timeline is in time order: found by bisection, then a bounded walk back."""
    if start.earliest is None:
        return None
    events = ctx.events
    at = bisect_left(events, start.earliest - ctx.order.tol, key=lambda e: e.when or _FLOOR)
    for ev in reversed(events[max(0, at - MAX_WALK) : at]):
        if ev.source == source and ctx.order.precedes(ev, start) is True:
            return ev
    return None
