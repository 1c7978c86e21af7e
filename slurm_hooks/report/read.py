"""Accounting columns -> the facts the report counts, one list per fact, each derived once per
distinct text (a million jobs repeat a few thousand states, node lists and records).

`failed` follows our record when the report may trust it (a job whose script exited 0 while a
step segfaulted is a failure), else Slurm's state. Node names are expanded here, with a bounded
memo, for racks spanned and the node filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import compress
from typing import NamedTuple

from slurm_hooks.report.hostlist import MAX_HOSTS, expand, expand_bounded
from slurm_hooks.report.memo import Memo
from slurm_hooks.report.records import Record, RecordReader
from slurm_hooks.slurm.columns import Columns

NOT_ENDED = {
    "RUNNING",
    "PENDING",
    "REQUEUED",
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
_SPREAD_BYTES = 64 << 20  # node names the spread memo holds, all together


class Spread(NamedTuple):
    """A row's node list: racks spanned, names cut past its NNodes, whether it parsed; of its names only
    those the node filter asks for, so a row costs the same whatever its list names."""

    names: tuple[str, ...]  # the list's names that the report's node filter names
    racks: int
    cut: int = 0
    bad: bool = False
    size: int = 0  # names in the list (up to its NNodes)


class Jobs(NamedTuple):
    """A block of jobs: Slurm's columns and what the report derives from them, row i in each list."""

    cols: Columns
    records: list[Record]
    states: list[tuple[str, bool]]  # first word of Slurm's state (`CANCELLED by 1001` -> CANCELLED), ended
    spreads: list[Spread]

    def select(self, keep: list[bool]) -> Jobs:
        return Jobs(
            Columns._make(list(compress(col, keep)) for col in self.cols),
            list(compress(self.records, keep)),
            list(compress(self.states, keep)),
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
        self.states = Memo(_state, _MEMO_MAX)
        self.spreads = Memo(self._spread, _MEMO_MAX, _spread_bytes, _SPREAD_BYTES)

    def jobs(self, cols: Columns) -> Jobs:
        records = list(map(self.records.classify.__getitem__, cols.admin_comment))
        for i in compress(range(len(records)), cols.comment):  # rare: a user's Comment (our mark there?)
            records[i] = self.records.read(cols.admin_comment[i], cols.comment[i])
        return Jobs(
            cols,
            records,
            list(map(self.states.__getitem__, cols.state)),
            list(map(self.spreads.__getitem__, zip(cols.node_list, cols.n_nodes, strict=True))),
        )

    def _spread(self, row: tuple[str, int]) -> Spread:
        """A node list expanded no further than the row's own NNodes (more is cut and counted)."""
        node_list, n_nodes = row
        hosts = expand_bounded(node_list, n_nodes if n_nodes > 0 else MAX_HOSTS)
        names = list(map(str.lower, hosts.names))  # our record lowercases node names
        kept = tuple(n for n in names if n in self.wanted) if self.wanted else ()
        return Spread(kept, len(set(map(self.rack, names))), hosts.cut, hosts.bad, len(names))


def _spread_bytes(spread: Spread) -> int:
    return 100 + sum(map(len, spread.names)) + 64 * len(spread.names)  # the text and a str object's overhead


def node_names(node_list: str) -> tuple[str, ...]:
    """A list's names, at most MAX_HOSTS (hostlist.expand)."""
    return tuple(n.lower() for n in expand(node_list))  # our record lowercases node names


def _state(state: str) -> tuple[str, bool]:
    word = state.partition(" ")[0]
    return word, word not in NOT_ENDED and word != ""
