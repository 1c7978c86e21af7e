"""What the size of the job bounds (log-signatures §8.25, §8.20): Slurm's counts, never a log's numbers.

A job has at most `ntasks` ranks when job.json says so, else at most Slurm's MaxTasksPerNode
default per node of its node list. A `[rankN]:` prefix or srun task id at or past that bound is
not a rank of this job (a user's print, a forged line): it is dropped before any map is built,
so no number printed in a log makes the work grow. A host name a log prints is one of the job's
nodes or none: a name outside the node list is never a root node.
"""

from __future__ import annotations

from slurm_hooks.bundle import JobInfo
from slurm_hooks.timeline.events import Event

MAX_TASKS_PER_NODE = 512  # Slurm's MaxTasksPerNode default (slurm.conf): one node runs no more tasks


def job_ranks(job: JobInfo, nodes: tuple[str, ...], events: list[Event]) -> int:
    """The most ranks this job can have: its task count, else MaxTasksPerNode on each of its nodes.

    A bundle without Slurm's node list (an offline one) counts the hosts its lines name instead:
    as many as the lines that name them, never a number a line prints.
    """
    if job.ntasks:
        return job.ntasks
    if not job.nodes:
        nodes = tuple({*nodes, *(e.node for e in events if e.node)})
    return MAX_TASKS_PER_NODE * max(len(nodes), 1)


def drop_out_of_job(events: list[Event], bound: int, notes: list[str]) -> None:
    """Ranks and task ids a line names at or past `bound` are cleared (and counted in `notes`)."""
    cleared = 0
    for ev in events:
        if ev.rank is not None and not 0 <= ev.rank < bound:
            ev.rank, cleared = None, cleared + 1
        if ev.task is not None and not 0 <= ev.task < bound:
            ev.task, cleared = None, cleared + 1
    if cleared:
        notes.append(f"{cleared} rank or task ids past the job's {bound} possible ranks ignored (§8.25)")


def job_node(nodes: tuple[str, ...], name: str | None) -> str | None:
    """`name` as one of the job's nodes (exact, else its first DNS label), or None when it names none.

    Without Slurm's node list there is nothing to check against, and the name stands.
    """
    if name is None or not nodes:
        return name
    if name in nodes:
        return name
    short = name.split(".", 1)[0]
    return short if short in nodes else None
