"""One pass over the jobs, bounded memory: counters keyed by label, configuration, scale bucket,
root node, day and group, never a list of jobs (samples of job ids are capped).

A Tally counts one stream of jobs; tallies of parts of the stream merge into the tally of the
whole (report/parallel.py counts batches in worker processes). Sampled job ids are the lowest ones,
so the result does not depend on how the stream was split or in which order batches finished.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import compress, repeat
from operator import and_, attrgetter, ge, itemgetter, le, mul, ne
from typing import Any

from slurm_hooks.report.bounded import Lowest, add_day, sums, zero_seconds
from slurm_hooks.report.causes import CODE_LABELS
from slurm_hooks.report.coverage import REASONS, SpoolView
from slurm_hooks.report.exposure import Exposure
from slurm_hooks.report.read import Jobs
from slurm_hooks.report.records import OURS
from slurm_hooks.slurm.accounting import TRUNCATED

SAMPLE = 100
USERS_KEPT = 32  # distinct users kept per (root node, label) of an application crash
_BUCKET, _CONFIG, _NODE, _EXC = attrgetter("bucket"), attrgetter("config"), attrgetter("node"), attrgetter("exc")
_RERUN = attrgetter("rerun")
# of a read.Recorded (above), of a read.Verdict
_ENDED, _BAD, _CRASHED = attrgetter("ended"), attrgetter("bad"), attrgetter("crashed")
_SHOWN, _SHAPE, _WORD = attrgetter("shown"), attrgetter("shape"), attrgetter("word")
_CUT, _BAD_LIST, _REACH = attrgetter("cut"), attrgetter("bad"), attrgetter("reach")  # of a read.Spread
_DAY, _FIRST = itemgetter(slice(0, 10)), itemgetter(slice(0, 1))  # of sacct's End


Window = tuple[str, str]  # sacct's End as it prints it (local, `2026-11-01T00:00:00`): the first and last kept
ANY_TIME: Window = ("", "\x7f")


class Tally:
    def __init__(
        self,
        spool: SpoolView,
        details_limit: int = 0,
        focus: frozenset[str] = frozenset(),
        window: Window = ANY_TIME,
        cluster: str = "",
    ) -> None:
        # --label: rates of these labels among all jobs (filtering the jobs would make every rate 100%)
        self.focus = focus
        self.spool = spool
        self.window, self.cluster = window, cluster
        self.not_ended = 0
        # rows outside the document's jobs (those that ended in the window), by why
        self.outside: Counter[str] = Counter()
        self.exposure = Exposure()
        self.inputs: Counter[str] = Counter()
        self.records: Counter[str] = Counter()
        self.uncovered: Counter[str] = Counter()  # failed jobs without a trusted record, by reason
        self.uncovered_ids: dict[str, Lowest] = {r: Lowest(SAMPLE) for r in REASONS}
        # One counter per row shape, split up at the end: a dict update per job is what costs here.
        # label, config, recorded, n_nodes, n_racks, crashed (a COMPLETED job with a crash)
        self.shape: Counter[tuple[Any, ...]] = Counter()
        # (jobs, failed or crashed jobs, crashed jobs) by partition, by user, by account
        self.groups = tuple((Counter[str](), Counter[str](), Counter[str]()) for _ in range(3))
        # node- and GPU-seconds lost, as integers: the sum is the same in whatever order parts merge;
        # by (label, config, n_nodes, day), by (partition, user, account) (one update per failed job
        # each: the lost, day_lost and group_lost views are summed from them), by (root node, label)
        self.lost_at: dict[tuple[str, str, int, str], list[int]] = defaultdict(zero_seconds)
        self.group_lost_at: dict[tuple[str, str, str], list[int]] = defaultdict(zero_seconds)
        self.root_lost: dict[tuple[str, str], list[int]] = defaultdict(zero_seconds)
        self.roots: Counter[tuple[str, str]] = Counter()  # (root node, label)
        self.root_days: dict[str, set[str]] = defaultdict(set)
        # The labels whose code is the first suspect (causes.CODE_LABELS): each user's roots of them, and
        # the distinct users among a node's roots, up to USERS_KEPT (bounded: more only makes the node's
        # case stronger, and the test counts no more than are kept)
        self.user_roots: Counter[tuple[str, str]] = Counter()  # (label, user)
        self.root_users: dict[tuple[str, str], set[str]] = defaultdict(set)  # (root node, label)
        self.per_day: Counter[tuple[str, str, bool]] = Counter()  # (day, label, crashed)
        self.kinds: Counter[str] = Counter()  # failed app_exception jobs by exception kind
        # runs of requeued jobs (sacct -D): `requeued`, an earlier run that ended in a requeue;
        # `rerun_ok`, a later run that succeeded (its record's run= counts a restart)
        self.runs: Counter[str] = Counter()
        self.details = Lowest(details_limit)  # failed jobs: (label, state); diagnoses read at the end

    def unreadable(self, n: int) -> None:
        """Rows not counted: not a row, a number int() refuses, or a negative or impossible
        duration, node or GPU count (blocks.in_bounds)."""
        self.inputs["rows"] += n
        self.inputs["unreadable_rows"] += n

    def add(self, jobs: Jobs) -> None:
        """Count a block of jobs: whole columns at a time, and row by row only the failed ones."""
        cols, verdicts, spreads, n = jobs.cols, jobs.verdicts, jobs.spreads, len(jobs.verdicts)
        inputs = self.inputs
        inputs["rows"] += n
        for comment in filter(None, cols.comment):
            inputs["comment_cut"] += comment.endswith(TRUNCATED)
            inputs["comment_newline"] += "\n" in comment
            inputs["comment_delimiter"] += "|" in comment or "\x1f" in comment
        n_nodes = cols.n_nodes  # where Slurm gave none, the node list's length
        if 0 in n_nodes:
            n_nodes = [given or spread.size for given, spread in zip(n_nodes, spreads, strict=True)]
        inputs["no_nodes"] += n_nodes.count(0)
        inputs["node_list_cut"] += sum(map(bool, map(_CUT, spreads)))  # names past the row's NNodes
        inputs["node_list_bad"] += sum(map(_BAD_LIST, spreads))  # a list that does not parse
        ended = list(map(_ENDED, verdicts))
        self.not_ended += ended.count(False)
        kept = self._in_window(cols.end, ended)
        whole = kept.count(True) == n  # every row counted: a whole list counts fastest
        records = jobs.records if whole else list(compress(jobs.records, kept))
        self.records.update(map(_BUCKET, records))
        self.runs["requeued"] += list(map(_WORD, verdicts if whole else compress(verdicts, kept))).count("REQUEUED")
        if any(map(_RERUN, records)):  # rare: looked for in C first
            self.runs["rerun_ok"] += sum(r.rerun and r.label == "success" for r in records)
        failed = list(map(and_, kept, map(_BAD, verdicts)))
        bad_rows = list(compress(range(n), failed))
        # A crash inside a COMPLETED job: a crash, not a failed job (rare: looked for in C first)
        crashed = list(map(and_, kept, map(_CRASHED, verdicts))) if any(map(_CRASHED, verdicts)) else []
        # Each row's shape by its two interned Keys, then once per distinct pair by their values.
        shapes = zip(map(_SHAPE, verdicts), map(_REACH, spreads), strict=True)
        shape = self.shape
        for (head, reach), count in Counter(shapes if whole else compress(shapes, kept)).items():
            label, config, recorded, crash = head.value
            width, racks = reach.value
            shape[label, config, recorded, width, racks, crash] += count
        for (jobs_of, failed_of, crashed_of), column in zip(
            self.groups, (cols.partition, cols.user, cols.account), strict=True
        ):
            jobs_of.update(column if whole else compress(column, kept))
            failed_of.update(compress(column, failed))
            if crashed:
                crashed_of.update(compress(column, crashed))
        days = list(map(_DAY, cols.end))  # computed once: every job's exposure, the failed rows' hours
        self.exposure.add(jobs, kept, whole, n_nodes, days)
        self._failed(jobs, bad_rows, n_nodes, crashed, days)

    def _in_window(self, ends: list[str], ended: list[bool]) -> list[bool]:
        """Ended jobs whose End falls in the window: `--input` is cut as a live read is (an End
        sacct did not give as a time is kept: nothing says it is outside)."""
        if self.window == ANY_TIME:
            return ended
        first, last = self.window
        if not ends or (first <= min(ends) and max(ends) <= last):  # the common case, checked in C
            return ended
        kept = list(map(and_, ended, map(and_, map(le, repeat(first), ends), map(ge, repeat(last), ends))))
        for i in compress(range(len(ends)), map(ne, ended, kept)):
            if not ends[i][:1].isdigit():
                kept[i] = True
            else:
                self.outside["ended_before_window" if ends[i] < first else "ended_after_window"] += 1
        return kept

    def _failed(
        self,
        jobs: Jobs,
        rows: list[int],
        n_nodes: list[int],
        crashed: list[bool],
        all_days: list[str],
    ) -> None:
        """Hours lost, days, root nodes and coverage: the failed rows only."""
        cols = jobs.cols
        verdicts = list(map(jobs.verdicts.__getitem__, rows))
        records = list(map(jobs.records.__getitem__, rows))
        labels = list(map(_SHOWN, verdicts))
        days = list(map(all_days.__getitem__, rows))
        if not all(map(str.isdigit, map(_FIRST, days))):  # an End that is not a time has no day
            days = [day if day[:1].isdigit() else "" for day in days]
        nodes = list(map(_NODE, records))
        crash = map(crashed.__getitem__, rows) if crashed else repeat(False, len(rows))
        self.per_day.update(zip(days, labels, crash, strict=True))
        self.kinds.update(filter(None, map(_EXC, records)))
        roots = list(compress(zip(nodes, labels, strict=True), nodes))
        self.roots.update(roots)
        if not CODE_LABELS.isdisjoint(labels):  # the failed rows only, and only those of these labels
            for node, label, user in zip(nodes, labels, map(cols.user.__getitem__, rows), strict=True):
                if node and label in CODE_LABELS:
                    self.user_roots[label, user] += 1
                    self._root_user(node, label, user)
        root_days = self.root_days
        for node, day in set(compress(zip(nodes, days, strict=True), nodes)):
            days_of = root_days[node]
            if day not in days_of:  # most are: a node fails again the same day
                add_day(days_of, day)
        elapsed = list(map(cols.elapsed_s.__getitem__, rows))
        node_s = list(map(mul, elapsed, map(n_nodes.__getitem__, rows)))
        gpu_s = list(map(mul, elapsed, map(cols.n_gpus.__getitem__, rows)))
        widths = map(n_nodes.__getitem__, rows)
        keys = zip(labels, map(_CONFIG, records), widths, days, strict=True)
        groups = zip(*(map(col.__getitem__, rows) for col in (cols.partition, cols.user, cols.account)), strict=True)
        lost, group_lost = self.lost_at, self.group_lost_at
        for key, group, n_s, g_s in zip(keys, groups, node_s, gpu_s, strict=True):  # the few failed rows
            entry = lost[key]
            entry[0] += n_s
            entry[1] += g_s
            entry = group_lost[group]
            entry[0] += n_s
            entry[1] += g_s
        root_lost = self.root_lost
        for root, n_s, g_s in zip(roots, compress(node_s, nodes), compress(gpu_s, nodes), strict=True):
            entry = root_lost[root]
            entry[0] += n_s
            entry[1] += g_s
        for i in compress(rows, map(ne, map(_BUCKET, records), repeat(OURS))):  # failed without our record
            reason = self.spool.reason(cols.job_id[i], jobs.records[i].bucket, cols.comment[i])
            self.uncovered[reason] += 1
            self.uncovered_ids[reason].add(cols.job_id[i])
        if self.details.n:
            for i, label, verdict in zip(rows, labels, verdicts, strict=True):
                self.details.add(cols.job_id[i], label, verdict.word)

    def merge(self, other: Tally) -> None:
        """Add another part's counts to this one's."""
        self.not_ended += other.not_ended
        for mine, theirs in zip(self._counters(), other._counters(), strict=True):
            mine.update(theirs)
        for own, their in zip(self._lost(), other._lost(), strict=True):
            for key, (node_s, gpu_s) in their.items():
                entry = own[key]
                entry[0] += node_s
                entry[1] += gpu_s
        self.exposure.merge(other.exposure)
        for node, days in other.root_days.items():
            for day in days:
                add_day(self.root_days[node], day)
        for (node, label), users in other.root_users.items():
            for user in users:
                self._root_user(node, label, user)
        for reason, ids in other.uncovered_ids.items():
            self.uncovered_ids[reason].merge(ids)
        self.details.merge(other.details)

    def _root_user(self, node: str, label: str, user: str) -> None:
        users = self.root_users[node, label]
        if len(users) < USERS_KEPT:
            users.add(user)

    def _lost(self) -> list[dict[Any, list[int]]]:
        return [self.lost_at, self.root_lost, self.group_lost_at]

    @property
    def lost(self) -> dict[tuple[str, str, int], list[int]]:
        """Seconds lost by (label, config, n_nodes)."""
        return sums((key[:3], seconds) for key, seconds in self.lost_at.items())

    @property
    def day_lost(self) -> dict[tuple[str, str], list[int]]:
        """Seconds lost by (day, label)."""
        return sums(((key[3], key[0]), seconds) for key, seconds in self.lost_at.items())

    @property
    def group_lost(self) -> dict[tuple[int, str], list[int]]:
        """Seconds lost by (0 partition | 1 user | 2 account, its name)."""
        items = self.group_lost_at.items()
        return sums(((i, group[i]), seconds) for group, seconds in items for i in range(3))

    def _counters(self) -> list[Counter[Any]]:
        return [
            self.inputs,
            self.outside,
            self.records,
            self.uncovered,
            self.shape,
            self.per_day,
            self.roots,
            self.user_roots,
            self.kinds,
            self.runs,
            *(counter for pair in self.groups for counter in pair),
        ]

    def shown(self, label: str) -> bool:
        return not self.focus or label in self.focus
