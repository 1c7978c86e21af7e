"""A bundle's job logs and kernel lines -> one Timeline: each file scanned for the rule pack's
keywords, every hit matched and stamped, untimed lines placed between their neighbours
(untimed.py), then every event in time order."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from slurm_hooks.bundle import Bundle, BundleFile
from slurm_hooks.core.times import parse_iso, zone_named
from slurm_hooks.rules import Rule, RulePack
from slurm_hooks.timeline.clocks import ClockContext, kernel_time, log_time
from slurm_hooks.timeline.events import Event, Timeline
from slurm_hooks.timeline.hits import FamilyCap, capped_hits
from slurm_hooks.timeline.hosts import NodeNames
from slurm_hooks.timeline.noise import printable, segments, strip_ansi
from slurm_hooks.timeline.prefixes import Prefixed, inherit, strip_prefixes
from slurm_hooks.timeline.scan import Hit, Scanner
from slurm_hooks.timeline.untimed import place_untimed

TEXT_CHARS = 400


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.isdigit() else None


def _matches(rules: list[Rule], body: str) -> list[tuple[Rule, dict[str, str]]]:
    return [(rule, fields) for rule in rules if (fields := rule.search(body)) is not None]


def _scan_log(
    file: BundleFile,
    pack: RulePack,
    scanner: Scanner,
    ctx: ClockContext,
    cap: int,
    notes: list[str],
    names: NodeNames | None = None,
) -> list[Event]:
    source = file.rel
    family_cap = FamilyCap([r for r in pack.rules if r.applies_to("log")], cap)
    events: list[Event] = []
    hits: dict[int, Hit] = {}
    said: list[str] = []
    hosts = names.canonical if names is not None and names.nodes else None  # no node list: no host prefix
    for hit, rules in capped_hits(file, scanner, pack.keywords("log"), family_cap, said):
        first: Prefixed | None = None
        text = printable(hit.text[: TEXT_CHARS * 4])[:TEXT_CHARS]
        for segment in segments(hit.text):  # each `\r` part of a progress-bar line on its own (§8.24)
            pre = strip_prefixes(segment, pack.launchers, hosts)
            if first is None:
                first = pre
            else:
                pre = inherit(pre, first)
            matches = _matches(rules, pre.body)
            if not matches:
                continue
            stamp = log_time(pre.body, ctx)
            for rule, fields in matches:
                rank = _int(fields.get("rank"))
                events.append(
                    Event(
                        rule=rule,
                        source=source,
                        line_no=hit.line_no,
                        text=text,
                        task=pre.task,
                        local_rank=pre.local_rank,
                        offset=hit.offset,
                        rank=rank if rank is not None else pre.rank,
                        node=fields.get("node") or fields.get("host") or pre.host,
                        time=stamp,
                        fields={k: printable(v) for k, v in fields.items()},
                    )
                )
                hits[hit.line_no] = hit
    notes += [f"{source}: {n}" for n in said] + family_cap.notes(source)
    place_untimed(file, events, hits, ctx, notes)
    return events


def _scan_kernel(
    node: str,
    file: BundleFile,
    kernel_rules: list[Rule],
    keywords: list[str],
    scanner: Scanner,
    ctx: ClockContext,
    window: tuple[datetime, datetime] | None,
    cap: int,
    notes: list[str],
) -> list[Event]:
    source = file.rel
    family_cap = FamilyCap(kernel_rules, cap)
    events: list[Event] = []
    untimed = outside = 0
    said: list[str] = []
    for hit, rules in capped_hits(file, scanner, keywords, family_cap, said):
        stamp, message = kernel_time(strip_ansi(hit.text), ctx)
        matches = _matches(rules, message)
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


def build_timeline(bundle: Bundle, pack: RulePack, scanner: Scanner) -> Timeline:
    job = bundle.job
    notes = bundle.skipped
    notes.extend(n for n in pack.skipped if n not in notes)
    ctx = ClockContext(
        reference=job.start or job.end, log_zone=job.log_zone, slurm_zone=job.slurm_zone, node_zone=timezone.utc
    )
    margin = timedelta(seconds=pack.ordering.window_margin_s)
    window = (job.start - margin, job.end + margin) if job.start and job.end else None

    events: list[Event] = []
    cap = bundle.limits.hits_per_family
    names = NodeNames(job.nodes)
    for file in bundle.logs:
        events += _scan_log(file, pack, scanner, ctx, cap, notes, names)
    kernel_rules, keywords = [r for r in pack.rules if r.applies_to("kernel")], pack.keywords("kernel")  # once a bundle
    for node, file in sorted(bundle.kernels.items()):
        events += _scan_kernel(
            node, file, kernel_rules, keywords, scanner, _node_context(bundle, node, ctx), window, cap, notes
        )

    sources = {s: i for i, s in enumerate(dict.fromkeys(ev.source for ev in events))}
    floor = datetime.min.replace(tzinfo=timezone.utc)
    events.sort(key=lambda e: (e.when or floor, sources[e.source], e.line_no))
    return Timeline(events=events, notes=notes)
