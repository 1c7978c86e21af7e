"""Faults the job survived (log-signatures §8.30): a fault followed by the job's own progress did not end it.

A link that went down and came back, a retried I/O error, an Xid with no consequence, a crash of a
process that was restarted: where the job advanced after the fault, the fault is listed in
`details.survived` and is never the root; what ended the job decides. Advanced: one stream (a
rank's lines in one file) logged two progress readings after the fault (iterations, Trainer
steps, a bar going up, a save completing): the first may be the step that was in flight when the
fault came, and the fault's consequences (an NCCL abort, a crash) seconds later. "After" is what
the logs can show:
- for a rank's crash or exception, progress of that rank (its `[rankN]` prefix, its srun task,
  the same stream of the same file), after it by position in that stream or by the clocks;
- for a fatal Xid, progress of a rank on its node where the logs place the streams that went on;
- for any other fault (a link's, a symptom), progress of any rank of the job, after it beyond the
  clocks' tolerance. An unstamped progress line has no time: it shows the job went on only by its
  position in the fault's own stream (block-buffered stdout flushed at exit lands below lines
  written long after it, so position in a merged file is no time).
Slurm ending the job (time limit, node failure, cancel) is never survived. Progress is read, never
scanned for (timeline/progress.py): each log's last MAX_TAIL bytes once a diagnosis (the job's
last progress, however long after a fault), and, for the few earliest faults the tails leave
undecided, forward from the fault's own line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.saves import patterns
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.progress import MAX_TAIL, Progress, Stream, last_progress, read_on

TAIL_BUDGET = 16 << 20  # bytes of log tails read in all: a job of many per-rank logs reads less of each
MIN_TAIL = 64 << 10  # but at least this much of each of the first MAX_LOGS
MAX_LOGS = 256
MAX_SIGHTINGS = 64  # readings a fault is compared with; kept sightings a survived crash is
MAX_FORWARD = 2  # faults in logs whose tails held no progress, read forward from their own line
FORWARD = 256 << 10  # bytes read forward from such a fault: the next log interval's lines
READINGS = 2  # progress readings of one stream after a fault that say the job advanced past it


class Survival:
    """Whether events were followed by the job's progress; the reads are made once, when first asked."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._index: _Index | None = None
        self._forward_left = MAX_FORWARD

    def split(self, events: list[Event]) -> tuple[list[Event], list[Event]]:
        """(the events that may have ended the job, those it went on after), each in timeline order.

        A crash is judged with all its sightings: a line that names no rank (a kernel line) is not
        survived where a sighting of the same crash (its node, the clocks cannot part them) that
        names its rank is not."""
        kept: list[Event] = []
        lived: list[Event] = []
        for ev in events:
            (lived if self.survived(ev) else kept).append(ev)
        ctx = self.ctx
        crashes: dict[str | None, list[Event]] = {}
        for ev in kept:
            if ctx.has(ev, "crash"):
                crashes.setdefault(ev.node, []).append(ev)
        back = {
            id(ev)
            for ev in lived
            if ctx.has(ev, "crash")
            and self._rank(ev) is None
            and any(
                ctx.order.coincide(ev, k, ctx.merge_span)
                for k in [*crashes.get(ev.node, []), *crashes.get(None, [])][:MAX_SIGHTINGS]
            )
        }
        if not back:
            return kept, lived
        gone = {id(e) for e in lived} - back
        return [e for e in events if id(e) not in gone], [e for e in lived if id(e) in gone]

    def survived(self, ev: Event) -> bool:
        ctx = self.ctx
        if ctx.has(ev, "slurm_end") or ctx.has(ev, "node_death"):
            return False  # Slurm ended the job: nothing after it is this run's
        # a rank's crash, exception or CUDA error (sticky: the process is done) needs that rank going on;
        # a link or NCCL error it reported is the job's, which any rank's progress shows it passed
        dies = ctx.has(ev, "crash") or ctx.has(ev, "exception") or ctx.has(ev, "gpu_error")
        rank = self._rank(ev) if dies else None
        index = self.index()
        if rank is None and ev.node is not None and ctx.is_primary(ev) and ctx.has(ev, "xid"):
            return self._node_went_on(
                ev, index
            )  # a fatal Xid stops its GPU: only that node's ranks can show it did not
        if rank is None and index.latest and ev.latest and index.latest > ev.latest + ctx.order.tol:
            return True  # a stream read twice after it, by the clocks
        near = [*index.by_stream.get((ev.source, ev.task, ev.local_rank), []), *index.by_rank.get(rank, [])]
        if any(self._after(ev, rank, p) for p in near[:MAX_SIGHTINGS]):
            return True
        if self._forward_left <= 0 or not ev.source.startswith("logs/") or ev.source in index.sources:
            return False  # its log's tail showed progress: what came after the fault is in it
        self._forward_left -= 1  # a tail all teardown: the job's next progress right after the line
        seen: dict[tuple[str, Stream], int] = {}

        def accept(p: Progress) -> bool | None:
            if not self._after(ev, rank, p):
                return None
            key = (p.source, p.stream)
            seen[key] = seen.get(key, 0) + 1
            return True if seen[key] >= READINGS else None

        pats, job = patterns(ctx), ctx.bundle.job
        return read_on(ctx.bundle.root, ev.source, ev.offset, ev.line_no, pats, job, accept, limit=FORWARD) is not None

    def index(self) -> _Index:
        """Each stream's second-to-last progress reading (each log's tail, the saves that completed):
        a stream read twice after a fault read this one after it."""
        if self._index is None:
            ctx = self.ctx
            logs = ctx.bundle.logs[:MAX_LOGS]
            share = max(MIN_TAIL, min(MAX_TAIL, TAIL_BUDGET // max(1, len(logs))))
            pats, root, job = patterns(ctx), ctx.bundle.root, ctx.bundle.job
            tails = [p for f in logs for p in last_progress(root, f.rel, pats, job, share, READINGS)]
            saves = [
                Progress(e.source, e.offset, e.line_no, e.task, e.local_rank, e.rank, e.time)
                for e in ctx.with_trait("save_end")
                if e.source.startswith("logs/")
            ]
            streams: dict[tuple[str, Stream], list[Progress]] = {}
            for p in sorted([*tails, *saves], key=lambda p: (p.source, p.offset)):
                streams.setdefault((p.source, p.stream), []).append(p)
            index = _Index(sources={p.source for p in tails})
            for readings in streams.values():
                if len(readings) < READINGS:
                    continue
                p = readings[-READINGS]
                index.by_stream.setdefault((p.source, p.task, p.local_rank), []).append(p)
                if (rank := self._rank_of(p)) is not None:
                    index.by_rank.setdefault(rank, []).append(p)
                when = p.time
                index.latest = when if index.latest is None or (when and when > index.latest) else index.latest
            self._index = index
        return self._index

    def _node_went_on(self, ev: Event, index: _Index) -> bool:
        """A stream of a rank on `ev`'s node read twice after it (a peer elsewhere going on proves
        nothing: independent tasks, or an elastic job that dropped the node)."""
        ranks = self.ctx.ranks
        after = [p for ps in index.by_stream.values() for p in ps[:MAX_SIGHTINGS] if self._after(ev, None, p)]
        places = [ranks.node_of(self._rank_of(p)) for p in after]
        if any(places):  # where the logs place the streams that went on, one of them must be on the node
            return ev.node in places
        return bool(after)  # streams of no known place: the job went on, as for any other fault

    def _after(self, ev: Event, rank: int | None, p: Progress) -> bool:
        """`p` shows the job going on after `ev`: for a rank's crash or exception (`rank`), that rank's."""
        same_stream = p.source == ev.source and (p.task, p.local_rank) == (ev.task, ev.local_rank)
        if rank is not None and not (same_stream or self._rank_of(p) == rank):
            return False  # a rank's crash: that rank went on (restarted), not its peers
        if same_stream and (p.rank is None or ev.rank is None or p.rank == ev.rank) and p.offset > ev.offset:
            return True  # one stream of one file: its position is its order
        when = p.time  # unstamped: no time (see the module's note)
        return when is not None and ev.latest is not None and when > ev.latest + self.ctx.order.tol

    def _rank(self, ev: Event) -> int | None:
        """The crashed rank: its line's, its pid's, or its srun task's where a task is a rank. A crash
        of a process no rank owns (a helper the job restarts) is judged like a node's fault."""
        ranks = self.ctx.ranks
        if ev.rank is not None:
            return ev.rank
        if (rank := ranks.rank_of_pid(ev.node, ev.fields.get("pid"))) is not None:
            return rank
        return ev.task if ev.source.startswith("logs/") and not ranks.torchrun else None

    def _rank_of(self, p: Progress) -> int | None:
        return p.rank if p.rank is not None else (p.task if not self.ctx.ranks.torchrun else None)


@dataclass
class _Index:
    sources: set[str]  # the logs whose tails held progress
    by_stream: dict[tuple[str, int | None, int | None], list[Progress]] = field(default_factory=dict)
    by_rank: dict[int | None, list[Progress]] = field(default_factory=dict)
    latest: datetime | None = None  # the latest of them, by its own stamp or its file's
