"""What every stage reads: the bundle, its events with ranks and nodes resolved, and the pack's vocabulary.

Built once, in the order of a job's world (diagnose/world.py): its runs (only the last one's events
go on), then its steps, then the tasks and ranks of each step completed from Slurm's counts, then the
events placed in them.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from slurm_hooks.bundle import Bundle
from slurm_hooks.diagnose.bounds import drop_out_of_job, job_ranks
from slurm_hooks.diagnose.exceptions import terminal_exceptions
from slurm_hooks.diagnose.order import Order
from slurm_hooks.diagnose.ranks import RankMap, build_rank_map
from slurm_hooks.diagnose.skew import correct, node_offsets
from slurm_hooks.diagnose.slurm_state import disputed
from slurm_hooks.diagnose.witness import weak_witnesses
from slurm_hooks.diagnose.world import World
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event, Timeline


@dataclass
class Context:
    bundle: Bundle
    events: list[Event]
    pack: RulePack
    order: Order
    ranks: RankMap
    # ids of events that are never a fault on their own: kernel events another job may have caused
    # (witness.py), Slurm's words that its accounting contradicts (slurm_state.py, listed in `disputed`)
    weak: frozenset[int] = frozenset()
    disputed: list[Event] = field(default_factory=list)
    offsets: dict[str, timedelta] = field(default_factory=dict)  # nodes whose clocks run off the first's (§8.22)
    world: World | None = None  # the job's runs and steps (§8.29, §8.33)
    # Found once a trait: the stages ask per crash and per sighting, and a job whose every rank crashed
    # has thousands of those (a walk through all events each would make the diagnosis quadratic).
    _traits: dict[str, list[Event]] = field(default_factory=dict, repr=False)
    _streams: dict[str, dict[tuple[str, int | None], list[tuple[int, Event]]]] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, bundle: Bundle, timeline: Timeline, pack: RulePack) -> Context:
        nodes = bundle.job.nodes or _nodes_seen(bundle)
        bound = job_ranks(bundle.job, nodes, timeline.events)
        drop_out_of_job(timeline.events, bound, timeline.notes)
        world = World.of(bundle, timeline.events, pack)
        timeline.notes.extend(world.notes())
        current = world.runs.last
        tasks = world.slurm_tasks(current)
        ranks = build_rank_map(current, nodes, pack, bound, world.steps, tasks)
        if ranks.claimed_world > bound:
            timeline.notes.append(
                f"a log claims a world of {ranks.claimed_world} ranks, past the {bound} this job can have: "
                f"taken as {bound} (§8.25)"
            )
        outside = {id(e) for e in ranks.outside}
        timeline.notes.extend(
            f"{e.source}: line {e.line_no}: {e.fields['named_node']!r} is not a node of this job; not taken as evidence"
            for e in ranks.outside
        )
        events = [e for e in current if id(e) not in outside]
        offsets = node_offsets(events, pack, ranks.nodes)
        events = correct(events, offsets)
        events = _on_timeline(events, terminal_exceptions(bundle, events, pack, ranks))
        weak = weak_witnesses(bundle.job, events, ranks)
        unvouched = disputed(bundle.job, events, pack)
        weak = weak.union(id(e) for e in unvouched)
        order = Order(pack.ordering.simultaneous_s)
        return cls(bundle, events, pack, order, ranks, weak, unvouched, offsets, world)

    def has(self, ev: Event, trait: str) -> bool:
        return self.pack.has(ev.family, trait)

    def is_primary(self, ev: Event) -> bool:
        if self.has(ev, "xid"):  # one rule for every Xid; its number decides (the pack's `xid:`)
            xid = ev.field_int("xid")
            return xid is not None and self.pack.xid.is_fatal(xid, self.pack.xid_known)
        return ev.role == "primary" and id(ev) not in self.weak

    def is_symptom(self, ev: Event) -> bool:
        return ev.role == "symptom" or (self.has(ev, "xid") and not self.is_primary(ev))

    def label_of(self, ev: Event) -> str:
        family = self.pack.families.get(ev.family)
        return family.label if family and family.label else "unknown"

    def with_trait(self, trait: str) -> list[Event]:
        """The events with `trait`, in timeline order (shared: not to be changed)."""
        if (found := self._traits.get(trait)) is None:
            found = self._traits[trait] = [e for e in self.events if self.has(e, trait)]
        return found

    def with_any(self, *traits: str) -> list[Event]:
        """The events with any of `traits`, in timeline order, found once."""
        key = "|".join(traits)
        if (found := self._traits.get(key)) is None:
            found = self._traits[key] = [e for e in self.events if any(self.has(e, t) for t in traits)]
        return found

    def in_stream(self, trait: str, source: str, task: int | None, first: int, last: int) -> list[tuple[int, Event]]:
        """(place in the timeline, event) of the events with `trait` on lines first..last of `source`
        printed by srun task `task`."""
        if (streams := self._streams.get(trait)) is None:
            streams = self._streams[trait] = {}
            for place, ev in sorted(enumerate(self.with_trait(trait)), key=_line_no):
                streams.setdefault((ev.source, ev.task), []).append((place, ev))
        found = streams.get((source, task), [])
        return found[bisect_left(found, first, key=_line_no) : bisect_right(found, last, key=_line_no)]

    @property
    def merge_span(self) -> timedelta:
        return timedelta(seconds=self.pack.ordering.crash_merge_s)


def _line_no(placed: tuple[int, Event]) -> int:
    return placed[1].line_no


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
