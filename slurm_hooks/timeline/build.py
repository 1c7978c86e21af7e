"""A bundle's job logs and kernel lines -> one Timeline: each file scanned for the rule pack's
keywords, every hit matched and stamped, untimed lines placed between their neighbours
(untimed.py), then every event in time order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import Any

from slurm_hooks.bundle import Bundle, BundleFile
from slurm_hooks.core.forked import cpus, run_side_by_side
from slurm_hooks.core.times import parse_iso, zone_named
from slurm_hooks.rules import Rule, RulePack
from slurm_hooks.timeline.clocks import ClockContext, kernel_time, log_time
from slurm_hooks.timeline.events import Event, Timeline
from slurm_hooks.timeline.hits import UNEXAMINED, FamilyCap, KeywordIndex, MatchMeter, Span, capped_hits, log_cap
from slurm_hooks.timeline.hosts import NodeNames
from slurm_hooks.timeline.noise import printable, segments, strip_ansi
from slurm_hooks.timeline.prefixes import Prefixed, inherit, strip_prefixes
from slurm_hooks.timeline.scan import Hit, Scanner
from slurm_hooks.timeline.shares import LogRange, Parallel, Share, plan_shares
from slurm_hooks.timeline.structured import Line, Record, decode, fragment, record_lines, widened
from slurm_hooks.timeline.untimed import place_untimed

TEXT_CHARS = 400


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


@dataclass
class LogPart:
    """One range of a job log scanned: each line some family examined, with its events, in file order.
    Line numbers count from the range's start; merging numbers them in the file."""

    source: str
    start: int
    lines: int  # lines in the range (to number the next range's), when a range follows
    examined: list[tuple[frozenset[str], list[Event]]]
    cut: Counter[str]  # lines the range's own cap cut (the merged cap cuts at least those)
    said: list[str]


@dataclass(frozen=True)
class _Scan:
    """What the scan of each of a bundle's files needs, built once a bundle."""

    pack: RulePack
    scanner: Scanner
    ctx: ClockContext
    cap: int  # limits.hits_per_family: a kernel log's, one node's
    log_cap: tuple[int, str]  # a job log's, which grows with the job (hits.log_cap), and why
    hosts: Callable[[str], str | None] | None  # a launcher prefix's host -> the job's node; None: no node list
    window: tuple[datetime, datetime] | None  # kernel lines outside it are another job's
    logs: KeywordIndex
    kernels: KeywordIndex


def _scan_log_range(scan: _Scan, part: LogRange, meter: MatchMeter) -> LogPart:
    file, source, pack = part.file, part.file.rel, scan.pack
    family_cap = FamilyCap(scan.logs, *scan.log_cap, meter=meter)
    examined: list[tuple[frozenset[str], list[Event]]] = []
    said: list[str] = []
    span = Span(0, part.start, part.stop)
    for hit, rules in capped_hits(file, scan.scanner, scan.logs.keywords, family_cap, said, span):
        events: list[Event] = []
        first: Prefixed | None = None
        record: Record | None = None  # the line's JSON or logfmt record (§8.35), for its `\r` tail too
        text = printable(hit.text[: TEXT_CHARS * 4])[:TEXT_CHARS]
        for segment in (parts := segments(hit.text)):  # each `\r` part of a progress-bar line on its own (§8.24)
            pre = strip_prefixes(segment, pack.launchers, scan.hosts)
            if first is None:
                first, record = pre, decode(pre.body)
                if record is not None and record.cut and len(parts) > 1:  # a long record's tail: its rank too
                    record = widened(record, parts[-1])
                found = record
            else:
                pre = inherit(pre, first)
                found = fragment(pre.body, record) if record else None
            read = (
                [Line(pre, text)]
                if found is None
                else record_lines(segment, pre, found, scan.ctx, pack.launchers, scan.hosts, TEXT_CHARS)
            )
            for line in read:
                matches = meter.matches(rules, line.pre.body)
                if line.shadow is not None:  # the level before the first line, as a plain logger prints it
                    matched = {id(r) for r, _ in matches}
                    matches += meter.matches([r for r in rules if id(r) not in matched], line.shadow)
                if not matches:
                    continue
                stamp = log_time(line.pre.body, scan.ctx) or line.time
                for rule, fields in matches:
                    rank = _int(fields.get("rank"))
                    events.append(
                        Event(
                            rule=rule,
                            source=source,
                            line_no=hit.line_no,
                            text=line.text,
                            task=line.pre.task,
                            local_rank=line.pre.local_rank,
                            offset=hit.offset,
                            rank=rank if rank is not None else line.pre.rank,
                            node=fields.get("node") or fields.get("host") or line.pre.host,
                            time=stamp,
                            fields={k: printable(v) for k, v in fields.items()} | line.fields,
                        )
                    )
        examined.append((frozenset(r.family for r in rules), events))
    lines = _lines_in(file, part.start, part.stop) if part.stop is not None else 0
    return LogPart(source, part.start, lines, examined, family_cap.cut, said + family_cap.slow_notes())


def _lines_in(file: BundleFile, start: int, stop: int) -> int:
    """Lines in bytes [start, stop) of a file whose ranges end at a line's start."""
    count = 0
    with file.open() as fh:
        fh.seek(start)
        while (left := stop - fh.tell()) > 0 and (chunk := fh.read(min(left, 1 << 20))):
            count += chunk.count(b"\n")
    return count


def _merge_log(
    file: BundleFile, parts: list[LogPart], cap: tuple[int, str], ctx: ClockContext, notes: list[str]
) -> list[Event]:
    """A log's ranges in file order, numbered in the file, its family cap applied over them all as one
    scan would have; then its untimed lines placed."""
    family_cap = FamilyCap(None, *cap)
    events: list[Event] = []
    before = 0
    for part in sorted(parts, key=lambda p: p.start):
        for families, found in part.examined:
            spent = family_cap.admit(families)
            for ev in found:
                ev.line_no += before
                if ev.family not in spent:
                    events.append(ev)
        family_cap.cut.update(part.cut)
        before += part.lines
        notes += [f"{file.rel}: {n}" for n in part.said]
    notes += family_cap.notes(file.rel)
    place_untimed(file, events, {e.line_no: Hit(e.line_no, e.offset, e.text) for e in events}, ctx, notes)
    return events


def _scan_kernel(
    scan: _Scan, node: str, file: BundleFile, ctx: ClockContext, notes: list[str], meter: MatchMeter
) -> list[Event]:
    source, window = file.rel, scan.window
    family_cap = FamilyCap(scan.kernels, scan.cap, meter=meter)
    events: list[Event] = []
    untimed = outside = 0
    said: list[str] = []
    for hit, rules in capped_hits(file, scan.scanner, scan.kernels.keywords, family_cap, said):
        stamp, message = kernel_time(strip_ansi(hit.text), ctx)
        matches = meter.matches(rules, message)
        if not matches:
            continue
        if stamp is None:
            untimed += 1
            continue
        if window and not window[0] <= stamp <= window[1]:
            outside += 1
            continue
        for rule, fields in matches:
            events.append(
                Event(
                    rule=rule,
                    source=source,
                    line_no=hit.line_no,
                    text=printable(hit.text[: TEXT_CHARS * 4])[:TEXT_CHARS],
                    task=None,
                    rank=None,
                    node=node,
                    time=stamp,
                    fields=fields,
                    offset=hit.offset,
                )
            )
    notes += [f"{source}: {n}" for n in said] + family_cap.notes(source)
    if untimed:
        notes.append(f"{source}: {untimed} matching lines without a usable time (no boot_time for raw dmesg?)")
    if outside:
        notes.append(f"{source}: {outside} matching lines outside the job's time window ignored")
    return events


def _node_context(bundle: Bundle, node: str, base: ClockContext) -> ClockContext:
    facts = bundle.facts.get(node)
    zone = zone_named(facts and facts.timezone, f"nodes/{node}.json: timezone", bundle.skipped)
    return ClockContext(
        reference=base.reference,
        log_zone=base.log_zone,
        slurm_zone=base.slurm_zone,
        node_zone=zone,
        boot_time=parse_iso(facts and facts.boot_time),
    )


@dataclass
class ShareScanned:
    logs: list[LogPart]
    kernels: list[tuple[list[Event], list[str]]]  # each node's events and notes, in the share's order


Row = tuple[Any, ...]


class _Wire:
    """A share's events as rows of plain values, their rule by its place in the pack, and back."""

    def __init__(self, rules: Sequence[Rule]) -> None:
        self.rules = rules
        self.places = {id(rule): i for i, rule in enumerate(rules)}

    def _rows(self, events: list[Event]) -> list[Row]:  # Event's own field order, as _events reads them
        return [
            (
                self.places[id(e.rule)],
                e.source,
                e.line_no,
                e.text,
                e.task,
                e.rank,
                e.node,
                e.time,
                e.fields,
                e.local_rank,
                e.offset,
                e.lo,
                e.hi,
            )
            for e in events
        ]

    def _events(self, rows: list[Row]) -> list[Event]:
        rules = self.rules
        return [Event(rules[r[0]], *r[1:]) for r in rows]

    def send(self, done: ShareScanned) -> object:
        logs = [
            (p.source, p.start, p.lines, [(f, self._rows(evs)) for f, evs in p.examined], dict(p.cut), p.said)
            for p in done.logs
        ]
        return logs, [(self._rows(evs), said) for evs, said in done.kernels]

    def receive(self, sent: Any) -> ShareScanned:
        logs, kernels = sent
        return ShareScanned(
            [
                LogPart(source, start, lines, [(f, self._events(rows)) for f, rows in examined], Counter(cut), said)
                for source, start, lines, examined, cut, said in logs
            ],
            [(self._events(rows), said) for rows, said in kernels],
        )


def build_timeline(bundle: Bundle, pack: RulePack, scanner: Scanner, parallel: Parallel | None = None) -> Timeline:
    """`parallel`: how many processes may scan (default: one a CPU, from a bundle of PARALLEL_BYTES)."""
    job = bundle.job
    notes = bundle.skipped
    notes.extend(n for n in pack.skipped if n not in notes)
    scanned_from = len(notes)  # the notes the scan adds from here
    ctx = ClockContext(
        reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone, node_zone=timezone.utc
    )
    margin = timedelta(seconds=pack.ordering.window_margin_s)
    window = (job.start - margin, job.end + margin) if job.start and job.end else None
    names = NodeNames(job.nodes)
    scan = _Scan(
        pack,
        scanner,
        ctx,
        bundle.limits.hits_per_family,
        log_cap(bundle.limits.hits_per_family, len(job.nodes)),
        names.canonical if names.nodes else None,
        window,
        KeywordIndex([r for r in pack.rules if r.applies_to("log")]),
        KeywordIndex([r for r in pack.rules if r.applies_to("kernel")]),
    )
    node_ctx = {node: _node_context(bundle, node, ctx) for node in sorted(bundle.kernels)}  # its notes said here

    def scan_share(share: Share) -> ShareScanned:
        meter = MatchMeter()  # one a share: the time a family may take is the share's, whatever its files
        logs = [_scan_log_range(scan, part, meter) for part in share.logs]
        kernels = []
        for node in share.kernels:
            said: list[str] = []
            kernels.append((_scan_kernel(scan, node, bundle.kernels[node], node_ctx[node], said, meter), said))
        return ShareScanned(logs, kernels)

    shares = plan_shares(bundle, parallel or Parallel(cpus()))
    wire = _Wire(pack.rules)
    scanned = run_side_by_side([partial(scan_share, share) for share in shares], wire.send, wire.receive, notes)
    parts: dict[str, list[LogPart]] = {}
    for done in scanned:
        for part in done.logs:
            parts.setdefault(part.source, []).append(part)
    events: list[Event] = []
    for file in bundle.logs:
        events += _merge_log(file, parts.get(file.rel, []), scan.log_cap, ctx, notes)
    for done in scanned:  # the shares hold the nodes in order
        for found, said in done.kernels:
            events += found
            notes += said

    sources = {s: i for i, s in enumerate(dict.fromkeys(ev.source for ev in events))}
    floor = datetime.min.replace(tzinfo=timezone.utc)
    events.sort(key=lambda e: (e.when or floor, sources[e.source], e.line_no))
    unexamined = [n for n in notes[scanned_from:] if UNEXAMINED in n]
    return Timeline(events=events, notes=notes, unexamined=unexamined)
