"""One pass over the jobs, bounded memory: counters keyed by label, configuration, scale bucket,
root node, day and group, never a list of jobs (samples of job ids are capped).

A Tally counts one stream of jobs; tallies of parts of the stream merge into the tally of the
whole (report/parallel.py counts batches in worker processes). Sampled job ids are the lowest ones,
so the result does not depend on how the stream was split or in which order batches finished.
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from itertools import compress
from operator import itemgetter
from typing import Any

from slurm_hooks.report.coverage import REASONS, SpoolView
from slurm_hooks.report.read import Jobs
from slurm_hooks.report.records import OURS
from slurm_hooks.slurm.accounting import TRUNCATED

UNRECORDED = "(no record)"  # failed, but no record the report may trust
SAMPLE = 100
MAX_DAYS = 31  # days listed per root node
_BUCKET, _LABEL, _CONFIG, _NODE = itemgetter(0), itemgetter(1), itemgetter(2), itemgetter(3)  # of a records.Record
_ENDED, _RACKS, _CUT, _BAD = itemgetter(1), itemgetter(1), itemgetter(2), itemgetter(3)  # of a state, a spread


def _seconds() -> list[int]:  # a named factory: a Tally crosses process boundaries pickled
    return [0, 0]


def _add_day(days: set[str], day: str) -> None:
    """Keep the earliest MAX_DAYS days: the same set whatever order the failures come in."""
    if len(days) < MAX_DAYS:
        days.add(day)
    elif day not in days and day < (latest := max(days)):
        days.remove(latest)
        days.add(day)


class Lowest:
    """The n lowest job ids seen, each with its payload: a bounded, order-independent sample."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.heap: list[tuple[int, str, tuple[str, ...]]] = []  # (-id, id, payload): the root is the highest kept

    def add(self, job_id: str, *payload: str) -> None:
        if self.n <= 0:
            return
        item = (-int(job_id), job_id, payload)
        if len(self.heap) < self.n:
            heapq.heappush(self.heap, item)
        elif item > self.heap[0]:
            heapq.heapreplace(self.heap, item)

    def merge(self, other: Lowest) -> None:
        for _, job_id, payload in other.heap:
            self.add(job_id, *payload)

    def sorted(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(job_id, payload) for _, job_id, payload in sorted(self.heap, reverse=True)]


class Tally:
    def __init__(
        self,
        spool: SpoolView,
        details_limit: int = 0,
        focus: frozenset[str] = frozenset(),
    ) -> None:
        # --label: rates of these labels among all jobs (filtering the jobs would make every rate 100%)
        self.focus = focus
        self.spool = spool
        self.not_ended = 0
        self.inputs: Counter[str] = Counter()
        self.records: Counter[str] = Counter()
        self.uncovered: Counter[str] = Counter()  # failed jobs without a trusted record, by reason
        self.uncovered_ids: dict[str, Lowest] = {r: Lowest(SAMPLE) for r in REASONS}
        # One counter per row shape, split up at the end: a dict update per job is what costs here.
        self.shape: Counter[tuple[Any, ...]] = Counter()  # label, config, recorded, n_nodes, n_racks
        # (jobs, failed jobs) by partition, by user, by account
        self.groups = tuple((Counter[str](), Counter[str]()) for _ in range(3))
        # node- and GPU-seconds lost, as integers: the sum is the same in whatever order parts merge
        self.lost: dict[str, list[int]] = defaultdict(_seconds)
        self.roots: Counter[tuple[str, str]] = Counter()  # (root node, label)
        self.root_days: dict[str, set[str]] = defaultdict(set)
        self.per_day: Counter[tuple[str, str]] = Counter()
        self.kinds: Counter[str] = Counter()  # failed app_exception jobs by exception kind
        self.details = Lowest(details_limit)  # failed jobs: (label, state); diagnoses read at the end

    def unreadable(self, n: int) -> None:
        self.inputs["rows"] += n
        self.inputs["unreadable_rows"] += n

    def add(self, jobs: Jobs) -> None:
        """Count a block of jobs: whole columns at a time, and row by row only the failed ones."""
        cols, records, n = jobs.cols, jobs.records, len(jobs.records)
        inputs = self.inputs
        inputs["rows"] += n
        for comment in filter(None, cols.comment):
            inputs["comment_cut"] += comment.endswith(TRUNCATED)
            inputs["comment_newline"] += "\n" in comment
            inputs["comment_delimiter"] += "|" in comment or "\x1f" in comment
        n_nodes = cols.n_nodes  # where Slurm gave none, the node list's length
        if 0 in n_nodes:
            n_nodes = [given or spread.size for given, spread in zip(n_nodes, jobs.spreads, strict=True)]
        inputs["no_nodes"] += n_nodes.count(0)
        inputs["node_list_cut"] += sum(map(bool, map(_CUT, jobs.spreads)))  # names past the row's NNodes
        inputs["node_list_bad"] += sum(map(_BAD, jobs.spreads))  # a list that does not parse
        self.records.update(map(_BUCKET, records))
        ended = list(map(_ENDED, jobs.states))
        waiting = ended.count(False)
        self.not_ended += waiting
        failed = [
            done and (r.label != "success" if r.label else word != "COMPLETED")
            for done, r, (word, _) in zip(ended, records, jobs.states, strict=True)
        ]
        shown = [r.label or (UNRECORDED if bad else "success") for r, bad in zip(records, failed, strict=True)]
        recorded = map(bool, map(_LABEL, records))
        shape = zip(shown, map(_CONFIG, records), recorded, n_nodes, map(_RACKS, jobs.spreads), strict=True)
        self.shape.update(compress(shape, ended))
        for (jobs_of, failed_of), column in zip(self.groups, (cols.partition, cols.user, cols.account), strict=True):
            jobs_of.update(compress(column, ended) if waiting else column)  # a whole list counts fastest
            failed_of.update(compress(column, failed))
        self._failed(jobs, list(compress(range(n), failed)), shown, n_nodes)

    def _failed(self, jobs: Jobs, rows: list[int], shown: list[str], n_nodes: list[int]) -> None:
        """Hours lost, days, root nodes and coverage: the failed rows only."""
        cols = jobs.cols
        labels = list(map(shown.__getitem__, rows))
        days = [end[:10] if end[:1].isdigit() else "" for end in map(cols.end.__getitem__, rows)]
        records = list(map(jobs.records.__getitem__, rows))
        nodes = list(map(_NODE, records))
        self.per_day.update(zip(days, labels, strict=True))
        self.kinds.update(r.exc for r in records if r.exc)
        self.roots.update(compress(zip(nodes, labels, strict=True), nodes))
        for node, day in set(compress(zip(nodes, days, strict=True), nodes)):
            _add_day(self.root_days[node], day)
        elapsed = map(cols.elapsed_s.__getitem__, rows)
        sizes = zip(map(n_nodes.__getitem__, rows), map(cols.n_gpus.__getitem__, rows), strict=True)
        for label, seconds, (node_count, gpu_count) in zip(labels, elapsed, sizes, strict=True):
            entry = self.lost[label]
            entry[0] += seconds * node_count
            entry[1] += seconds * gpu_count
        for i, label, record in zip(rows, labels, records, strict=True):
            if record.bucket != OURS:
                reason = self.spool.reason(cols.job_id[i], record.bucket, cols.comment[i])
                self.uncovered[reason] += 1
                self.uncovered_ids[reason].add(cols.job_id[i])
            if self.details.n:
                self.details.add(cols.job_id[i], label, jobs.states[i][0])

    def merge(self, other: Tally) -> None:
        """Add another part's counts to this one's."""
        self.not_ended += other.not_ended
        for mine, theirs in zip(self._counters(), other._counters(), strict=True):
            mine.update(theirs)
        for label, (node_s, gpu_s) in other.lost.items():
            entry = self.lost[label]
            entry[0] += node_s
            entry[1] += gpu_s
        for node, days in other.root_days.items():
            for day in days:
                _add_day(self.root_days[node], day)
        for reason, ids in other.uncovered_ids.items():
            self.uncovered_ids[reason].merge(ids)
        self.details.merge(other.details)

    def _counters(self) -> list[Counter[Any]]:
        return [
            self.inputs,
            self.records,
            self.uncovered,
            self.shape,
            self.per_day,
            self.roots,
            self.kinds,
            *(counter for pair in self.groups for counter in pair),
        ]

    def shown(self, label: str) -> bool:
        return not self.focus or label in self.focus
