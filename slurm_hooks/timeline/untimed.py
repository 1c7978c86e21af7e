"""Untimed lines on the clock: crash, marker and first-symptom lines take their neighbours' stamps,
every other one the time of the nearest event in its file."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import BinaryIO

from slurm_hooks.bundle import BundleFile
from slurm_hooks.timeline import structured
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
        neighbours = Neighbours(fh, line_terminator(fh), ctx)
        for ev in sorted(wanted, key=lambda e: hits[e.line_no].offset):
            ev.lo, ev.hi = neighbours.around(hits[ev.line_no].offset, ev.task)
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


class Neighbours:
    """The nearest stamps before and after lines of a file, asked in file order.

    A line's neighbours are the stamped lines wholly inside `window` bytes each way, the same srun
    task's first. Each line of the file is read and parsed once however the windows overlap: a
    thousand ranks' crash lines sit together, and reading each one's windows anew parsed 1.5
    million lines (4 s) on a 1,152-node job whose every rank crashed. Only the stamped lines of
    the current windows are kept, and a line longer than a window (never wholly inside one) is skipped.
    """

    def __init__(self, fh: BinaryIO, term: bytes, ctx: ClockContext, window: int = NEIGHBOUR_WINDOW) -> None:
        self.fh, self.term, self.ctx, self.window = fh, term, ctx, window
        self.read_to = 0  # the file is read up to here; `carry` is the start of a line that goes on
        self.carry = b""
        self.skipping = False  # the line `carry` belongs to is longer than a window: dropped
        # stamped lines read, by start: (start, end = its terminator's offset, srun task, stamp)
        self.stamped: list[tuple[int, int, int | None, datetime]] = []

    def around(self, offset: int, task: int | None) -> tuple[datetime | None, datetime | None]:
        """(before, after) of the line that starts at `offset`, no earlier than the last one asked."""
        first = offset - self.window
        if first > self.read_to:  # a gap since the last window: the line there began before the window
            self.read_to, self.carry, self.skipping = first, b"", True
        while self.read_to < offset + self.window and self._read():
            pass
        if first > 0:  # lines that start at the window's first byte or before are cut: gone for good
            del self.stamped[: bisect_right(self.stamped, first, key=_start)]
        lo, hi = bisect_left(self.stamped, offset, key=_start), bisect_right(self.stamped, offset, key=_start)
        before = _nearest(reversed(self.stamped[:lo]), task, lambda end: True)
        after = _nearest(self.stamped[hi:], task, lambda end: end < offset + self.window)
        return before, after

    def _read(self) -> bool:
        self.fh.seek(self.read_to)
        chunk = self.fh.read(self.window)
        if not chunk:
            return False
        start = self.read_to - len(self.carry)
        *whole, rest = (self.carry + chunk).split(self.term)
        for raw in whole:
            if not self.skipping:
                pre = strip_prefixes(decode(raw[:MAX_LINE]))
                if (stamp := log_time(pre.body, self.ctx) or _record_time(pre.body, self.ctx)) is not None:
                    self.stamped.append((start, start + len(raw), pre.task, stamp))
            self.skipping = False
            start += len(raw) + 1
        self.read_to += len(chunk)
        self.carry = rest
        if len(rest) > self.window:
            self.carry, self.skipping = b"", True
        return True


def _record_time(body: str, ctx: ClockContext) -> datetime | None:
    """A JSON or logfmt record's own time field (§8.35): a container's `time` sits past where a
    plain line's stamp is looked for."""
    record = structured.decode(body)
    return structured.record_time(record, ctx) if record is not None else None


def _start(line: tuple[int, int, int | None, datetime]) -> int:
    return line[0]


def _nearest(
    lines: Iterable[tuple[int, int, int | None, datetime]], task: int | None, inside: Callable[[int], bool]
) -> datetime | None:
    """The first stamp of the same task among `lines` (nearest first) that end inside the window, else the first."""
    fallback = None
    for _, end, line_task, stamp in lines:
        if not inside(end):
            break
        if task is None or line_task == task:
            return stamp
        fallback = fallback or stamp
    return fallback
