"""What the size of the job bounds (log-signatures §8.25, §8.20): Slurm's counts, never a log's numbers.

A job has at most Slurm's MaxTasksPerNode default of ranks on each node of its node list, or its
task count (job.json `ntasks`) when that is more (a site that raised MaxTasksPerNode). The task
count alone is no bound: torchrun starts several ranks inside one Slurm task (4 ranks a node with
`--ntasks-per-node=1`), and a step run with --overcommit may start more tasks than the job asked
for; so it only ever raises the per-node bound. A `[rankN]:` prefix or srun task id at or past that bound is
not a rank of this job (a user's print, a forged line): it is dropped before any map is built,
so no number printed in a log makes the work grow. A host name a log prints is one of the job's
nodes or none: a name outside the node list is never a root node.
"""

from __future__ import annotations

from slurm_hooks.bundle import JobInfo
from slurm_hooks.timeline.events import Event

MAX_TASKS_PER_NODE = 512  # Slurm's MaxTasksPerNode default (slurm.conf): one node runs no more tasks
TASKS_PER_NODE_CEILING = 65533  # the most MaxTasksPerNode may be set to (slurm.conf): no job.json says more


def job_ranks(job: JobInfo, nodes: tuple[str, ...], events: list[Event]) -> int:
    """The most ranks this job can have: MaxTasksPerNode on each of its nodes, or its task count when more.

    A bundle without Slurm's node list (an offline one) counts the hosts its lines name instead:
    as many as the lines that name them, never a number a line prints.
    """
    if not job.nodes:
        nodes = tuple({*nodes, *(e.node for e in events if e.node)})
    n_nodes = max(len(nodes), 1)
    return max(MAX_TASKS_PER_NODE * n_nodes, min(job.ntasks, TASKS_PER_NODE_CEILING * n_nodes))


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
