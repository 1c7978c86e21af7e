"""One rank<->node map per job, from every source that names both (log-signatures §8.13).

Sources: srun task ids (a task is a rank unless torchrun runs under srun, one agent task per
node) and `srun: error: NODE: task(s) N` lines; `[rankN]:` prefixes (global ranks); torchrun
failure summaries (rank, local_rank, host, exit code, pid); NCCL `host:pid` lines; the world
size. `[Rank N]` inside watchdog messages is a process-group rank and is never read as global.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from slurm_hooks.diagnose.pidmap import PidKey, build_pid_map, rank_of
from slurm_hooks.diagnose.steps import StepKey, Steps, expand_lists, expand_tasks
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.hosts import NodeNames

CRASH_CODES = {-11: "SIGSEGV", -7: "SIGBUS", -4: "SIGILL", -8: "SIGFPE"}  # -6/-9/-15 are teardown
_ENTRY_SPAN = 8  # lines of one torchrun summary entry


@dataclass
class TorchrunEntry:
    """One worker in torchrun's failure summary."""

    source: str
    task: int | None
    first_line: int
    host: str | None = None
    rank: int | None = None
    local_rank: int | None = None
    code: int | None = None
    pid: int | None = None

    @property
    def crashed(self) -> bool:
        return self.code in CRASH_CODES


@dataclass
class RankMap:
    nodes: tuple[str, ...]  # the job's nodes, in Slurm's order
    torchrun: bool  # srun tasks are torchrun agents (one per node), not ranks
    task_nodes: dict[tuple[StepKey, int], str] = field(default_factory=dict)  # a task is its step's (§8.33)
    rank_nodes: dict[int, str] = field(default_factory=dict)
    pid_ranks: dict[PidKey, int] = field(default_factory=dict)
    entries: list[TorchrunEntry] = field(default_factory=list)
    world: int = 0
    claimed_world: int = 0  # the largest world size a log printed; past the job's bound it is clamped (and noted)
    names: NodeNames = field(default_factory=lambda: NodeNames(()))
    outside: list[Event] = field(default_factory=list)  # srun lines naming a node outside the job: no evidence
    steps: Steps = field(default_factory=Steps)

    def node_of(self, rank: int | None) -> str | None:
        if rank is None:
            return None
        if node := self.rank_nodes.get(rank):
            return node
        if len(self.nodes) == 1:
            return self.nodes[0]
        nodes, world = self.nodes, self.world
        if nodes and world and world % len(nodes) == 0 and rank < world:
            return nodes[rank // (world // len(nodes))]  # srun's default block distribution
        return None

    def task_node(self, step: StepKey, task: int | None) -> str | None:
        """The node of srun task `task` of `step`: its step's map, else where Slurm's record of the
        step puts it (one node; torchrun's one agent a node); never another step's map."""
        if task is None:
            return None
        if node := self.task_nodes.get((step, task)):
            return node
        nodes = _step_nodes(self.steps, step)
        if len(nodes) == 1:
            return nodes[0]
        if self.torchrun and task < len(nodes):
            return nodes[task]
        return None

    def rank_of_pid(self, node: str | None, pid: str | None) -> int | None:
        if not pid or not pid.isdigit():
            return None
        return rank_of(self.pid_ranks, node, int(pid))


def build_rank_map(
    events: list[Event],
    nodes: tuple[str, ...],
    pack: RulePack,
    bound: int = 1 << 31,
    steps: Steps | None = None,
    slurm_tasks: int = 0,
) -> RankMap:
    """The map, and every event's `node` and global `rank` filled in from it where the line left them open.

    `bound`: the most ranks the job can have (diagnose/bounds.py); no number in a log goes past it.
    `steps`: which step each line is (diagnose/steps.py); a task's node comes from its own step only.
    `slurm_tasks`: the deciding step's task count as Slurm has it (0: not known); with the node list
    it completes the world: a rank that printed nothing still exists (§8.34).
    Host names in log lines become the job's Slurm node names first (§8.20); a name outside the
    job is no node.
    """
    torchrun = any(e.local_rank is not None or "local_rank" in e.fields for e in events)
    ranks = RankMap(nodes=nodes, torchrun=torchrun, steps=steps or Steps())
    steps = ranks.steps
    logs = [e for e in events if e.source.startswith("logs/")]
    names = ranks.names = NodeNames(nodes)
    for ev in logs:
        if pack.has(ev.family, "host_address"):
            names.learn_address(ev.fields.get("ip", ""), ev.node)
    for ev in logs:
        named, ev.node = ev.node, names.canonical(ev.node)
        if named and ev.node is None and "tasks" in ev.fields:
            ev.fields["named_node"] = named[:64]
            ranks.outside.append(ev)  # srun's word on a node that is not the job's: printed by the job
        elif ev.node is None and len(nodes) == 1:
            ev.node = nodes[0]
    gone = {id(e) for e in ranks.outside}
    events, logs = [e for e in events if id(e) not in gone], [e for e in logs if id(e) not in gone]
    srun = [e for e in logs if e.node and "tasks" in e.fields]
    ranks.task_nodes.update((k, n) for k, n in expand_lists(srun, steps, bound).items() if n)  # srun: task -> node
    for ev in logs:
        if ev.node and ev.task is not None and "tasks" not in ev.fields:
            ranks.task_nodes.setdefault((steps.of(ev), ev.task), ev.node)
    agents = {(steps.of(e), e.task) for e in logs if e.task is not None}
    if torchrun and agents:
        for step, task in agents:  # one torchrun agent per node: srun's block distribution puts task i on node i
            on = _step_nodes(steps, step) or nodes
            if len(on) > 1 and max(t for s, t in agents if s == step) < len(on):
                ranks.task_nodes.setdefault((step, task), on[task])
    for ev in logs:
        if ev.node is None and ev.task is not None:
            ev.node = ranks.task_node(steps.of(ev), ev.task)
        if ev.rank is None and not torchrun and ev.fields.get("speaker") != "slurmstepd":
            tasks = expand_tasks(ev.fields["tasks"], limit=2) if "tasks" in ev.fields else []
            ev.rank = tasks[0] if len(tasks) == 1 else ev.task
        elif ev.rank is None and len(_step_nodes(steps, steps.of(ev)) or nodes) == 1:
            # a step (or a job) Slurm ran on one node: its local ranks are its ranks (§8.34)
            ev.rank = ev.local_rank if ev.local_rank is not None else ev.field_int("local_rank")
    ranks.entries = _torchrun_entries([e for e in logs if pack.has(e.family, "torchrun_entry")])
    for entry in ranks.entries:  # the summary is the authority on where a rank ran
        entry.host = names.canonical(entry.host)
        if entry.rank is not None and entry.host:
            ranks.rank_nodes[entry.rank] = entry.host
    last = steps.of(logs[-1]) if logs else None  # the deciding step: where a rank runs is its place (§8.33)
    if not torchrun:  # a task is a rank: the deciding step's place for it, never another step's
        for (step, task), node in ranks.task_nodes.items():
            if step == last:
                ranks.rank_nodes.setdefault(task, node)
    pid_ranks = build_pid_map(events, pack, [(e.host, e.pid, e.rank) for e in ranks.entries])
    # a line that puts a rank's pid on a node where Slurm's placement (srun's, the summary's) puts
    # that rank elsewhere is the job's word against Slurm's: no tie (§8.28)
    ranks.pid_ranks = {
        (node, pid): rank
        for (node, pid), rank in pid_ranks.items()
        if node is None or ranks.rank_nodes.get(rank) in (None, node)
    }
    for ev in events:  # a line that names a process names its rank (§8.18)
        if ev.rank is None and (rank := ranks.rank_of_pid(ev.node, ev.fields.get("pid"))) is not None:
            ev.rank = rank
    for ev in logs:
        if ev.rank is not None and ev.node and steps.of(ev) == last:
            ranks.rank_nodes.setdefault(ev.rank, ev.node)
    worlds = [w for e in logs if pack.has(e.family, "world_size") and (w := e.field_int("world"))]
    seen = [e.rank for e in events if e.rank is not None] + list(ranks.rank_nodes)
    ranks.claimed_world = max(worlds, default=0)
    counted = max(max(seen) + 1 if seen else 0, _slurm_world(ranks, logs, slurm_tasks))
    ranks.world = min(ranks.claimed_world or counted, bound)
    for ev in logs:
        if ev.node is None and ev.rank is not None:
            ev.node = ranks.node_of(ev.rank)
    return ranks


def _step_nodes(steps: Steps, step: StepKey) -> tuple[str, ...]:
    info = steps.info(step)
    return info.nodes if info else ()


def _slurm_world(ranks: RankMap, logs: list[Event], tasks: int) -> int:
    """The ranks Slurm's counts say the step has (§8.34): its task count where each task is a rank;
    under torchrun (one agent task a node) its nodes times the local ranks one node runs, since
    torchrun's --nproc-per-node is every node's."""
    if not ranks.torchrun:
        return tasks
    local = [
        r for e in logs if (r := e.local_rank if e.local_rank is not None else e.field_int("local_rank")) is not None
    ]
    per_node = max(local, default=-1) + 1
    return per_node * len(ranks.nodes) if len(ranks.nodes) > 1 else 0


def _torchrun_entries(lines: list[Event]) -> list[TorchrunEntry]:
    """Group the `host`/`rank`/`exitcode` lines of each summary entry (one task's stream, a few lines apart)."""
    entries: list[TorchrunEntry] = []
    current: dict[tuple[str, int | None], TorchrunEntry] = {}
    for ev in sorted(lines, key=lambda e: (e.source, e.line_no)):
        key = (ev.source, ev.task)
        entry = current.get(key)
        host, code = ev.fields.get("host"), ev.field_int("code")
        if entry is None or _starts_new(entry, ev, host, code):
            entry = current[key] = TorchrunEntry(ev.source, ev.task, ev.line_no)
            entries.append(entry)
        entry.host = host or entry.host
        entry.rank = ev.field_int("rank") if "rank" in ev.fields else entry.rank
        entry.local_rank = ev.field_int("local_rank") if "local_rank" in ev.fields else entry.local_rank
        if code is not None:
            entry.code, entry.pid = code, ev.field_int("pid")
    return entries


def _starts_new(entry: TorchrunEntry, ev: Event, host: str | None, code: int | None) -> bool:
    """A line too far from the entry, or one that would overwrite a value it already has."""
    return (
        ev.line_no - entry.first_line > _ENTRY_SPAN
        or bool(host and entry.host)
        or ("rank" in ev.fields and entry.rank is not None)
        or (code is not None and entry.code is not None)
    )
