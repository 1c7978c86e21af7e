"""Verdicts: label, root node, root rank and the events behind them; no prose (see wording.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose.crash import Crash
from slurm_hooks.diagnose.order import Order
from slurm_hooks.diagnose.ranks import RankMap
from slurm_hooks.diagnose.roles import Roles
from slurm_hooks.rules import Ordering
from slurm_hooks.timeline.events import Event

_FAMILY_LABEL = {"xid": "gpu_xid", "oom": "oom_killed", "fabric": "fabric_error", "time_limit": "time_limit",
                 "preempted": "preempted", "cancelled": "cancelled", "node_fail": "node_fail",
                 "nccl_timeout": "nccl_timeout", "nccl_error": "fabric_error"}
_STATE_LABEL = {"TIMEOUT": "time_limit", "CANCELLED": "cancelled", "PREEMPTED": "preempted",
                "REQUEUED": "preempted", "NODE_FAIL": "node_fail", "OUT_OF_MEMORY": "oom_killed"}


@dataclass(frozen=True)
class Seen:
    """A symptom family as the job showed it: its first event and how many ranks reported it."""

    first: Event
    ranks: int


@dataclass
class Verdict:
    basis: str  # completed | crash | primary | symptom | state: what decided it
    label: str
    fault: Event | None  # the first fault; None when only Slurm's record speaks
    node: str | None
    rank: int | None
    evidence: list[Event]
    details: dict[str, Any] = field(default_factory=dict)
    after: Seen | None = None  # the first symptom: what followed the fault, or, alone, what decided
    crash: Crash | None = None


def seen(first: Event | None, events: list[Event]) -> Seen | None:
    if first is None:
        return None
    return Seen(first, len({e.rank for e in events if e.family == first.family and e.rank is not None}))


def crash_verdict(fault: Event, crash: Crash, cdmm: str | None, after: Seen | None) -> Verdict:
    if crash.save_start is None and not crash.frames:
        label = "app_segfault"
    else:
        label = "cdmm_checkpoint_segfault" if cdmm == "on" else "checkpoint_segfault"
    evidence = [*crash.sightings, *crash.frames[:8]]
    if crash.save_start:
        evidence.append(crash.save_start)
    if after:
        evidence.append(after.first)
    details = {"in_save_window": crash.save_start is not None,
               "crash_frames": sorted({f.fields.get("func", "") for f in crash.frames})}
    return Verdict("crash", label, fault, crash.node, crash.rank, evidence, details, after, crash)


def hardware_verdict(fault: Event, events: list[Event], roles: Roles, order: Order, ordering: Ordering,
                     after: Seen | None) -> Verdict:
    """A fatal Xid, a link failure, an OOM kill or Slurm ending the job, with its other sightings."""
    label = _FAMILY_LABEL.get(fault.family, "unknown")
    merge = timedelta(seconds=ordering.crash_merge_s)
    related = [e for e in events if e is not fault and e.family == fault.family and roles.is_primary(e)
               and order.near(e, fault, merge)]
    sightings = [fault, *related]
    # A line that names its node itself outranks one placed on a node by its srun task.
    node = next((e.node for e in sightings if "node" in e.fields), None) or next(
        (e.node for e in sightings if e.node), None)
    details: dict[str, Any] = {"xid": fault.field_int("xid")} if fault.family == "xid" else {}
    # A link or a GPU is not a rank; an OOM kill or a crash is.
    rank = None if label in ("fabric_error", "gpu_xid") else next(
        (e.rank for e in sightings if e.rank is not None), None)
    evidence = [*sightings[:6], *([after.first] if after else [])]
    return Verdict("primary", label, fault, node, rank, evidence, details, after)


def symptom_verdict(first: Seen, symptoms: list[Event], ranks: RankMap, stalls: list[Event]) -> Verdict:
    """Nothing primary came first: the first symptom decides (§8.2, §8.8)."""
    ev = first.first
    label = "unknown" if ev.family == "xid" else _FAMILY_LABEL.get(ev.family, "unknown")
    node = rank = None
    details: dict[str, Any] = {}
    if label == "nccl_timeout":
        node, rank, details = ranks.silent(symptoms)
    evidence = [ev, *symptoms[1:4]]
    if node:
        evidence += [e for e in stalls if e.node == node][:5]
    return Verdict("symptom", label, ev, node, rank, evidence, details, first)


def state_verdict(job: JobInfo) -> Verdict:
    """No event in the logs: Slurm's state and exit codes are all there is."""
    label = _STATE_LABEL.get(job.state)
    code, sig = job.exit_status
    dcode, dsig = job.derived_status
    if label is None and (139 in (code, dcode) or 11 in (sig, dsig)):
        label = "app_segfault"
    elif label is None and job.state == "COMPLETED" and (code, sig) == (0, 0):
        label = "success"
    elif label is None:
        label = "unknown"
    return Verdict("state", label, None, None, None, [])
