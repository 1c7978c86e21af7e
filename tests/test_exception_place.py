"""Placing a traceback's block: the summary's answer, and constant work per block at any job size."""

from __future__ import annotations

from slurm_hooks.diagnose.exception_place import SUMMARY_SPAN, Placer
from slurm_hooks.diagnose.ranks import RankMap, TorchrunEntry
from slurm_hooks.timeline.tracebacks import Block

LOG = "logs/job.out"
NODES = tuple(f"gb-r{i // 18 + 1:03d}-c{i % 18 + 1:02d}" for i in range(1152))
PER_NODE = 4
ENTRY_LINES = 10  # a summary entry's lines, its `traceback :` on the seventh


class CountedEntries(list[TorchrunEntry]):
    """The summary's entries, counting each time something walks through them."""

    walks = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        CountedEntries.walks += 1
        return super().__iter__()


def _summary() -> CountedEntries:
    """torchrun's failure summary for every rank, each node's agent (srun task) printing its own ranks."""
    entries = CountedEntries()
    for task, node in enumerate(NODES):
        for local in range(PER_NODE):
            rank = task * PER_NODE + local
            entries.append(TorchrunEntry(LOG, task, 1 + rank * ENTRY_LINES, node, rank, local, 1, 30000 + local))
    return entries


def _traceback_of(entry: TorchrunEntry) -> Block:
    return Block((entry.task, None, None), entry.first_line + 6, 0)


def test_a_summary_traceback_is_placed_on_its_entrys_rank_and_host() -> None:
    entries = _summary()
    placer = Placer(RankMap(nodes=NODES, torchrun=True, entries=entries), [])
    for entry in (entries[0], entries[2049], entries[-1]):
        assert placer.place(LOG, _traceback_of(entry)) == (entry.rank, entry.host, True)
    # Further from its entry than a summary entry spans, or printed by another task: not the entry's.
    far = Block((0, None, None), entries[0].first_line + SUMMARY_SPAN + 1, 0)
    assert placer.place(LOG, far)[0] != entries[0].rank
    other_task = Block((1, None, None), entries[0].first_line + 6, 0)
    assert placer.place(LOG, other_task)[0] != entries[0].rank


def test_of_two_entries_a_traceback_could_be_the_summarys_first_is_taken() -> None:
    entries = CountedEntries(
        [TorchrunEntry(LOG, 0, 20, NODES[0], 7, 3, 1), TorchrunEntry(LOG, 0, 15, NODES[0], 5, 1, 1)]
    )
    placer = Placer(RankMap(nodes=NODES, torchrun=True, entries=entries), [])
    assert placer.place(LOG, Block((0, None, None), 25, 0))[0] == 7


def test_placing_every_rank_of_a_1152_node_job_walks_the_summary_only_to_build_its_index() -> None:
    """A job whose 4,608 ranks all raise the same error has each one placed: a walk through the summary
    per block made that quadratic (2.3 s at 1,152 nodes, 7.1 s at 2,304, past the Epilog's budget
    beyond); the index is built in one walk or a few, and placing reads none."""
    entries = _summary()
    placer = Placer(RankMap(nodes=NODES, torchrun=True, entries=entries), [])
    blocks = [(e, _traceback_of(e)) for e in entries]
    CountedEntries.walks = 0
    placed = [(e, placer.place(LOG, block)) for e, block in blocks]
    assert CountedEntries.walks == 0
    assert all(got == (e.rank, e.host, True) for e, got in placed)
