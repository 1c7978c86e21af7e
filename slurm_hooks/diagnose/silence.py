"""The ranks that never reported a timeout, and the node they sit on (log-signatures §8.8, §8.28).

Counted, never listed: a world is as large as Slurm lets the job be (diagnose/bounds.py), a
number no log can raise, yet even that bound is 512 ranks a node on every node of the job; so
the silent ranks are found from the reporters, the ranks the logs placed on a node and srun's
block distribution, in work that follows what the bundle holds, not the world's size.

Silence is the job's own choice (its ranks print or do not): a root found by it is a guess, and
the diagnosis says so (diagnose/confidence.py).
"""

from __future__ import annotations

from typing import Any

from slurm_hooks.diagnose.ranks import RankMap

MAX_LISTED = 64  # silent ranks named in `details`; `silent_rank_count` has them all


def silent_nodes(ranks: RankMap, reporters: set[int]) -> tuple[list[int], int, set[str | None]]:
    """(the first MAX_LISTED silent ranks, how many there are, the nodes they sit on: None for unknown)."""
    world = ranks.world
    reporting = {r for r in reporters if 0 <= r < world}
    count = world - len(reporting)
    listed: list[int] = []
    rank = 0
    while len(listed) < min(MAX_LISTED, count):  # at most MAX_LISTED + len(reporters) steps
        if rank not in reporting:
            listed.append(rank)
        rank += 1
    nodes: set[str | None] = set()
    placed = {r: n for r, n in ranks.rank_nodes.items() if 0 <= r < world}
    nodes.update(n for r, n in placed.items() if r not in reporting)
    # The ranks no line placed: srun's block distribution places them (RankMap.node_of), else nothing does.
    unplaced = count - sum(1 for r in placed if r not in reporting)
    if unplaced <= 0:
        return listed, count, nodes
    known = reporting | set(placed)
    if len(ranks.nodes) == 1:
        nodes.add(ranks.nodes[0])
    elif ranks.nodes and world % len(ranks.nodes) == 0:
        per = world // len(ranks.nodes)
        taken = [0] * len(ranks.nodes)
        for r in known:
            taken[r // per] += 1
        nodes.update(n for i, n in enumerate(ranks.nodes) if taken[i] < per)
    else:
        nodes.add(None)
    return listed, count, nodes


def silent_ranks_details(ranks: RankMap, reporters: set[int]) -> tuple[str | None, int | None, dict[str, Any]]:
    """The node of the silent ranks when they sit on one, the rank when it is one, and `details`."""
    world = ranks.world
    listed, count, nodes = silent_nodes(ranks, reporters) if reporters else ([], 0, set())
    details: dict[str, Any] = {
        "world_size": world,
        "reporting_ranks": len(reporters),
        "silent_ranks": listed,
        "silent_rank_count": count,
    }
    if not count or count == world or len(nodes) != 1 or None in nodes:
        return None, None, details
    return nodes.pop(), listed[0] if count == 1 else None, details
