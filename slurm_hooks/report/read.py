"""Accounting columns -> the facts the report counts, one list per fact, each derived once per
distinct text (a million jobs repeat a few thousand states, node lists and records).

A job's verdict (failed or not) follows our record when the report may trust it (a job whose
script exited 0 while a step segfaulted is a failure), else Slurm's state: it is decided once
per distinct (AdminComment, State) pair, with everything the tally counts by, so the tally's
passes over a million rows are lookups in C. Node names are expanded here, with a bounded memo,
for racks spanned and the node filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter
from typing import NamedTuple

from slurm_hooks.report.hostlist import MAX_HOSTS, expand, expand_bounded
from slurm_hooks.report.memo import Key, Memo
from slurm_hooks.report.records import Record, RecordReader
from slurm_hooks.slurm.columns import Columns

# Not ended: the job's current run goes on. sacct -D lists each run of a requeued job as a row of its
# own, and an earlier run's row reads REQUEUED: that run ended (its record, where our Epilog wrote one,
# says how), so REQUEUED is not here.
NOT_ENDED = {
    "RUNNING",
    "PENDING",
    "SUSPENDED",
    "COMPLETING",
    "RESIZING",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
    "CONFIGURING",
}
_MEMO_MAX = 4096
_RECORDED_MAX = 16384  # as records' own cache: a million jobs' records repeat a few thousand texts
_DECIDES = itemgetter(7)  # of a Recorded: its `decides`
_SPREAD_BYTES = 64 << 20  # node names the spread memo holds, all together
UNRECORDED = "(no record)"  # failed, but no record the report may trust
Shape = tuple[str, str, bool, bool]  # label shown, config, recorded, crashed
Reach = tuple[int, int]  # nodes (NNodes, else the list's length), racks spanned


class Spread(NamedTuple):
    """A row's node list: racks spanned, names cut past its NNodes, whether it parsed; of its names only
    those the node filter asks for, so a row costs the same whatever its list names."""

    names: tuple[str, ...]  # the list's names that the report's node filter names
    racks: int
    cut: int
    bad: bool
    size: int  # names in the list (up to its NNodes)
    reach: Key[Reach]  # (nodes, racks), interned: a row's shape is counted by it


class Recorded(NamedTuple):
    """A job's record (a records.Record's fields, in its order) and, interned, the part of it that
    its verdict depends on: a million jobs' records are a few such parts."""

    bucket: str
    label: str
    config: str
    node: str
    state: str  # the job's state as our record gives it
    exc: str
    rerun: bool  # a run after a requeue (records.Record)
    decides: Key[tuple[str, str, str]]  # label, config, state


class Verdict(NamedTuple):
    """What a record's deciding part and Slurm's state say together, once per distinct pair."""

    ended: bool
    bad: bool  # failed or crashed, if it ended in the window: our record's label, else Slurm's state
    crashed: bool  # a crash inside a COMPLETED job (our record's state=, else Slurm's): not a failed job
    shown: str  # the label its views count it under, if it ended in the window
    shape: Key[Shape]  # (shown, config, recorded, crashed), interned: a row's shape is counted by it
    word: str  # first word of Slurm's state (`CANCELLED by 1001` -> CANCELLED)


class Jobs(NamedTuple):
    """A block of jobs: Slurm's columns and what the report derives from them, row i in each list."""

    cols: Columns
    records: list[Recorded]
    verdicts: list[Verdict]
    spreads: list[Spread]

    def select(self, keep: list[bool]) -> Jobs:
        return Jobs(
            Columns._make(list(compress(col, keep)) for col in self.cols),
            list(compress(self.records, keep)),
            list(compress(self.verdicts, keep)),
            list(compress(self.spreads, keep)),
        )


@dataclass(frozen=True)
class Filters:
    partition: frozenset[str] = frozenset()
    user: frozenset[str] = frozenset()
    account: frozenset[str] = frozenset()
    label: frozenset[str] = frozenset()  # not a job filter: the tally shows these labels' rates among all jobs
    node: frozenset[str] = frozenset()

    def apply(self, jobs: Jobs) -> Jobs:
        if not (self.partition or self.user or self.account or self.node):
            return jobs
        cols = jobs.cols
        keep = [
            (not self.partition or partition in self.partition)
            and (not self.user or user in self.user)
            and (not self.account or account in self.account)
            and (not self.node or record.node in self.node or not self.node.isdisjoint(spread.names))
            for partition, user, account, record, spread in zip(
                cols.partition, cols.user, cols.account, jobs.records, jobs.spreads, strict=True
            )
        ]
        return jobs.select(keep)


class Racks:
    """A node's rack, by `report.rack_pattern`'s group `rack`; "?" where the name does not match."""

    def __init__(self, pattern: str) -> None:
        self.pattern = re.compile(pattern)

    def __call__(self, node: str) -> str:
        found = self.pattern.search(node)
        return found.group("rack") if found else "?"


class JobReader:
    def __init__(
        self, labels: tuple[str, ...], rack_pattern: str, trust_comment: bool, wanted: frozenset[str] = frozenset()
    ) -> None:
        self.wanted = wanted  # the node filter's names
        self.records = RecordReader(labels, trust_comment)
        self.rack = Racks(rack_pattern)
        self.recorded = Memo(self._recorded, _RECORDED_MAX)  # by AdminComment
        self.verdicts = Memo(self._verdict, _MEMO_MAX)  # by (a record's deciding part, Slurm's state)
        self.spreads = Memo(self._spread, _MEMO_MAX, _spread_bytes, _SPREAD_BYTES)
        # one object per value: a row's verdict and its shape are looked up by pairs of pointers
        self.decides: Memo[tuple[str, str, str], Key[tuple[str, str, str]]] = Memo(Key, _MEMO_MAX)
        self.shapes: Memo[Shape, Key[Shape]] = Memo(Key, _MEMO_MAX)
        self.reaches: Memo[Reach, Key[Reach]] = Memo(Key, _MEMO_MAX)

    def jobs(self, cols: Columns) -> Jobs:
        records = list(map(self.recorded.__getitem__, cols.admin_comment))
        for i in compress(range(len(records)), cols.comment):  # rare: a user's Comment (our mark there?)
            records[i] = self.with_key(self.records.read(cols.admin_comment[i], cols.comment[i]))
        verdicts = list(map(self.verdicts.__getitem__, zip(map(_DECIDES, records), cols.state, strict=True)))
        spreads = list(map(self.spreads.__getitem__, zip(cols.node_list, cols.n_nodes, strict=True)))
        return Jobs(cols, records, verdicts, spreads)

    def _recorded(self, text: str) -> Recorded:
        return self.with_key(self.records.of_text(text))  # this memo is the cache

    def with_key(self, record: Record) -> Recorded:
        return Recorded(*record, self.decides[record.label, record.config, record.state])

    def _verdict(self, row: tuple[Key[tuple[str, str, str]], str]) -> Verdict:
        (label, config, state), word = row[0].value, row[1].partition(" ")[0]
        ended = word not in NOT_ENDED and word != ""
        bad = ended and (label != "success" if label else word != "COMPLETED")
        crashed = bad and (state == "completed" if state else word == "COMPLETED")
        shown = label or (UNRECORDED if bad else "success")
        return Verdict(ended, bad, crashed, shown, self.shapes[shown, config, bool(label), crashed], word)

    def _spread(self, row: tuple[str, int]) -> Spread:
        """A node list expanded no further than the row's own NNodes (more is cut and counted)."""
        node_list, n_nodes = row
        hosts = expand_bounded(node_list, n_nodes if n_nodes > 0 else MAX_HOSTS)
        names = list(map(str.lower, hosts.names))  # our record lowercases node names
        kept = tuple(n for n in names if n in self.wanted) if self.wanted else ()
        racks = len(set(map(self.rack, names)))
        return Spread(kept, racks, hosts.cut, hosts.bad, len(names), self.reaches[n_nodes or len(names), racks])


def _spread_bytes(spread: Spread) -> int:
    return 100 + sum(map(len, spread.names)) + 64 * len(spread.names)  # the text and a str object's overhead


def node_names(node_list: str) -> tuple[str, ...]:
    """A list's names, at most MAX_HOSTS (hostlist.expand)."""
    return tuple(n.lower() for n in expand(node_list))  # our record lowercases node names
