"""Which step of the job each line belongs to, and the one expansion of srun's task lists (log-signatures §8.33).

A task id is a step's: two steps of one job can reuse task ids 0..N-1 on other nodes (a data-prep
step on one node, then training on others). So a task's node is looked up in its own step's map
only, and a line that names its node keeps it over any map.

Where the steps are, from Slurm first: job.json `steps` with their start and end, when the job
ran more than one; a line belongs to the last step started by its time, or by the time of the
nearest stamped line above it in its file (stamps rise down a file). Otherwise from the logs: in
one file, srun's own lines on how a step's tasks ended (`srun: error: NODE: task(s) N: ...`)
close that step, and a task's next line opens the next one. A job with one step, or none the
bundle can tell apart, has one.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from slurm_hooks.bundle import JobInfo, StepInfo
from slurm_hooks.diagnose.bounds import MAX_TASKS_PER_NODE
from slurm_hooks.timeline.events import Event

StepKey = str  # "slurm:<id>" for a step Slurm knows, "<file>#<n>" for one the logs show
# the stamp of the nearest stamped line above byte `offset` of a job log (None: its end), or None
StampAbove = Callable[[str, "int | None"], "datetime | None"]
MAX_READ_STEPS = 64  # Slurm steps whose starts are looked for in each file by reading stamps
MAX_TASKS = 1 << 16  # (step, task) pairs srun's lines are read for, whatever ranges they print


def expand_tasks(spec: str, limit: int = MAX_TASKS_PER_NODE, below: int = 1 << 31) -> list[int]:
    """srun's compressed task lists: `8,10-11` -> [8, 10, 11]; at most `limit` ids (one line names
    one node's tasks: MaxTasksPerNode), none at or past `below` (the job's ranks)."""
    out: list[int] = []
    for part in spec.split(",", limit):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or len(lo) > 10 or len(hi) > 10:
            continue
        first, last = int(lo), min(int(hi or lo), below - 1)
        out.extend(range(first, min(last, first + limit) + 1))
        if len(out) >= limit:
            break
    return out[:limit]


@dataclass
class Steps:
    """Each event's step, and each file's step boundaries for the lines no event was made of."""

    slurm: tuple[StepInfo, ...] = ()
    _of: dict[int, StepKey] = field(default_factory=dict)  # id(event) -> its step
    _files: dict[str, tuple[list[int], list[StepKey]]] = field(default_factory=dict)  # lines, their steps

    def of(self, ev: Event) -> StepKey:
        return self._of.get(id(ev)) or self.at(ev.source, ev.line_no)

    def at(self, source: str, line_no: int) -> StepKey:
        """The step of line `line_no` of `source`: the step of the last event at or before it."""
        lines, keys = self._files.get(source, ([], []))
        i = bisect_right(lines, line_no)
        return keys[i - 1] if i else (keys[0] if keys else _ONLY)

    def __post_init__(self) -> None:
        self._slurm = {f"slurm:{s.id}": s for s in self.slurm}

    def info(self, key: StepKey) -> StepInfo | None:
        """Slurm's record of a step, when the bundle has it (the only step's, when there is one)."""
        return self.slurm[0] if len(self.slurm) == 1 else self._slurm.get(key)


_ONLY = "0"


def find_steps(job: JobInfo, events: list[Event], stamp_above: StampAbove | None = None) -> Steps:
    """`stamp_above`: the stamp of the nearest stamped line above an event in its file, for the lines
    that carry none (diagnose/world.py reads it); without it only the events' own times place them."""
    steps = Steps(slurm=job.steps)
    timed = sorted(((s.start, s.id) for s in job.steps if s.start is not None), key=lambda p: p[0])
    by_file: dict[str, list[Event]] = {}
    for ev in events:
        if ev.source.startswith("logs/"):
            by_file.setdefault(ev.source, []).append(ev)
    for source, evs in by_file.items():
        evs.sort(key=lambda e: e.line_no)
        keys = _from_slurm(timed, evs, stamp_above) if len(timed) > 1 else _from_srun(source, evs)
        for ev, key in zip(evs, keys, strict=True):
            steps._of[id(ev)] = key
        steps._files[source] = ([e.line_no for e in evs], keys)
    return steps


def first_at_or_after(evs: list[Event], when: datetime, stamp_above: StampAbove | None) -> int:
    """The index of the first of a file's events (in line order) at or after `when`: a search, since
    stamps rise down a file; a line with no stamp of its own has the one above it."""

    def after(ev: Event) -> bool:
        if ev.time is not None:
            return ev.time >= when
        if ev.lo is not None and ev.lo >= when:  # a bound from below: no read needed to say "after"
            return True
        # an event's `lo` may be carried from far above it: the stamped line above it decides
        stamp = stamp_above(ev.source, ev.offset) if stamp_above else ev.lo
        return stamp is not None and stamp >= when

    if evs and after(evs[0]):  # the usual file, wholly after: one read, not a search
        return 0
    lo, hi = min(1, len(evs)), len(evs)
    while lo < hi:
        mid = (lo + hi) // 2
        if after(evs[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _from_slurm(timed: list[tuple[datetime, str]], evs: list[Event], stamp_above: StampAbove | None) -> list[StepKey]:
    """Each line's step: the last one Slurm started at or before it. Slurm's steps, not the log's,
    say where one ends; the first step's lines are those above the second's start."""
    reader = stamp_above if len(timed) <= MAX_READ_STEPS else None  # a few reads a step, for at most so many
    keys: list[StepKey] = []
    starts = [first_at_or_after(evs, start, reader) for start, _ in timed[1:]]
    for (_, step), first, end in zip(timed, [0, *starts], [*starts, len(evs)], strict=True):
        keys.extend([f"slurm:{step}"] * max(0, end - max(first, len(keys))))
    return keys


def _from_srun(source: str, evs: list[Event]) -> list[StepKey]:
    """srun's lines on a step's tasks close it; a task's next line opens the next step."""
    keys: list[StepKey] = []
    n, closed = 0, False
    for ev in evs:
        if "tasks" in ev.fields:
            closed = True
        elif closed and ev.task is not None:
            n, closed = n + 1, False
        keys.append(f"{source}#{n}")
    return keys


def expand_lists(lines: Iterable[Event], steps: Steps, below: int) -> dict[tuple[StepKey, int], str | None]:
    """(step, task) -> node of srun's task lists (`srun: error: NODE: tasks 0-3: ...`): the one
    expansion of them. A list srun repeats for a node is read once; at most MAX_TASKS pairs."""
    found: dict[tuple[StepKey, int], str | None] = {}
    seen: set[tuple[StepKey, str | None, str]] = set()
    for ev in lines:
        if len(found) >= MAX_TASKS:
            break
        step = steps.of(ev)
        if (step, ev.node, ev.fields["tasks"]) in seen:
            continue
        seen.add((step, ev.node, ev.fields["tasks"]))
        for task in expand_tasks(ev.fields["tasks"], below=below):
            found[(step, task)] = found.get((step, task)) or ev.node
    return found
