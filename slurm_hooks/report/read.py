"""Accounting rows -> the facts the report counts: one small Job per row, derived once.

`failed` follows our record when the report may trust it (a job whose script exited 0 while a
step segfaulted is a failure), else Slurm's state. Node names are expanded here, with a bounded
cache, for racks spanned and the node filter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from slurm_hooks.report.hostlist import expand
from slurm_hooks.report.records import RecordReader
from slurm_hooks.slurm.accounting import TRUNCATED
from slurm_hooks.slurm.client import AccountingRow

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
_CACHE_MAX = 4096


class Job(NamedTuple):  # a tuple: built a million times, it must be cheap
    job_id: str
    state: str  # first word of Slurm's state: `CANCELLED by 1001` -> CANCELLED
    ended: bool
    failed: bool
    bucket: str  # records.BUCKETS
    label: str  # trusted label, or "" when the record is not ours
    config: tuple[str, str, str, str]  # driver, cdmm, ncore, gpu model ("" unknown)
    root_node: str
    n_nodes: int
    n_racks: int
    n_gpus: int
    elapsed_s: int
    day: str  # end date, Slurm's local time
    partition: str
    user: str
    account: str
    comment: str
    comment_cut: bool  # longer than the reader's bound
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class Filters:
    partition: frozenset[str] = frozenset()
    user: frozenset[str] = frozenset()
    account: frozenset[str] = frozenset()
    label: frozenset[str] = frozenset()  # not a job filter: the tally shows these labels' rates among all jobs
    node: frozenset[str] = frozenset()

    def keep(self, job: Job) -> bool:
        return (
            (not self.partition or job.partition in self.partition)
            and (not self.user or job.user in self.user)
            and (not self.account or job.account in self.account)
            and (not self.node or job.root_node in self.node or not self.node.isdisjoint(job.nodes))
        )


class JobReader:
    def __init__(self, labels: tuple[str, ...], rack_pattern: str, trust_comment: bool) -> None:
        self.records = RecordReader(labels, trust_comment)
        self.rack_re = re.compile(rack_pattern)
        self._nodes: dict[str, tuple[tuple[str, ...], int]] = {}

    def rack(self, node: str) -> str:
        found = self.rack_re.search(node)
        return found.group("rack") if found else "?"

    def job(self, row: AccountingRow) -> Job:
        record = self.records.read(row.admin_comment, row.comment)
        state = row.state.partition(" ")[0]
        ended = state not in NOT_ENDED and state != ""
        label = record.label
        nodes, racks = self._spread(row.node_list)
        end = row.end
        return Job(
            row.job_id,
            state,
            ended,
            ended and (label != "success" if label else state != "COMPLETED"),
            record.bucket,
            label,
            record.config,
            record.node,
            row.n_nodes or len(nodes),
            racks,
            row.n_gpus,
            row.elapsed_s,
            end[:10] if end[:1].isdigit() else "",
            row.partition,
            row.user,
            row.account,
            row.comment,
            row.comment.endswith(TRUNCATED),
            nodes,
        )

    def _spread(self, node_list: str) -> tuple[tuple[str, ...], int]:
        hit = self._nodes.get(node_list)
        if hit is None:
            if len(self._nodes) >= _CACHE_MAX:
                self._nodes.clear()
            names = tuple(n.lower() for n in expand(node_list))  # our record lowercases node names
            hit = self._nodes[node_list] = (names, len({self.rack(n) for n in names}))
        return hit
