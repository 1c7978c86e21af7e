"""Did training go on after a line? Read forward from it for a progress line (log-signatures §8.12).

Progress lines (training iterations) are most of a training log, so they are never scanned for:
only the stretch after a save's start marker is read, bounded in bytes, when a crash asks.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from slurm_hooks.bundle import JobInfo, open_below
from slurm_hooks.rules.pattern import LinearPattern
from slurm_hooks.timeline.clocks import ClockContext, log_time
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.longlines import decode
from slurm_hooks.timeline.prefixes import strip_prefixes
from slurm_hooks.timeline.scan import MAX_LINE, line_terminator

MAX_READ = 1 << 20  # bytes read after a marker at most


def progress_after(
    root: Path, marker: Event, patterns: tuple[LinearPattern, ...], job: JobInfo, until_line: int | None = None
) -> tuple[int, datetime | None] | None:
    """(line number, time) of the first progress line of the marker's srun task after it, or None.

    `until_line` stops the search there (a crash in the same file); a marker without a task
    label takes any task's progress.
    """
    if not patterns or not marker.source.startswith("logs/"):
        return None
    ctx = ClockContext(reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone)
    try:
        with open_below(root, marker.source) as fh:  # a link planted since the scan is refused, not followed
            term = line_terminator(fh)
            fh.seek(marker.offset)
            lines = fh.read(MAX_READ).split(term)[1:-1]  # past the marker's own line; the last may be cut
    except OSError:
        return None
    for line_no, raw in enumerate(lines, start=marker.line_no + 1):
        if until_line is not None and line_no >= until_line:
            return None
        pre = strip_prefixes(decode(raw[:MAX_LINE]))
        if (marker.task is None or pre.task == marker.task) and any(p.search(pre.body) for p in patterns):
            return line_no, log_time(pre.body, ctx)
    return None
