"""Each rank's terminal Python exception, as a fault event on the timeline (log-signatures §8.26).

A block (a traceback with its chained exceptions, or a logger's ERROR line) becomes an
`app_exception` event only when it ended its rank and is not a consequence:
- ended: it is the last block of its stream, the stream did not go on (no progress line, no test
  run's summary after it), and its rank's end says so: the stream's last lines, srun's exit line
  for its task, or torchrun's failure summary for its rank;
- not a consequence: the pack's `consequence` rules (a peer went away, SIGTERM, ChildFailedError)
  do not match its cause, no crash or other primary line is the same line (the crash decides),
  and torchrun's summary does not list its rank as one it stopped (exit code -15/-9): the
  summary witnesses which rank failed first.
The cause of a chain is its first exception. Its kind is the best `exception_kind` rule that
matches it (else the first of the chain that one matches; else `other`). Streams are capped, so
a log with any number of ranks and tracebacks costs bounded memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from slurm_hooks.bundle import Bundle, BundleFile
from slurm_hooks.diagnose.exception_place import Placer
from slurm_hooks.diagnose.ranks import RankMap
from slurm_hooks.rules import Rule, RulePack
from slurm_hooks.rules.pattern import any_of
from slurm_hooks.timeline.clocks import ClockContext
from slurm_hooks.timeline.events import Event
from slurm_hooks.timeline.hits import MatchMeter
from slurm_hooks.timeline.scan import Hit
from slurm_hooks.timeline.structured import event_stream
from slurm_hooks.timeline.tracebacks import Block, Raised, Start, read_blocks
from slurm_hooks.timeline.untimed import place_untimed

MIN_STREAMS = 4096  # streams followed per file, or STREAMS_PER_NODE a node when more: beyond, the latest ones
STREAMS_PER_NODE = 16  # a GPU node runs one rank a GPU (4 on GB200, 8 on H100/H200): twice that, and no more
LAST_STARTS = 4  # a stream's last traceback starts read: enough for a chain of that depth
TAIL_LINES = 20  # a rank that printed at most this many lines after its exception ended with it
MESSAGE_CHARS = 200
PLACED = 16  # a file's earliest exceptions placed between their neighbours' stamps (the rest keep their file's clock)
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|[\x00-\x1f\x7f-\x9f]")
_DIGITS = re.compile(r"\d+")


def clean(text: str, limit: int = MESSAGE_CHARS) -> str:
    """Log text fit to show: ANSI escapes and control bytes removed, cut at `limit` characters."""
    text = _CONTROL.sub("", text).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def terminal_exceptions(bundle: Bundle, events: list[Event], pack: RulePack, ranks: RankMap) -> list[Event]:
    """One `app_exception` event per rank whose terminal exception is genuine, `ranks` counting the same.

    Each rank may have a stream of its own, so the streams followed grow with the job's nodes: a
    job of 1,152 GB200 nodes (4,608 ranks) has all of them read. Not with Slurm's rank bound
    (512 a node): followed that far, a log's own tracebacks could cost a large job its budget.
    """
    grammar = next((r for r in pack.rules if r.source == "exception" and pack.has(r.family, "exception")), None)
    if grammar is None:  # a site that disabled the rule turns the label off
        return []
    finder = _Finder(bundle, events, pack, ranks, grammar, max(MIN_STREAMS, STREAMS_PER_NODE * len(ranks.nodes)))
    found = [ev for file in bundle.logs for ev in finder.file(file)]
    if finder.meter.off:  # an operator's slow rule costs its own family, never the diagnosis's budget
        bundle.skipped.append(
            f"exception rules of {', '.join(sorted(finder.meter.off))[:200]} took past their time budget: left off"
        )
    _count_same(found)
    return found


class _Finder:
    def __init__(
        self, bundle: Bundle, events: list[Event], pack: RulePack, ranks: RankMap, grammar: Rule, max_streams: int
    ) -> None:
        self.bundle, self.pack, self.ranks, self.grammar = bundle, pack, ranks, grammar
        self.max_streams = max_streams
        exception_rules = [r for r in pack.rules if r.source == "exception"]
        self.kinds = sorted(
            (r for r in exception_rules if pack.has(r.family, "exception_kind")), key=lambda r: -r.priority
        )
        self.consequences = [r for r in exception_rules if pack.has(r.family, "consequence")]
        self.meter = MatchMeter()  # kind and consequence rules are timed per family, like the scan's
        self.progress = any_of(pack.progress)  # asked of every line a rank printed after its traceback
        self.starts: dict[str, list[Event]] = {}
        for ev in events:
            if ev.source.startswith("logs/") and (
                pack.has(ev.family, "traceback") or pack.has(ev.family, "logged_exception")
            ):
                self.starts.setdefault(ev.source, []).append(ev)
        self.primary_lines = {(e.source, e.line_no) for e in events if e.role == "primary"}
        self.placer = Placer(ranks, [e for e in events if pack.has(e.family, "task_end") and "tasks" in e.fields])

    def file(self, file: BundleFile) -> list[Event]:
        rel = file.rel
        heads = self.starts.get(rel, [])
        if not heads:
            return []
        by_line = {e.line_no: e for e in heads}
        starts = self._starts(rel, heads)
        try:
            blocks = read_blocks(file, starts, self._parse, self._went_on, self.bundle.skipped, self._consequence)
        except OSError as exc:  # gone, or a link planted since the scan (refused, not followed)
            self.bundle.skipped.append(f"{rel}: tracebacks not read ({exc.strerror or exc})")
            return []
        found = [ev for b in blocks if (ev := self._event(rel, b, by_line.get(b.start_line))) is not None]
        self._place_untimed(file, found)
        return found

    def _place_untimed(self, file: BundleFile, found: list[Event]) -> None:
        """The earliest untimed ones between their neighbours' stamps; the others keep their traceback's clock.

        A traceback's lines carry no stamps, so finding its neighbours' reads up to 128 KiB: done for a
        few, it keeps a log where a thousand ranks print the same traceback cheap.
        """
        job = self.bundle.job
        ctx = ClockContext(reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone)
        untimed = sorted((e for e in found if e.time is None), key=lambda e: e.line_no)[:PLACED]
        carried = {id(e): (e.lo, e.hi) for e in untimed}
        for ev in untimed:
            ev.lo = ev.hi = None
        place_untimed(file, untimed, {e.line_no: Hit(e.line_no, e.offset, e.text) for e in untimed}, ctx, [])
        for ev in untimed:
            if ev.when is None:
                ev.lo, ev.hi = carried[id(ev)]

    def _starts(self, rel: str, heads: list[Event]) -> list[Start]:
        per_stream: dict[tuple[int | None, int | None, int | None], list[Event]] = {}
        for ev in heads:
            per_stream.setdefault(event_stream(ev), []).append(ev)
        if len(per_stream) > self.max_streams:
            self.bundle.skipped.append(f"{rel}: tracebacks of {len(per_stream) - self.max_streams} streams not read")
            latest = sorted(per_stream, key=lambda s: per_stream[s][-1].line_no)[-self.max_streams :]
            per_stream = {s: per_stream[s] for s in latest}
        return [
            Start(ev.line_no, ev.offset, stream, self._logged(ev))
            for stream, evs in per_stream.items()
            for ev in evs[-LAST_STARTS:]
        ]

    def _logged(self, ev: Event) -> Raised | None:
        if not self.pack.has(ev.family, "logged_exception"):
            return None
        exc_type, msg = ev.fields.get("exc_type", ""), ev.fields.get("msg", "")
        return Raised(exc_type, msg, None, ev.line_no, ev.offset, f"{exc_type}: {msg}")

    def _parse(self, text: str) -> tuple[str, str] | None:
        fields = self.grammar.search(text)
        return (fields["exc_type"], fields.get("msg", "")) if fields and "exc_type" in fields else None

    def _went_on(self, body: str) -> bool:
        return self.progress(body)

    def _consequence(self, text: str) -> bool:
        """An exception the pack calls another's consequence (a peer went away, a child failed)."""
        return any(_has_keyword(r, text) and self.meter.matches([r], text) for r in self.consequences)

    def _event(self, rel: str, block: Block, head: Event | None) -> Event | None:
        cause = block.chain[0]
        text = f"{cause.exc_type}: {cause.message}" if cause.message else cause.exc_type
        if block.went_on or any((rel, r.line_no) in self.primary_lines for r in block.chain):
            return None
        if self._consequence(text):
            return None
        task, local_rank, _ = block.stream
        rank, node, ended = self.placer.place(rel, block)
        if not (block.lines_after <= TAIL_LINES or ended) or rank in self.placer.stopped:
            return None
        kind, node_fault, path = self._kind(block.chain)
        fields = {
            "exc_type": clean(cause.exc_type, 120),
            "msg": clean(cause.message),
            "frame": clean(cause.frame or "", 120),
            "kind": kind,
            "node_fault": "1" if node_fault else "",
            "path": clean(path, 160),
        }
        return Event(
            rule=self.grammar,
            source=rel,
            line_no=cause.line_no,
            text=clean(cause.text, 400),
            task=task,
            rank=rank,
            node=node,
            time=head.time if head else None,
            fields={k: v for k, v in fields.items() if v},
            local_rank=local_rank,
            offset=cause.offset,
            lo=head.lo if head else None,
            hi=head.hi if head else None,
        )

    def _kind(self, chain: Iterable[Raised]) -> tuple[str, bool, str]:
        for raised in chain:
            text = f"{raised.exc_type}: {raised.message}"
            for rule in self.kinds:
                if not _has_keyword(rule, text):
                    continue
                for _, fields in self.meter.matches([rule], text):
                    if fields.get("kind"):
                        return fields["kind"], self.pack.has(rule.family, "node_fault"), fields.get("path", "")
        return "other", False, ""


def _has_keyword(rule: Rule, text: str) -> bool:
    return any(k in text for k in rule.keywords)


def _count_same(found: list[Event]) -> None:
    """`ranks`: how many ranks raised the same exception (a data or config bug every rank hits).

    A sighting without a rank (unlabelled output) counts only where no ranked sighting of the
    same exception came from its srun task (torchrun's summary names the rank its workers' lines did not).
    """
    groups: dict[tuple[str, str], list[Event]] = {}
    for ev in found:
        groups.setdefault(_same_key(ev), []).append(ev)
    for same in groups.values():
        ranked = {e.rank for e in same if e.rank is not None}
        tasks = {(e.source, e.task) for e in same if e.rank is not None}
        unranked = {
            (e.source, e.task, e.local_rank) for e in same if e.rank is None and (e.source, e.task) not in tasks
        }
        for ev in same:
            ev.fields["ranks"] = str(len(ranked) + len(unranked))


def _same_key(ev: Event) -> tuple[str, str]:
    return ev.fields.get("exc_type", ""), _DIGITS.sub("#", ev.fields.get("msg", ""))[:120]
