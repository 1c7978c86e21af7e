"""One pid -> global rank map per job, from every line that states it (log-signatures §8.18).

A kernel line (`comm[pid]: segfault`, `Killed process PID`, an Xid's `pid=`) names a process,
not a rank. The job's own logs say which process was which rank, each in its way:

- torchrun's failure summary: `rank : R (local_rank: L)` with `exitcode : C (pid: P)`;
- NCCL's `host:pid:tid` prefix on `Init COMPLETE` lines, `rank R nranks N` of the world
  communicator (a sub-communicator's rank is not global: only the largest `nranks` counts);
- any line that carries both a pid and a rank: a shell's `PID Segmentation fault` under an srun
  task prefix, UCX's `[host:pid:...]` under `[rankN]:`, `DataLoader worker (pid P)` under its
  rank's prefix (the worker's crash is its rank's, §8.11);
- DeepSpeed's `process P spawned with command: ... --local_rank=L`, with that node's
  `node_rank=K` and `num_local_procs=M` from the same launcher: global rank K*M + L.

The first source that names a pid on a node wins, in that order; a pid nothing names stays a
node-only fact.
"""

from __future__ import annotations

from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event

PidKey = tuple[str | None, int]


def _pid(ev: Event, key: str = "pid") -> int | None:
    value = ev.fields.get(key, "")
    return int(value) if value.isdigit() else None


def build_pid_map(
    events: list[Event], pack: RulePack, summary: list[tuple[str | None, int | None, int | None]]
) -> dict[PidKey, int]:
    """(node, pid) -> global rank. `summary`: torchrun's entries as (host, pid, rank)."""
    pids: dict[PidKey, int] = {}
    for host, pid, rank in summary:
        if pid is not None and rank is not None:
            pids.setdefault((host, pid), rank)
    stated = [e for e in events if pack.has(e.family, "pid_rank")]
    inits = [e for e in stated if "comm_rank" in e.fields]
    world = max((e.field_int("nranks") or 0 for e in inits), default=0)
    for ev in inits:
        pid, rank = _pid(ev), ev.field_int("comm_rank")
        if pid is not None and rank is not None and ev.field_int("nranks") == world:
            pids.setdefault((ev.node, pid), rank)
    for ev in events:
        if ev.rank is None or not ev.source.startswith("logs/"):
            continue
        for key in ("pid", "child_pid"):
            if (pid := _pid(ev, key)) is not None:
                pids.setdefault((ev.node, pid), ev.rank)
    layout = {
        e.node: (k, m)
        for e in stated
        if (k := e.field_int("node_rank")) is not None and (m := e.field_int("num_local")) is not None
    }
    for ev in stated:
        local, pid = ev.field_int("spawn_local"), _pid(ev)
        if local is None or pid is None or ev.node not in layout:
            continue
        node_rank, per_node = layout[ev.node]
        if local < per_node:
            pids.setdefault((ev.node, pid), node_rank * per_node + local)
    return pids


def rank_of(pids: dict[PidKey, int], node: str | None, pid: int | None) -> int | None:
    """The rank of `pid` on `node`. Pids repeat across nodes: a line that placed its pid on no node
    speaks only for a kernel line that is on no node either."""
    return None if pid is None else pids.get((node, pid))
