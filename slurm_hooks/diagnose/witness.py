"""Kernel lines on a shared node: another job's process may have printed them (issue 17).

When Slurm let other jobs share the job's nodes (job.json `shared`), a kernel line that names
a pid (`python[48213]: segfault`, `Killed process 48213`) is this job's only if the job's own
logs name that pid (torchrun's summary, NCCL's host:pid, a shell's crash line). One they never
name is a weaker witness: it may join a crash the job's logs show as a sighting, but it is
never a fault on its own. On an exclusive node every process is the job's, and every line counts.
"""

from __future__ import annotations

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.ranks import RankMap
from slurm_hooks.timeline.events import Event

_PID_FIELDS = ("pid", "spid")


def weak_witnesses(job: JobInfo, events: list[Event], ranks: RankMap) -> frozenset[int]:
    """ids of the kernel events on a shared node whose pid the job's logs never name."""
    if not job.shared:
        return frozenset()
    named = {pid for _, pid in ranks.pid_ranks}
    named.update(p for e in events if e.source.startswith("logs/") for k in _PID_FIELDS if (p := _pid(e, k)))
    return frozenset(
        id(e)
        for e in events
        if e.source.startswith("kernel/") and (pid := _pid(e, "pid")) is not None and pid not in named
    )


def _pid(ev: Event, key: str) -> int | None:
    value = ev.fields.get(key, "")
    return int(value) if value.isdigit() and len(value) <= 10 else None
