"""A job's world, built once before any verdict (issue 28's shape): its runs, then its steps, then
the tasks and ranks of each step (diagnose/ranks.py, completed from Slurm's counts), then events
placed in them. Every stage asks this model which run and step a line belongs to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, BinaryIO

from slurm_hooks.bundle import Bundle, BundleFile
from slurm_hooks.diagnose.result import fault_record
from slurm_hooks.diagnose.runs import Runs, split_runs
from slurm_hooks.diagnose.steps import Steps, find_steps
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.clocks import ClockContext
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.scan import line_terminator
from slurm_hooks.timeline.untimed import Neighbours

MAX_PREVIOUS = 8  # earlier runs listed in `details.previous_runs`; the count says how many there were


@dataclass
class World:
    runs: Runs
    steps: Steps = field(default_factory=Steps)
    job_tasks: int = 0  # Slurm's task count of the whole job (job.json `ntasks`)

    @classmethod
    def of(cls, bundle: Bundle, events: list[Event], pack: RulePack) -> World:
        margin = timedelta(seconds=pack.ordering.window_margin_s)
        stamp_above = _StampAbove(bundle)
        try:
            runs = split_runs(bundle.job, events, margin, lambda e: _may_be_fault(pack, e), stamp_above)
            return cls(runs, find_steps(bundle.job, runs.last, stamp_above), bundle.job.ntasks)
        finally:
            stamp_above.close()

    def slurm_tasks(self, events: list[Event]) -> int:
        """The deciding step's task count as Slurm has it (§8.34): the step of the run's last job-log
        line when Slurm recorded steps, else the job's own count (0: not known)."""
        if not self.steps.slurm:
            return self.job_tasks
        last = next((e for e in reversed(events) if e.source.startswith("logs/")), None)
        info = self.steps.info(self.steps.of(last)) if last is not None else None
        return info.ntasks if info else 0

    def notes(self) -> list[str]:
        if not self.runs.earlier:
            return []
        how = "Slurm's restart count and start time" if self.runs.by_slurm else "the logs' restart and start lines"
        return [
            f"{len(self.runs.earlier) + 1} runs in this job's logs ({how}); the last decides, "
            "the earlier ones are in details.previous_runs (§8.29)"
        ]

    def previous_runs(self, pack: RulePack) -> list[dict[str, Any]]:
        """Each earlier run: how it ended (the label of its first fault) and that fault's record."""
        out = []
        for n, events in enumerate(self.runs.earlier[:MAX_PREVIOUS], start=1):
            first = next((e for e in events if e.role == "primary"), None)
            first = first or next((e for e in events if _may_be_fault(pack, e)), None)
            label = _label(pack, first) if first is not None else "unknown"
            out.append({"run": n, "ended": label, "first_fault": fault_record(first) if first else None})
        return out


class _StampAbove:
    """The stamp of the nearest stamped line above a place in a job log, or above its end
    (timeline/untimed.py reads it). One reader a file, kept open while the asks go down the file
    (Neighbours reads each line once however the windows overlap); an ask above the last starts
    a new one, and every answer is kept: a 1,152-node job's runs and steps ask hundreds of times."""

    def __init__(self, bundle: Bundle) -> None:
        job = bundle.job
        self.files = {f.rel: f for f in bundle.logs}
        self.clock = ClockContext(reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone)
        self.readers: dict[str, tuple[BinaryIO, Neighbours, int]] = {}  # source -> (file, reader, last place)
        self.known: dict[tuple[str, int], datetime | None] = {}

    def __call__(self, source: str, offset: int | None) -> datetime | None:
        file = self.files.get(source)
        if file is None:
            return None
        at = file.size if offset is None else offset
        if (source, at) in self.known:
            return self.known[source, at]
        try:
            stamp = self._reader(file, at).around(at, None)[0]
        except OSError:  # gone, or a link planted since the scan: no stamp, and the logs' boundaries decide
            stamp = None
        self.known[source, at] = stamp
        return stamp

    def _reader(self, file: BundleFile, at: int) -> Neighbours:
        held = self.readers.get(file.rel)
        if held is not None and held[2] <= at:
            self.readers[file.rel] = (held[0], held[1], at)
            return held[1]
        if held is not None:
            held[0].close()
        fh = file.open()
        reader = Neighbours(fh, line_terminator(fh), self.clock)
        self.readers[file.rel] = (fh, reader, at)
        return reader

    def close(self) -> None:
        for fh, _, _ in self.readers.values():
            fh.close()
        self.readers.clear()


def _may_be_fault(pack: RulePack, ev: Event) -> bool:
    """A fault or a symptom, or a Python traceback: what makes two run boundaries two runs."""
    return ev.role in ("primary", "symptom") or pack.has(ev.family, "traceback") or pack.has(ev.family, "exception")


def _label(pack: RulePack, ev: Event) -> str:
    if pack.has(ev.family, "traceback"):
        return "app_exception"
    family = pack.families.get(ev.family)
    return family.label if family and family.label else "unknown"
