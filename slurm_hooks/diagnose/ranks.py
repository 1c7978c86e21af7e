"""Which rank ran on which node, and which ranks stayed silent when the others timed out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.timeline.events import Event, Timeline


@dataclass
class RankMap:
    world: int
    task_nodes: dict[int, str]
    tasks_are_ranks: bool
    nodes: tuple[str, ...]

    def node_of(self, rank: int | None) -> str | None:
        if rank is None:
            return None
        if self.tasks_are_ranks and (node := self.task_nodes.get(rank)):
            return node
        nodes, world = self.nodes, self.world
        if nodes and world and world % len(nodes) == 0 and rank < world:
            return nodes[rank // (world // len(nodes))]  # srun's default block distribution
        return None

    def silent(self, symptoms: list[Event]) -> tuple[str | None, int | None, dict[str, Any]]:
        """The node of the ranks that never reported the timeout, if they sit on one (§8.8)."""
        reporters = {e.rank for e in symptoms if e.family == "nccl_timeout" and e.rank is not None}
        silent = sorted(set(range(self.world)) - reporters) if reporters else []
        details: dict[str, Any] = {"world_size": self.world, "reporting_ranks": len(reporters),
                                   "silent_ranks": silent}
        if not silent or len(silent) == self.world:
            return None, None, details
        nodes = {self.node_of(r) for r in silent}
        if len(nodes) != 1 or None in nodes:
            return None, None, details
        return nodes.pop(), silent[0] if len(silent) == 1 else None, details


def rank_map(timeline: Timeline, job: JobInfo) -> RankMap:
    seen = {e.rank for e in timeline.events if e.rank is not None}
    world = timeline.world_size or (max(seen) + 1 if seen else 0)
    return RankMap(world=world, task_nodes=timeline.task_nodes, tasks_are_ranks=timeline.tasks_are_ranks,
                   nodes=job.nodes)
