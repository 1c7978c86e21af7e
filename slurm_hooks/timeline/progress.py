"""Did training go on after a line? Progress lines read on demand (log-signatures §8.12, §8.30, §8.31).

Progress lines (training iterations, a Trainer's loss dicts, progress bars) are most of a training
log, so they are never scanned for. Two bounded reads answer the questions the classifier asks:
- forward from a line (a save's start marker, a fault), at most MAX_READ bytes, stopping at the
  first progress line its caller accepts;
- a log's last MAX_TAIL bytes, for the last progress line of each stream there: what the job did
  last, however long ago a fault was.
A `progress` pattern's line is progress where it stands. A `progress_counters` pattern (a tqdm
bar, whose `n` group is its count) is progress only where its stream's count went up within the
read: a bar re-draws itself when it closes, after a traceback, so one reading proves nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from slurm_hooks.bundle import JobInfo, open_below
from slurm_hooks.rules.pattern import LinearPattern, any_of
from slurm_hooks.timeline import structured
from slurm_hooks.timeline.clocks import ClockContext, log_time
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.longlines import decode
from slurm_hooks.timeline.prefixes import Prefixed, inherit, strip_prefixes
from slurm_hooks.timeline.scan import MAX_LINE, line_terminator

MAX_READ = 1 << 20  # bytes read forward from a line at most
MAX_TAIL = 2 << 20  # bytes of a log's end read for its last progress (a job's teardown fits in it)
FIRST_TAIL = 256 << 10  # read first: a job that logs its progress often has its last two there
MAX_STREAMS = 4096  # streams whose last progress a tail read keeps: one a rank of a large job

Stream = tuple[int | None, int | None, int | None]  # (srun task, torchrun local rank, global rank)


@dataclass(frozen=True)
class Progress:
    """A line that says the job went on."""

    source: str
    offset: int  # byte offset of its line
    line_no: int | None  # None from a tail read (the lines before it are not counted)
    task: int | None
    local_rank: int | None
    rank: int | None
    time: datetime | None  # its own stamp

    @property
    def stream(self) -> Stream:
        return self.task, self.local_rank, self.rank


@dataclass(frozen=True)
class Patterns:
    """The pack's progress lines and counters."""

    lines: tuple[LinearPattern, ...]
    counters: tuple[LinearPattern, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.lines or self.counters)


class _Reader:
    """Progress lines of consecutive lines of one file, each `\\r` segment a line of its own (§8.24)."""

    def __init__(self, source: str, patterns: Patterns, job: JobInfo) -> None:
        self.source, self.patterns = source, patterns
        # one RE2 pass a line for each kind; prefixes and counts on hits only
        self.lines, self.any = any_of(patterns.lines), any_of([*patterns.lines, *patterns.counters])
        self.clock = ClockContext(reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone)
        self.counts: dict[Stream, int] = {}

    def line(self, raw: bytes, offset: int, line_no: int | None) -> Iterator[tuple[Progress, str]]:
        """(progress line, its text past its prefixes): its stamp is read by `timed`, for those kept."""
        text = decode(raw[:MAX_LINE])
        if not self.any(text):
            return
        first: Prefixed | None = None
        for segment in text.split("\r"):
            pre = strip_prefixes(segment)
            pre = pre if first is None else inherit(pre, first)
            first = first or pre
            record = structured.decode(pre.body)  # a JSON or logfmt record's lines, as the scan reads them (§8.35)
            lines = structured.record_lines(segment, pre, record, self.clock) if record is not None else ()
            for placed, when in [(ln.pre, ln.time) for ln in lines] or [(pre, None)]:
                if self._went_on(placed):
                    found = Progress(self.source, offset, line_no, placed.task, placed.local_rank, placed.rank, when)
                    yield found, placed.body

    def timed(self, found: Progress, body: str) -> Progress:
        """Its own stamp, else its record's time (a record line carries none of its own)."""
        return replace(found, time=log_time(body, self.clock) or found.time)

    def _went_on(self, pre: Prefixed) -> bool:
        if self.patterns.lines and self.lines(pre.body):
            return True
        for pattern in self.patterns.counters:
            found = pattern.search(pre.body)
            n = (found.groupdict().get("n") or "") if found else ""
            if n.isdigit():
                stream = (pre.task, pre.local_rank, pre.rank)
                before = self.counts.get(stream)
                self.counts[stream] = int(n)
                return before is not None and int(n) > before
        return False


def read_on(
    root: Path,
    source: str,
    offset: int,
    line_no: int,
    patterns: Patterns,
    job: JobInfo,
    accept: Callable[[Progress], bool | None],
    skip_first: bool = True,
    limit: int = MAX_READ,
) -> Progress | None:
    """The first progress line after the line at `offset` (numbered `line_no`) that `accept`
    takes (True); `accept` answering False ends the read. At most `limit` bytes are read."""
    if not patterns or not source.startswith("logs/"):
        return None
    try:
        with open_below(root, source) as fh:  # a link planted since the scan is refused, not followed
            term = line_terminator(fh)
            fh.seek(offset)
            data = fh.read(limit)
    except OSError:
        return None
    lines = data.split(term)
    if len(data) == limit or not lines[-1]:
        lines.pop()  # cut by the bound, or the empty piece after the file's last terminator
    reader = _Reader(source, patterns, job)
    pos = offset
    for number, raw in enumerate(lines, start=line_no):
        here, pos = pos, pos + len(raw) + len(term)
        if skip_first and number == line_no:
            continue
        for bare, body in reader.line(raw, here, number):
            found = reader.timed(bare, body)
            verdict = accept(found)
            if verdict is not None:
                return found if verdict else None
    return None


def progress_after(
    root: Path,
    marker: Event,
    patterns: Sequence[LinearPattern] | Patterns,
    job: JobInfo,
    until_line: int | None = None,
) -> tuple[int, datetime | None] | None:
    """(line number, time) of the first progress line of the marker's srun task after it, or None.

    `until_line` stops the search there (a crash in the same file); a marker without a task
    label takes any task's progress.
    """
    pats = patterns if isinstance(patterns, Patterns) else Patterns(tuple(patterns))

    def accept(p: Progress) -> bool | None:
        if until_line is not None and p.line_no is not None and p.line_no >= until_line:
            return False
        return True if marker.task is None or p.task == marker.task else None

    found = read_on(root, marker.source, marker.offset, marker.line_no, pats, job, accept)
    return (found.line_no or 0, found.time) if found is not None else None


def last_progress(
    root: Path, source: str, patterns: Patterns, job: JobInfo, budget: int = MAX_TAIL, keep: int = 2
) -> list[Progress]:
    """The last `keep` progress lines of each stream in the file's last `budget` bytes, in file order.

    The last FIRST_TAIL bytes first: where a stream logged `keep` there, that is the job's last
    progress (a job whose ranks all log progress logs it in one interval); else all `budget`."""
    if not patterns or not source.startswith("logs/"):
        return []
    try:
        with open_below(root, source) as fh:
            term = line_terminator(fh)
            size = fh.seek(0, 2)
            for window in dict.fromkeys((min(FIRST_TAIL, budget), budget)):
                start = max(0, size - window)
                fh.seek(start)
                found = _last_in(fh.read(window), start, term, _Reader(source, patterns, job), keep)
                if start == 0 or any(n >= keep for n in found.counts.values()):
                    break
    except OSError:
        return []
    return found.readings


@dataclass
class _Last:
    readings: list[Progress]
    counts: dict[Stream, int]  # readings of each stream in the window


def _last_in(data: bytes, start: int, term: bytes, reader: _Reader, keep: int) -> _Last:
    lines = data.split(term)
    pos = start
    if start > 0:  # the first line is cut: its head, launcher prefix included, lies before the read
        head, cr, rest = lines[0].partition(b"\r")
        pos += len(head) + len(cr)
        lines[0] = rest  # a progress bar's later `\r` segments are whole (one line may hold a whole run's bar)
    last: dict[Stream, list[tuple[Progress, str]]] = {}
    counts: dict[Stream, int] = {}
    for raw in lines:
        for found, body in reader.line(raw, pos, None):
            if found.stream in last or len(last) < MAX_STREAMS:
                last[found.stream] = [*last.get(found.stream, []), (found, body)][-keep:]
                counts[found.stream] = counts.get(found.stream, 0) + 1
        pos += len(raw) + len(term)
    readings = sorted((reader.timed(p, body) for kept in last.values() for p, body in kept), key=lambda p: p.offset)
    return _Last(readings, counts)
