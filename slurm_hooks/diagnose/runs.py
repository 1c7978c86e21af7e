"""Which run of the job each line belongs to (log-signatures §8.29).

One job id holds several runs: a requeue with `--open-mode=append` (and Slurm 25.11's expedited
requeue) appends the next run to the same files, torchrun `--max-restarts` and elastic restarts
start new workers under the same launcher, a script retries its `srun`. Only the last run decides
the verdict; the others are context (`details.previous_runs`).

Boundaries, Slurm's first: `start_time` is the last run's start, and where job.json says Slurm
restarted the job, in each job log the lines above the first line stamped at or after it are an
earlier run's (an appended file's stamps rise down the file); where it does not say, only in a log
whose stamps straddle the start with a possible fault above it. Then the logs': a line the pack
marks `run: restart` ends its run (torchrun's `...; will restart worker group`), and a line marked
`run: start` that the same srun task prints again from a new process (a new pid) or, where the
line names no process, prints again at all, starts one (torchrun's launch banner, a world
communicator's NCCL `Init COMPLETE`, a framework's start banner). Boundaries with nothing between
them that could be a fault are one boundary. An unstamped line is placed by the boundary lines of
its own file; a line of a task that printed no boundary, by the most boundaries any task printed
above it. Kernel lines are bounded by the job's window already (timeline/build.py): the last run's.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.steps import StampAbove, first_at_or_after
from slurm_hooks.diagnose.trust import ended_clean
from slurm_hooks.timeline.events import Event

MAX_UNPLACED = 64  # events above a file's first stamp looked at for one; past them its top is of no known time
RUN = "run"  # the event field that marks a run's start or end (the pack's `fields: {run: ...}`)
_PROCESS = ("pid", "launcher_pid")  # fields that name the process that printed a start line
_MARK = ("task", "node", "rank", "local_rank")


@dataclass
class Runs:
    """The last run's events, and the earlier runs' events in order (each run's in timeline order)."""

    last: list[Event]
    earlier: list[list[Event]] = field(default_factory=list)
    by_slurm: bool = False  # Slurm's restart count placed some of them
    # unstamped lines between the earlier run's last stamp and the last run's first: of either run.
    # They go with the earlier run (its end, most often: a crash prints no stamp), and where nothing
    # of the last run's own explains how it ended, they may have (confidence.py says so)
    unplaced: frozenset[int] = frozenset()


def split_runs(
    job: JobInfo,
    events: list[Event],
    margin: timedelta,
    separates: Callable[[Event], bool],
    stamp_above: StampAbove,
) -> Runs:
    """`separates`: an event that may be a fault; boundaries with none between them are one.
    `stamp_above`: the stamp of the nearest stamped line above an event in its file (None: none near)."""
    index: dict[int, tuple[int, bool]] = {}  # id(event) -> (its run in its file, whether its file's last)
    by_file: dict[str, list[Event]] = {}
    for ev in events:
        if ev.source.startswith("logs/"):
            by_file.setdefault(ev.source, []).append(ev)
    for evs in by_file.values():
        index.update(_file_runs(sorted(evs, key=lambda e: e.line_no), separates))
    earlier: set[int] = set()  # events Slurm's start of the last run puts in an earlier one
    unplaced: set[int] = set()
    if job.start is not None and job.restarts != 0:  # 0: Slurm says it never restarted the job
        for evs in by_file.values():
            found, straddles = _before_start(sorted(evs, key=lambda e: e.line_no), job.start - margin, stamp_above)
            if not job.restarts:
                found = _straddling(found, stamp_above, separates) if straddles else []
            if straddles and not ended_clean(job):
                unplaced.update(id(e) for e in _between_stamps(found))
            earlier.update(id(e) for e in found)
    groups: dict[int, list[Event]] = {}
    last: list[Event] = []
    by_slurm = False
    for ev in events:
        run, final = index.get(id(ev), (0, True))
        if id(ev) in earlier:
            final, by_slurm = False, by_slurm or final
        if final:
            last.append(ev)
        else:
            groups.setdefault(run, []).append(ev)
    return Runs(last, [groups[k] for k in sorted(groups)], by_slurm, frozenset(unplaced))


def _between_stamps(found: list[Event]) -> list[Event]:
    """The unstamped events at the end of those placed before the last run's start, below the last
    one with a stamp of its own: an earlier run's end leaves its lines here, and so does a run that
    dies before it prints a stamp (at `torch.cuda.init()`). A job that completed has none: an
    earlier run's crash never fails it (§8.29)."""
    n = len(found)
    while n and found[n - 1].time is None:
        n -= 1
    return found[n:]


def _before_start(evs: list[Event], start: datetime, stamp_above: StampAbove) -> tuple[list[Event], bool]:
    """The events of one file above its first line stamped at or after the last run's start (a few
    neighbour reads a file; that line may lie below every event), and whether the file has lines on
    both sides of it. A file with no line known to be after the start keeps only the events stamped
    before it."""
    first = first_at_or_after(evs, start, stamp_above)
    if first < len(evs):
        return evs[:first], first > 0
    end = stamp_above(evs[-1].source, None) if evs else None  # the last run may have printed no event
    if end is not None and end >= start:
        return evs, bool(evs)
    return [e for e in evs if (t := e.latest) is not None and t < start], False


def _straddling(found: list[Event], stamp_above: StampAbove, separates: Callable[[Event], bool]) -> list[Event]:
    """Where job.json does not say whether Slurm restarted the job (a bundle from elsewhere): only
    the events a stamped line places before the start, in a file whose stamps straddle it (the
    caller's to say), with
    something that may be a fault among them. A log in the wrong zone lies wholly on one side,
    lines above the file's first stamp are of no known time, and a run with no fault changes nothing."""
    first = next((i for i, e in enumerate(found[:MAX_UNPLACED]) if e.time or stamp_above(e.source, e.offset)), None)
    placed = found[first:] if first is not None else []
    return placed if any(separates(e) for e in placed) else []


def _file_runs(evs: list[Event], separates: Callable[[Event], bool]) -> dict[int, tuple[int, bool]]:
    """Each event's run within its file, counted in boundaries above it, and whether it is the file's last."""
    marks: dict[int | None, list[int]] = {}  # srun task -> lines where a run starts
    seen: dict[tuple[object, ...], str | None] = {}  # a start line's speaker -> the process that printed it
    pending: set[int | None] = set()  # tasks whose last boundary nothing that may be a fault has followed yet
    for ev in evs:
        kind = ev.fields.get(RUN)
        task = ev.task
        if kind is None:
            if separates(ev) and task is None:
                pending.clear()
            elif separates(ev):
                pending.discard(task)
                pending.discard(None)
            continue
        at: int | None = None
        if kind == "restart":
            at = ev.line_no + 1
        elif kind == "start":
            speaker = (ev.rule.name, *(getattr(ev, k) for k in _MARK), ev.fields.get("comm_rank"))
            speaker += (ev.fields.get("nranks"), ev.fields.get("banner_rank"))
            process = next((ev.fields[k] for k in _PROCESS if ev.fields.get(k)), None)
            if speaker in seen and (process is None or seen[speaker] != process):
                at = ev.line_no
            seen[speaker] = process
        if at is None:
            continue
        if task in pending:
            continue  # nothing that could be a fault since the last boundary: the same one
        marks.setdefault(task, []).append(at)
        pending.add(task)
    total = max((len(m) for m in marks.values()), default=0)
    # a line of a task with no boundary of its own: as many runs as any task started above it
    # by line; a task-less boundary and a task's at one line are two boundaries, in any order
    merged = sorted(((line, task) for task, lines in marks.items() for line in lines), key=lambda lt: lt[0])
    passed: dict[int | None, int] = {}
    lines_at: list[int] = []
    most: list[int] = []
    for line, task in merged:
        passed[task] = passed.get(task, 0) + 1
        lines_at.append(line)
        most.append(max(passed[task], most[-1] if most else 0))
    out: dict[int, tuple[int, bool]] = {}
    for ev in evs:
        if own := marks.get(ev.task):
            run = bisect_right(own, ev.line_no)
        else:
            i = bisect_right(lines_at, ev.line_no)
            run = most[i - 1] if i else 0
        out[id(ev)] = (run, run >= total)
    return out
