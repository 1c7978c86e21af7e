"""Where a rank's traceback happened and whether its end is witnessed (log-signatures §8.13, §8.26).

The rank: c10's `[rankN]:` (global), torchrun's summary entry that printed it (its error_file),
torchrun's `[defaultN]:` on one node or as the summary maps it, an srun task that is a rank, or,
for unlabelled output, the one task srun says failed. The node: the srun task's, a rank's known
node, or a summary's host only when it is one of the job's nodes. The end: srun's line for the
task, or torchrun's summary naming the rank.
"""

from __future__ import annotations

from bisect import bisect_left

from slurm_hooks.diagnose.ranks import RankMap, TorchrunEntry
from slurm_hooks.diagnose.steps import StepKey, expand_lists, expand_tasks
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.tracebacks import Block

SUMMARY_SPAN = 12  # lines from a torchrun summary entry's first line to its traceback
STOPPED = (-15, -9)  # exit codes of workers torchrun itself stopped
MAX_TASKS = 1 << 16  # the ranks srun's lines are read for when the world is not known


class Placer:
    """Places each of a log's blocks in constant time: a job whose 4,608 ranks all raise the same
    error has every one placed, and a search of the summary per block would make that quadratic."""

    def __init__(self, ranks: RankMap, task_ends: list[Event]) -> None:
        self.ranks = ranks
        self.task_ends = task_ends
        self.nodes = frozenset(ranks.nodes)
        # torchrun's summary entries by the log and srun task that printed them, by first line, each with
        # its place in the summary (of two entries a block's span holds, the summary's first is taken)
        self.summaries: dict[tuple[str, int | None], list[tuple[int, int]]] = {}
        for i, entry in enumerate(ranks.entries):
            self.summaries.setdefault((entry.source, entry.task), []).append((entry.first_line, i))
        for lines in self.summaries.values():
            lines.sort()
        self.summary_ranks = {entry.rank for entry in ranks.entries if entry.rank is not None}
        self.local_ranks: dict[tuple[int | None, str], TorchrunEntry] = {}  # (local rank, host): its first entry
        for entry in ranks.entries:
            if entry.host:
                self.local_ranks.setdefault((entry.local_rank, entry.host), entry)
        # srun's own lines name Slurm's node of a task of a step (the rank map may hold a log's host name
        # for it), and which tasks ended; both bounded, whatever task ranges the lines print (§8.25, §8.33)
        ended = expand_lists(task_ends, ranks.steps, ranks.world or MAX_TASKS)
        self.task_nodes = {key: node if node in self.nodes else None for key, node in ended.items()}
        # torchrun's summary witnesses who failed first: a rank it stopped (SIGTERM, SIGKILL) failed after another
        self.stopped = {e.rank for e in ranks.entries if e.code in STOPPED and e.rank is not None}

    def place(self, rel: str, block: Block) -> tuple[int | None, str | None, bool]:
        """(rank, node, whether the rank's end is witnessed) of a block."""
        task, local_rank, prefix_rank = block.stream
        step = self.ranks.steps.at(rel, block.start_line)
        entry = self._summary_entry(rel, block)
        rank, node = self._place(block, entry, step)
        if rank is None and task is None and prefix_rank is None and local_rank is None:
            rank, node = self._only_failed_task(node, step)
        node = node if node in self.nodes else None  # a log's host name that is no job node names none
        return rank, node, entry is not None or self._exited(task, rank, step)

    def _summary_entry(self, rel: str, block: Block) -> TorchrunEntry | None:
        """The torchrun summary entry whose `traceback :` this block is (its error_file's): one that
        starts at most SUMMARY_SPAN lines before the block, printed by the block's srun task."""
        lines = self.summaries.get((rel, block.stream[0]), [])
        near = lines[
            bisect_left(lines, block.start_line - SUMMARY_SPAN, key=_first_line) : bisect_left(
                lines, block.start_line, key=_first_line
            )
        ]
        return self.ranks.entries[min(i for _, i in near)] if near else None

    def _place(self, block: Block, entry: TorchrunEntry | None, step: StepKey) -> tuple[int | None, str | None]:
        task, local_rank, prefix_rank = block.stream
        node = self._task_node(task, step)
        if entry is not None:  # its host is torchrun's getfqdn(): only a name of the job's nodes is a node
            return entry.rank, node or (entry.host if entry.host in self.nodes else None)
        if prefix_rank is not None:  # c10's [rankN]: a global rank (§8.13)
            return prefix_rank, node or self._job_node(self.ranks.node_of(prefix_rank))  # its task's node first
        if local_rank is not None and len(self.ranks.nodes) == 1:  # one node: its local ranks are the ranks
            return local_rank, node or self.ranks.nodes[0]
        if local_rank is not None:  # torchrun's [defaultN]: the summary maps it, on its node
            mapped = self.local_ranks.get((local_rank, node)) if node else None
            return (mapped.rank if mapped else None), node
        if task is not None and not self.ranks.torchrun:
            return task, node or self._job_node(self.ranks.node_of(task))
        return None, node

    def _exited(self, task: int | None, rank: int | None, step: StepKey) -> bool:
        """srun says the task ended (exit code, signal), or torchrun's summary names the rank."""
        if rank is not None and rank in self.summary_ranks:
            return True
        if task is None:
            return False
        return (step, task) in self.task_nodes

    def _only_failed_task(self, node: str | None, step: StepKey) -> tuple[int | None, str | None]:
        """An unlabelled stream: the rank is the one task srun says failed in its step, if only one did."""
        exited = [
            e
            for e in self.task_ends
            if e.fields.get("what", "").startswith("Exited with exit code") and self.ranks.steps.of(e) == step
        ]
        failed = {t for e in exited for t in expand_tasks(e.fields["tasks"], limit=2)}
        if len(failed) != 1:
            return None, node
        task = failed.pop()
        return task, node or self._task_node(task, step) or self._job_node(self.ranks.node_of(task))

    def _job_node(self, node: str | None) -> str | None:
        """A rank's node as the rank map has it, only when it is one of the job's (torchrun's host may be localhost)."""
        return node if node in self.nodes else None

    def _task_node(self, task: int | None, step: StepKey) -> str | None:
        if task is None:
            return None
        return self.task_nodes.get((step, task)) or self._job_node(self.ranks.task_node(step, task))


def _first_line(summary: tuple[int, int]) -> int:
    return summary[0]
