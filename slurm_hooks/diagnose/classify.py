"""Timeline + node facts -> Diagnosis, in the order of log-signatures §8.

1. A job Slurm reports COMPLETED 0:0 succeeded, whatever its logs say, unless its launcher or
   runtime proves a task crashed (a wrapper swallowed it, §8.21): then the crash decides, and
   `details.masked_by_exit` says Slurm saw success. srun's report of a task's death is not such
   proof (a failed step raises the derived exit code Slurm recorded as 0): it is `details.survived`.
2. Primary events (crashes, fatal Xids, OOM kills, link failures, Slurm ending the job) before
   the first symptom's report are the candidates; crashes in NCCL teardown are consequences.
   Of faults the clocks cannot order, the earliest estimate wins; the others are listed under
   `details.concurrent`; an unstamped fault only the job's text shows never outranks one a node's
   kernel logged (§8.28). A node's death outranks the link errors it causes (§8.5).
3. A crash is a checkpoint crash inside a save window or with writer frames on its stack, never
   when a DataLoader worker crashed; CDMM comes from the crashed node's own facts.
4. Otherwise the first symptom decides; otherwise Slurm's state and exit code.
5. A single-node job's root node is that node whenever the label has a root.
6. How sure it is, and a node verdict's root only on a witness the user cannot write (confidence.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone

from slurm_hooks.bundle import Bundle
from slurm_hooks.bundle.nodefacts import NodeFacts
from slurm_hooks.diagnose import wording
from slurm_hooks.diagnose.bounds import job_node
from slurm_hooks.diagnose.confidence import settle
from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.crash import Consequences, Crash, collect_crash, following
from slurm_hooks.diagnose.notes import summarise
from slurm_hooks.diagnose.raised import exception_verdict
from slurm_hooks.diagnose.recorder import apply_flight
from slurm_hooks.diagnose.result import Diagnosis, event_record, fault_record, iso
from slurm_hooks.diagnose.slurm_state import disagreement
from slurm_hooks.diagnose.survived import Survival
from slurm_hooks.diagnose.trust import contradicted, ended_clean, is_kernel
from slurm_hooks.diagnose.verdict import (
    Verdict,
    crash_verdict,
    hardware_verdict,
    seen,
    silent_ranks,
    state_verdict,
    symptom_verdict,
)
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event, Timeline

# Slurm ended the job, or no node is to blame: no root (DESIGN.md).
_NO_ROOT = {"success", "unknown", "cancelled", "time_limit", "preempted"}
# A process died or raised: the root is a rank (a link, a node's death, a GPU are not one process's)
_PROCESS_LABELS = {"app_segfault", "checkpoint_segfault", "cdmm_checkpoint_segfault", "app_exception", "oom_killed"}
MAX_EVIDENCE = 25
MAX_SURVIVED = 8
_FLOOR = datetime.min.replace(tzinfo=timezone.utc)


def classify(bundle: Bundle, timeline: Timeline, pack: RulePack) -> Diagnosis:
    ctx = Context.of(bundle, timeline, pack)
    job = bundle.job
    primaries = [e for e in ctx.events if ctx.is_primary(e)]
    symptoms = [e for e in ctx.events if ctx.is_symptom(e)]
    masked = ended_clean(job)
    if masked:
        ignored = len(primaries) + len(symptoms)
        survived = [e for e in primaries if not _proven(ctx, e)]
        primaries = [e for e in primaries if _proven(ctx, e)]
        if not primaries:
            details: dict[str, object] = {"ignored_events": ignored}
            if survived:  # faults it printed and Slurm's record says it lived through (§8.28)
                details["survived"] = [fault_record(e) for e in survived[:MAX_SURVIVED]]
            verdict = Verdict("completed", "success", None, None, None, [], details=details)
            return _assemble(ctx, timeline, verdict, [])

    # A fault the job went on after (its progress, §8.30) did not end it: listed, never the root.
    lived = Survival(ctx)
    primaries, survived_faults = lived.split(primaries)
    symptoms, survived_symptoms = lived.split(symptoms)
    # The first timeout report bounds the candidates (§8.2, §8.36), not any earlier symptom. Without
    # one: not a survivor's word that its peer went away (the peer's fault is its cause), nor an Xid
    # that is not fatal (it travels with a rank's own error, which decides).
    bounding = [e for e in symptoms if ctx.has(e, "watchdog")] or [
        e for e in symptoms if not ctx.has(e, "peer_lost") and not ctx.has(e, "xid")
    ]
    first_symptom = bounding[0] if bounding else None
    fault, concurrent = _first_fault(ctx, primaries, first_symptom)
    after = seen(ctx, symptoms[0] if symptoms else None)
    if fault is not None and ctx.has(fault, "crash"):
        crash = collect_crash(ctx, fault)
        if crash.rank is None:
            _parent_by_silence(ctx, crash, symptoms)
        verdict = crash_verdict(fault, crash, _cdmm(ctx, crash.node), after)
    elif fault is not None and ctx.has(fault, "exception"):
        verdict = exception_verdict(ctx, fault, after)
    elif fault is not None:
        verdict = hardware_verdict(ctx, fault, after)
    elif after is not None:
        verdict = symptom_verdict(ctx, after, symptoms)
    else:
        verdict = state_verdict(job)
    if masked and fault is not None:
        verdict.details["masked_by_exit"] = {"state": job.state, "exit_code": job.exit_code}
    if survived_faults or survived_symptoms:
        firsts: dict[str, Event] = {}
        for e in survived_symptoms:  # a symptom family's first: one rank's report of it stands for all
            firsts.setdefault(e.family, e)
        listed = [fault_record(e) for e in [*survived_faults, *firsts.values()][:MAX_SURVIVED]]
        verdict.details["survived"] = [*verdict.details.get("survived", []), *listed][:MAX_SURVIVED]
    return _assemble(ctx, timeline, verdict, concurrent)


def _proven(ctx: Context, ev: Event) -> bool:
    """A crash its launcher or runtime proves (§8.21): srun, a shell or torchrun says so, on a node of
    the job, or faulthandler's header is followed by its stack. Words alone prove nothing."""
    if not ctx.has(ev, "crash") or ("node" in ev.fields and ev.node is None) or contradicted(ctx.bundle.job, ev):
        return False  # srun's word that a task died, where Slurm records every step 0:0, proves nothing
    return ctx.has(ev, "proven_crash") or bool(following(ctx, [ev], "crash_stack"))


def _first_fault(ctx: Context, primaries: list[Event], first_symptom: Event | None) -> tuple[Event | None, list[Event]]:
    """The first genuine primary, and the genuine ones the clocks cannot separate from it."""
    consequence = Consequences(ctx)
    death = next((e for e in primaries if ctx.has(e, "node_death")), None)
    # A crash is a consequence when any sighting of it is (the kernel line names the watchdog thread,
    # the srun line names nothing): judge each crash with all its sightings.
    teardown = {
        id(e)
        for f in _faults(ctx, [p for p in primaries if ctx.has(p, "crash")])
        if any(consequence(e) for e in f)
        for e in f
    }

    def counts(p: Event) -> bool:
        if id(p) in teardown:
            return False
        if first_symptom is None or _same_line(p, first_symptom):  # `RuntimeError: CUDA error: ...` is both
            return True
        before = ctx.order.precedes(p, first_symptom)
        if before is False and _names_cause(ctx, first_symptom, p):
            return True  # a consequence naming its cause comes after it, whatever the stamps say (§8.22)
        if before is None:  # a crash right at a watchdog report is its teardown (SIGABRT handlers)
            return not (ctx.has(p, "crash") and ctx.has(first_symptom, "watchdog"))
        return before

    candidates = [p for p in primaries if counts(p)]
    if not candidates:
        return death, []
    group = [candidates[0], *[c for c in candidates[1:] if ctx.order.precedes(candidates[0], c) is None]]
    faults = _faults(ctx, group)
    # A fault only the job's text shows, with no time stamp, does not outrank one the node's kernel
    # witnessed that the clocks cannot order it against: it stays a candidate (§8.28).
    unplaced = [f for f in faults if not _witnessed(ctx, f) and not any(e.time for e in f)]
    eligible = [f for f in faults if f not in unplaced] if any(_witnessed(ctx, f) for f in faults) else faults
    first = min(eligible or faults, key=lambda f: (_estimate(f) or _FLOOR, -max(e.rule.priority for e in f)))
    if death is not None and ctx.has(first[0], "link"):
        return death, []  # completion errors naming a peer that died are that death's consequence (§8.5)
    return _best_sighting(first), [_best_sighting(f) for f in faults if f is not first]


def _witnessed(ctx: Context, fault: list[Event]) -> bool:
    """A sighting of the fault in the kernel log of a node, one no other job on it may have printed."""
    return any(is_kernel(e) and id(e) not in ctx.weak for e in fault)


def _same_line(a: Event, b: Event) -> bool:
    return a.source == b.source and a.line_no == b.line_no


def _names_cause(ctx: Context, symptom: Event, fault: Event) -> bool:
    """The symptom names the fault's node as its lost peer (`Connection closed by peer [IP]`, an IB
    completion error from that peer), close enough in time to be its consequence."""
    peer = ctx.ranks.names.canonical(symptom.fields.get("peer"))
    return peer is not None and peer == fault.node and ctx.order.near(fault, symptom, ctx.merge_span)


def _best_sighting(sightings: list[Event]) -> Event:
    """The sighting that places a fault best: the earliest stamped line, else the first."""
    return min((e for e in sightings if e.time), key=lambda e: e.time or _FLOOR, default=sightings[0])


def _faults(ctx: Context, events: list[Event]) -> list[list[Event]]:
    """Events grouped into faults, each with its sightings: a sighting joins the first fault it is
    one of (_same_fault). Faults are looked up by their first sighting's rank and node, so a job
    whose every rank crashed costs a few lookups a sighting, not a walk through every fault."""
    faults: list[list[Event]] = []
    by_rank: dict[int, list[int]] = {}  # faults by their first sighting's rank
    by_node: dict[str | None, list[int]] = {}  # faults by their first sighting's node (None: none)
    unranked: dict[str | None, list[int]] = {}  # those of them whose first sighting has no rank
    for e in events:
        if e.node is None:  # a sighting with no node may be any fault's
            near: Iterable[int] = range(len(faults))
        elif e.rank is None:  # any fault on its node, or on none
            near = [*by_node.get(e.node, []), *by_node.get(None, [])]
        else:  # its rank's faults, and the unranked ones on its node or on none
            near = [*by_rank.get(e.rank, []), *unranked.get(e.node, []), *unranked.get(None, [])]
        home = next((i for i in sorted(near) if _same_fault(ctx, e, faults[i][0])), None)
        if home is not None:
            faults[home].append(e)
            continue
        by_node.setdefault(e.node, []).append(len(faults))
        if e.rank is None:
            unranked.setdefault(e.node, []).append(len(faults))
        else:
            by_rank.setdefault(e.rank, []).append(len(faults))
        faults.append([e])
    return faults


def _same_fault(ctx: Context, a: Event, b: Event) -> bool:
    """Two sightings of one fault: the same kind, close in time, on the same rank (or node when a rank is unknown)."""
    if ctx.has(a, "crash") != ctx.has(b, "crash") or (not ctx.has(a, "crash") and a.family != b.family):
        return False
    if not ctx.order.coincide(a, b, ctx.merge_span):
        return False
    if a.rank is not None and b.rank is not None:
        return a.rank == b.rank
    return a.node is None or b.node is None or a.node == b.node


def _estimate(sightings: list[Event]) -> datetime | None:
    """A fault's best time: its most precise sighting's (a stamped line, else the middle of its neighbours')."""
    stamped = [e.time for e in sightings if e.time]
    if stamped:
        return min(stamped)
    spans = [(e.lo, e.hi) for e in sightings if e.lo and e.hi]
    if spans:
        return min(lo + (hi - lo) / 2 for lo, hi in spans)
    return next((e.when for e in sightings if e.when), None)


def _parent_by_silence(ctx: Context, crash: Crash, symptoms: list[Event]) -> None:
    """A crash seen without a rank belongs to the one rank that never reported the timeout (§8.8, §8.11).

    When srun says that rank itself ended otherwise (Terminated, Aborted), the process that
    crashed was one it forked: in a save, its checkpoint writer.
    """
    node, rank, _ = silent_ranks(ctx, symptoms)
    if rank is None or crash.node not in (None, node):
        return
    crash.rank, crash.node, crash.by_silence = rank, node, True
    ended = any(ctx.has(e, "task_end") and e.rank == rank for e in ctx.events)
    if ended and crash.in_checkpoint and crash.child is None:
        crash.child = "forked_writer"


def _cdmm(ctx: Context, node: str | None) -> str:
    node = node or _only_node(ctx)
    facts = ctx.bundle.facts.get(node) if node else None
    return facts.cdmm if facts else "unknown"


def _only_node(ctx: Context) -> str | None:
    return ctx.ranks.nodes[0] if len(ctx.ranks.nodes) == 1 else None


def _facts(ctx: Context, node: str | None) -> tuple[NodeFacts | None, str | None]:
    """The root node's facts (and a note when it has none); the batch host's when no node is to blame."""
    facts = ctx.bundle.facts
    if node:
        return facts.get(node), None if node in facts else f"nodes/{node}.json: no facts for the root node"
    host = ctx.bundle.job.batch_host or _only_node(ctx)
    return (facts.get(host) if host else None), None


def _assemble(ctx: Context, timeline: Timeline, v: Verdict, concurrent: list[Event]) -> Diagnosis:
    job = ctx.bundle.job
    named, v.node = v.node, job_node(ctx.ranks.nodes, v.node)  # a name outside the job is never its root (§8.20)
    outside = [f"{named[:64]!r} is not a node of this job; not taken as its root node"] if named and not v.node else []
    flight_notes: list[str] = []
    apply_flight(ctx, v, flight_notes)  # the dumps name the rank that never arrived (bundle flight/)
    summary_node = v.node
    flight_root = v.details.get("flight_recorder", {}).get("decided_root")
    if v.label in _NO_ROOT or (v.label == "nccl_timeout" and not (v.details.get("silent_ranks") or flight_root)):
        v.node = v.rank = None
    elif v.node is None:
        v.node = _only_node(ctx)  # one node: it is the root whenever the label has one (§8.14)
    if v.rank is None and v.node is not None and v.label in _PROCESS_LABELS and ctx.ranks.world == 1:
        v.rank = 0  # a world of one rank (Slurm's count, §8.34): a process's fault is that rank's
    # how sure, and a node verdict's root only on a witness (§8.28)
    withheld = settle(ctx, v, concurrent, timeline.unexamined)
    if withheld:
        summary_node = None
    facts, note = _facts(ctx, v.node)
    disputed: list[str] = []
    if ctx.disputed:  # the log's word on how Slurm ended the job, which Slurm's own record contradicts (§8.27)
        v.details["slurm_disagrees"], disputed = disagreement(job, ctx.disputed, ctx.pack)
    notes = summarise([*timeline.notes, *flight_notes, *outside, *disputed, *([note] if note else [])])
    if concurrent:
        v.details["concurrent"] = [fault_record(e) for e in concurrent]
    if ctx.world is not None and ctx.world.runs.earlier:  # earlier runs of the job id: context only (§8.29)
        v.details["previous_runs"] = ctx.world.previous_runs(ctx.pack)
    if ctx.offsets:
        v.details["clock_offsets_s"] = {n: round(o.total_seconds(), 3) for n, o in sorted(ctx.offsets.items())}
    unique = {id(e): e for e in v.evidence}.values()
    ordered = sorted(unique, key=lambda e: (e.when or _FLOOR, e.source, e.line_no))
    first_fault = fault_record(v.fault) if v.fault is not None else None
    if first_fault is not None and v.basis in ("crash", "primary"):  # the line may not name them; its fault does
        first_fault["node"] = first_fault["node"] or v.node
        first_fault["rank"] = v.rank if first_fault["rank"] is None else first_fault["rank"]
    if first_fault is not None and withheld:  # a place only the job's own text gives is no place (§8.28)
        first_fault["node"] = first_fault["rank"] = None
    if v.basis == "state":  # Slurm's own record is the first (and only) fault we know of
        first_fault = {
            "time": iso(job.end),
            "kind": v.label,
            "node": None,
            "rank": None,
            "source": "job.json",
            "line": f"state={job.state} exit_code={job.exit_code} derived_exit_code={job.derived_exit_code}",
        }
    return Diagnosis(
        job_id=job.job_id,
        label=v.label,
        summary=wording.summary(v, job, facts, summary_node),
        root_node=v.node,
        root_rank=v.rank,
        first_fault=first_fault,
        evidence=[event_record(e) for e in ordered[:MAX_EVIDENCE]],
        advice=wording.advice(v, ctx.pack, job, facts),
        facts=facts.to_dict() if facts else {},
        details=v.details,
        skipped=notes,
    )
