"""What every stage reads: the bundle, its events with ranks and nodes resolved, and the pack's vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from slurm_hooks.bundle import Bundle
from slurm_hooks.diagnose.exceptions import terminal_exceptions
from slurm_hooks.diagnose.order import Order
from slurm_hooks.diagnose.ranks import RankMap, build_rank_map
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event, Timeline


@dataclass
class Context:
    bundle: Bundle
    events: list[Event]
    pack: RulePack
    order: Order
    ranks: RankMap

    @classmethod
    def of(cls, bundle: Bundle, timeline: Timeline, pack: RulePack) -> Context:
        ranks = build_rank_map(timeline.events, bundle.job.nodes or _nodes_seen(bundle), pack)
        events = _on_timeline(timeline.events, terminal_exceptions(bundle, timeline.events, pack, ranks))
        return cls(bundle, events, pack, Order(pack.ordering.simultaneous_s), ranks)

    def has(self, ev: Event, trait: str) -> bool:
        return self.pack.has(ev.family, trait)

    def is_primary(self, ev: Event) -> bool:
        if self.has(ev, "xid"):  # one rule for every Xid; its number decides (the pack's `xid:`)
            xid = ev.field_int("xid")
            return xid is not None and self.pack.xid.is_fatal(xid, self.pack.xid_known)
        return ev.role == "primary"

    def is_symptom(self, ev: Event) -> bool:
        return ev.role == "symptom" or (self.has(ev, "xid") and not self.is_primary(ev))

    def label_of(self, ev: Event) -> str:
        family = self.pack.families.get(ev.family)
        return family.label if family and family.label else "unknown"

    def with_trait(self, trait: str) -> list[Event]:
        return [e for e in self.events if self.has(e, trait)]

    @property
    def merge_span(self) -> timedelta:
        return timedelta(seconds=self.pack.ordering.crash_merge_s)


def _on_timeline(events: list[Event], raised: list[Event]) -> list[Event]:
    """The terminal exceptions sorted in, in the timeline's own order (time, file, line)."""
    if not raised:
        return events
    sources = {s: i for i, s in enumerate(dict.fromkeys(ev.source for ev in [*events, *raised]))}
    floor = datetime.min.replace(tzinfo=timezone.utc)
    return sorted([*events, *raised], key=lambda e: (e.when or floor, sources[e.source], e.line_no))


def _nodes_seen(bundle: Bundle) -> tuple[str, ...]:
    """Without Slurm's node list: the nodes the bundle has parts from."""
    return tuple(sorted(set(bundle.facts) | set(bundle.kernels)))
