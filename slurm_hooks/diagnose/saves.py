"""Was a checkpoint save running when a crash happened? Windows open and close (log-signatures §8.3, §8.12).

A window opens at a start marker and closes at the end marker of that save or, for a synchronous
save, when the rank logs a training iteration after the start. Markers are ordered against the
crash by position in one file first, then by the clocks; an end marker the clocks cannot place
closes a window just as an unplaceable start marker opens one. An async save's window stays open
through training until its finalize line.
"""

from __future__ import annotations

from slurm_hooks.diagnose.context import Context
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.progress import progress_after


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
    is_async = ctx.has(start, "async_save") or any(
        ctx.has(m, "async_save") and order.precedes(m, crash) is not False for m in later
    )
    if not is_async and _trained_since(ctx, start, crash):
        return None
    return start


def _trained_since(ctx: Context, start: Event, crash: Event) -> bool:
    """The start marker's rank logged a training iteration after it, before the crash."""
    same_file = crash.source == start.source
    found = progress_after(
        ctx.bundle.root, start, ctx.pack.progress, ctx.bundle.job, until_line=crash.line_no if same_file else None
    )
    if found is None:
        return False
    _, when = found
    if same_file:
        return True
    return when is not None and crash.earliest is not None and when < crash.earliest - ctx.order.tol
