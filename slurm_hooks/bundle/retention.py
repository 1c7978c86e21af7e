"""Retention of per-job directories (the spool's `jobs/<id>`, the flight recorder's `<dir>/<id>`):
bounded per run, incremental, and never a job that is still running.

Each run has a deadline (time.monotonic()) and stops there; whatever it left is said, and the next
run goes on: a directory whose removal was cut short is renamed with core/prune_tree.py's PRUNING
mark first (its mtime changes as it is emptied, so its age could no longer say it must go), and
marked ones go on in every run. Removal itself is core/prune_tree.py's: no recursion, no link
followed, a user's tree deleted as that user.

Nothing the user controls steers a run. A directory's age is `stamp`: min(mtime, ctime), since its
owner may set the mtime anywhere (utime to 2099) but not the ctime, which any change sets to now.
Each removal gets a fair share of what is left of the deadline (`remove_doomed`), never all of it:
a child its owner stops (SIGSTOP: it runs as their uid) costs that share, and the rest go on.
Marked directories come after the unmarked expired ones, the longest-marked first: a removal that
failed last time cannot go first in every run.

A job that has not ended is never touched, wherever it runs (`Running`): this node's own state
says which jobs run here, and Slurm (squeue, asked once per hook and only when a directory is old
enough to go) says which have not ended anywhere, since a dump directory on shared storage, or a
spool shared by nodes, belongs to a job on another node. When Slurm cannot say, no directory of a
job it could not rule out goes before UNSURE_KEEP_DAYS.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import stat
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from slurm_hooks.core.nofollow import opened_dir
from slurm_hooks.core.prune_tree import PRUNING, prune_entry
from slurm_hooks.core.treewalk import tree_size

PRUNE_S = 5.0  # what one spool prune may take when its caller gives no deadline (the Epilog's budget is 30 s)
MIN_SLICE_S = 0.25  # one removal's least share of a run: many small dirs are not each cut short at once
# When Slurm cannot say which jobs have ended, a job's directory is kept this long whatever the
# retention: longer than any job is expected to run, short enough that an outage cannot fill a disk.
UNSURE_KEEP_DAYS = 60


@dataclass
class PruneReport:
    removed: list[str] = field(default_factory=list)  # job dirs that are gone
    links_removed: list[str] = field(default_factory=list)  # planted links at jobs/<id>: the link only
    failed: dict[str, str] = field(default_factory=dict)  # job dirs still there, and why
    left: list[str] = field(default_factory=list)  # what this run stopped short of (the next run goes on)


class Running(frozenset[str]):
    """The jobs whose directories retention keeps. The set itself: the jobs known to run on this
    node (`<state_dir>/jobs/<id>`, the hook's own job), kept whatever their age. `keeps` adds
    Slurm's word on the rest: `ask` (the hook's Slurm.unfinished_jobs; None when Slurm cannot
    say) is called at most once, and only for a directory old enough to go. A plain set given to
    a retention pass is a Running that asks no one (tests, callers without Slurm)."""

    ask: Callable[[], frozenset[str] | None] | None
    _said: frozenset[str] | None  # Slurm's answer, once asked
    _asked: bool

    def __new__(cls, here: Iterable[str] = (), ask: Callable[[], frozenset[str] | None] | None = None) -> Running:
        running = super().__new__(cls, here)
        running.ask, running._said, running._asked = ask, None, False
        return running

    def keeps(self, name: str, when: float, now: float) -> bool:
        """Whether the directory of job `name` (stamped `when`) must stay although its age says go."""
        if name in self:
            return True
        if self.ask is None:
            return False
        if not self._asked:
            self._asked, self._said = True, self.ask()
        if self._said is not None:
            return name in self._said
        return now - when < UNSURE_KEEP_DAYS * 86400  # Slurm could not rule the job out


def running_of(live: Collection[str]) -> Running:
    return live if isinstance(live, Running) else Running(live)


def stamp(st: os.stat_result) -> float:
    """The age retention acts on: the owner can set a mtime forward, not a ctime (see above)."""
    return min(st.st_mtime, st.st_ctime)


def doomed_order(doomed: Sequence[tuple[float, str]]) -> list[str]:
    """(stamp, name) pairs as remove_doomed takes them: the unmarked oldest first, then the marked,
    the longest-marked (oldest stamp: working on one makes it new) first."""
    return [name for _, _, name in sorted((name.startswith(PRUNING), when, name) for when, name in doomed)]


def remove_doomed(parent: int, names: Sequence[str], deadline: float, report: PruneReport) -> None:
    """Remove each of `names` in `parent`, in order, until `deadline`; each gets an equal share of
    what is left, MIN_SLICE_S at least (one its owner stalls cannot take the others' time); what
    is left is said."""
    for i, name in enumerate(names):
        start = time.monotonic()
        if start > deadline:
            report.left.append(f"{len(names) - i} dir(s) left for the next run (deadline)")
            return
        share = max((deadline - start) / (len(names) - i), MIN_SLICE_S)
        removal = prune_entry(parent, name, min(deadline, start + share))
        if removal.gone:
            report.removed.append(name.removeprefix(PRUNING))
        else:
            report.failed[name.removeprefix(PRUNING)] = removal.left


def prune_jobs(
    root: Path, retention_days: int, max_mb: int, now: float, live: Collection[str], deadline: float | None
) -> PruneReport:
    """The spool's `jobs/`: dirs past retention, then the oldest until the rest fits in `max_mb`.

    Listing, sizing and removing each get a third of the time to `deadline` (a listing cut short
    still lets the age rule act on what it listed). Sizes are summed from the newest back, only
    until `max_mb` is reached: everything older goes, unmeasured. Jobs `live` keeps stay (Running)."""
    report, running = PruneReport(), running_of(live)
    start = time.monotonic()
    deadline = start + PRUNE_S if deadline is None else deadline
    third = max(0.0, deadline - start) / 3  # none of the three can starve the next
    with contextlib.ExitStack() as stack:
        try:
            fd = stack.enter_context(opened_dir(root, ["jobs"]))
        except FileNotFoundError:  # no job yet
            return report
        entries, listed = _job_dirs(fd, start + third, report)
        marked = [e for e in entries if e[1].startswith(PRUNING)]  # a run cut short: going on
        entries = [e for e in entries if not e[1].startswith(PRUNING)]
        expired = bisect.bisect_left(entries, now - retention_days * 86400, key=lambda e: e[0])
        over = _oldest_over(fd, entries, max_mb << 20, start + 2 * third) if listed else None
        if over is None and listed:
            report.left.append("spool size not measured within the deadline: spool_max_mb waits for the next run")
        doomed = [e for e in entries[: max(expired, over or 0)] if not running.keeps(e[1], e[0], now)]
        remove_doomed(fd, doomed_order(doomed + marked), deadline, report)
    return report


def _job_dirs(fd: int, deadline: float, report: PruneReport) -> tuple[list[tuple[float, str]], bool]:
    """(stamp, name) of each job dir, oldest first, and whether the listing finished in time; a
    link at `jobs/<id>` is removed on the way (nothing of ours is a link: the link, never its target)."""
    entries: list[tuple[float, str]] = []
    with os.scandir(fd) as listing:
        for entry in listing:
            if time.monotonic() > deadline:
                report.left.append("jobs/ not listed to its end within its share of the deadline")
                return sorted(entries), False
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISLNK(st.st_mode):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.name, dir_fd=fd)
                report.links_removed.append(entry.name)
            elif stat.S_ISDIR(st.st_mode):
                entries.append((stamp(st), entry.name))
    return sorted(entries), True


def _oldest_over(fd: int, entries: list[tuple[float, str]], max_bytes: int, deadline: float) -> int | None:
    """How many of the oldest job dirs must go for the rest to fit in `max_bytes` (the newest
    kept first); None when the deadline comes before that is known."""
    total = 0
    for i in range(len(entries) - 1, -1, -1):
        size = tree_size(fd, entries[i][1], deadline)
        if size is None:
            return None
        total += size
        if total > max_bytes:
            return i + 1
    return 0
