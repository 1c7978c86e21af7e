"""One crash from its sightings (dump, launcher report, kernel line): its rank, node, frames and kind.

Also which crashes are consequences: a crash in NCCL teardown (the watchdog thread, libnccl,
ncclCommAbort) or one that follows an NCCL/IB error on its rank is not a cause (§8.4, §8.10).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from slurm_hooks.diagnose import signals
from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.ranks import TorchrunEntry
from slurm_hooks.diagnose.saves import open_save
from slurm_hooks.timeline.events import Event


@dataclass
class Crash:
    sightings: list[Event]
    frames: list[Event]
    save_start: Event | None
    rank: int | None
    node: str | None
    child: str | None = None  # dataloader_worker | forked_writer: a process the rank forked
    by_silence: bool = False  # rank and node are the silent rank's (§8.8): a guess (confidence.py)

    @property
    def in_checkpoint(self) -> bool:
        if self.child == "dataloader_worker":
            return False
        return self.child == "forked_writer" or self.save_start is not None or bool(self.frames)


FRAMES_BEFORE = 40  # lines before a crash header whose frames are its own (a native trace printed first, §8.24)


def following(ctx: Context, sightings: list[Event], trait: str, before: int = 0) -> list[Event]:
    """Events with `trait` printed at most `frame_lines` after a sighting (or `before` lines ahead
    of it), in the same task's stream, in timeline order.

    Only job logs have such streams: the next line of a kernel log is another process's.
    """
    span = ctx.pack.ordering.frame_lines
    heads = [s for s in sightings if s.source.startswith("logs/")]
    own = {(s.source, s.line_no) for s in heads}
    found = {
        id(ev): (place, ev)
        for s in heads
        for place, ev in ctx.in_stream(trait, s.source, s.task, s.line_no - before, s.line_no + span)
        if (ev.source, ev.line_no) not in own
    }
    return [ev for _, ev in sorted(found.values(), key=lambda p: p[0])]


class Consequences:
    """Which crash events sit in NCCL teardown."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.teardown_lines = {(e.source, e.line_no) for e in ctx.with_trait("teardown")}
        self.failures: dict[int, list[Event]] = {}
        for ev in ctx.with_trait("nccl_failure"):
            if ev.rank is not None:
                self.failures.setdefault(ev.rank, []).append(ev)

    def __call__(self, crash: Event) -> bool:
        if (crash.source, crash.line_no) in self.teardown_lines or following(self.ctx, [crash], "teardown"):
            return True
        rank = crash.rank if crash.rank is not None else self.ctx.ranks.rank_of_pid(crash.node, crash.fields.get("pid"))
        return rank is not None and self.last_failure_before(rank, crash) is not None

    def last_failure_before(self, rank: int, crash: Event) -> Event | None:
        """The rank's NCCL/IB failure shortly before the crash (within the pack's teardown_s)."""
        span = timedelta(seconds=self.ctx.pack.ordering.teardown_s)
        return next(
            (
                f
                for f in reversed(self.failures.get(rank, []))
                if self.ctx.order.precedes(f, crash) is True and self.ctx.order.near(f, crash, span)
            ),
            None,
        )


def collect_crash(ctx: Context, fault: Event) -> Crash:
    rank, node = fault.rank, fault.node

    def same_crash(e: Event) -> bool:
        if not ctx.has(e, "crash"):
            return False
        if rank is not None and e.rank is not None:
            return e.rank == rank
        if node and e.node and e.node != node:
            return False
        return ctx.order.coincide(e, fault, ctx.merge_span) and (
            node is None or e.node == node or e.source == fault.source
        )

    sightings = [e for e in ctx.events if e is fault or same_crash(e)]
    entry = _summary_entry(ctx, sightings)
    if entry is not None:  # torchrun's summary is the authority on the global rank and its host (§8.13)
        rank, node = entry.rank, entry.host or node
    else:
        rank = next((e.rank for e in sightings if e.rank is not None), None)
        if rank is None:
            rank = next(
                (r for e in sightings if (r := ctx.ranks.rank_of_pid(e.node, e.fields.get("pid"))) is not None), None
            )
        node = next((e.node for e in sightings if e.node), None) or ctx.ranks.node_of(rank)
    frames = following(ctx, sightings, "checkpoint_frame", before=FRAMES_BEFORE)
    save_start = next((s for e in _per_stream(sightings) if (s := open_save(ctx, e))), None)
    child = None
    if any(ctx.has(e, "dataloader_worker") for e in sightings):
        child = "dataloader_worker"
    elif any(ctx.has(f, "forked_writer") for f in [*frames, *sightings]):
        child = "forked_writer"
    return Crash(sightings, frames, save_start, rank, node, child)


MAX_STREAMS = 64  # streams whose sightings ask for an open save: one crash printed 10,000 times asks once


def _per_stream(sightings: list[Event]) -> list[Event]:
    """The first sighting in each file and srun task: a later one in the same stream sits right after
    it (the same crash, printed again) and finds the same save window."""
    first: dict[tuple[str, int | None, str | None], Event] = {}
    for e in sightings:
        first.setdefault((e.source, e.task, e.node), e)
        if len(first) >= MAX_STREAMS:
            break
    return list(first.values())


def _summary_entry(ctx: Context, sightings: list[Event]) -> TorchrunEntry | None:
    """The torchrun summary entry of this crash: by pid, by the agent's stream and local rank, or the only one.
    An entry is the crash's when its exit code names the signal the sightings name (`-7` for SIGBUS)."""
    named = {sig for s in sightings if (sig := signals.of_fields(s.fields))}
    crashed = [
        e
        for e in ctx.ranks.entries
        if (signals.name(str(e.code)) in named if named and e.code is not None else e.crashed)
    ]
    pids = {int(p) for s in sightings for k in ("pid", "spid") if (p := s.fields.get(k, "")).isdigit()}
    for entry in crashed:
        if entry.pid in pids:
            return entry
    for entry in crashed:
        for s in sightings:
            local = s.local_rank if s.local_rank is not None else s.field_int("local_rank")
            if s.source == entry.source and s.task == entry.task and local is not None and local == entry.local_rank:
                return entry
    nodes = {s.node for s in sightings if s.node}
    fitting = [e for e in crashed if not nodes or e.host in nodes]
    return fitting[0] if len(fitting) == 1 else None
