"""Timeline + node facts -> Diagnosis, in the order of log-signatures §8.

  * primary events (crashes, fatal Xids, OOM kills, link down, Slurm ending the job) that come
    before the first symptom's *report* are the candidates; the earliest wins, and events the
    clocks cannot separate are settled by the rule pack's priorities;
  * symptoms (watchdog timeouts, IB completion errors, NCCL error codes) decide only when no
    primary precedes them; a crash right at or after a watchdog report is teardown noise;
  * a segfault inside a checkpoint save window, or with the zip-writer/CRC frames on its
    stack, is a checkpoint crash; on a CDMM node, the headline label;
  * the exit code and Slurm state are tie-breakers when the logs say nothing.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from slurm_hooks.bundle import Bundle
from slurm_hooks.diagnose import wording
from slurm_hooks.diagnose.crash import collect_crash
from slurm_hooks.diagnose.order import Order
from slurm_hooks.diagnose.ranks import rank_map
from slurm_hooks.diagnose.result import Diagnosis, event_record, fault_record, iso
from slurm_hooks.diagnose.roles import Roles
from slurm_hooks.diagnose.verdict import (
    Verdict,
    crash_verdict,
    hardware_verdict,
    seen,
    state_verdict,
    symptom_verdict,
)
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event, Timeline

# Slurm ended the job, or no node is to blame: no root (DESIGN.md).
_NO_ROOT = {"success", "unknown", "cancelled", "time_limit", "preempted"}
MAX_EVIDENCE = 25
_FLOOR = datetime.min.replace(tzinfo=timezone.utc)


def classify(bundle: Bundle, timeline: Timeline, pack: RulePack) -> Diagnosis:
    job, events = bundle.job, timeline.events
    roles, order, ranks = Roles(pack), Order(pack.ordering.simultaneous_s), rank_map(timeline, job)
    primaries = [e for e in events if roles.is_primary(e)]
    symptoms = [e for e in events if roles.is_symptom(e)]
    first_symptom = symptoms[0] if symptoms else None

    if job.state == "COMPLETED" and job.exit_status == (0, 0) and job.derived_status == (0, 0):
        verdict = Verdict("completed", "success", None, None, None, [],
                          details={"ignored_events": len(primaries) + len(symptoms)})
        return _assemble(bundle, timeline, pack, verdict)

    fault = _first_primary(primaries, first_symptom, order)
    node_fail = next((e for e in primaries if e.family == "node_fail"), None)
    if node_fail and (fault is None or fault.family == "fabric"):
        # Completion errors naming a peer that died are the consequence of that node's death (§8.5).
        fault = node_fail
    after = seen(first_symptom, events)
    if fault is not None and fault.family == "segfault":
        crash = collect_crash(fault, events, order, ranks, pack.ordering)
        if crash.rank is None:
            # A forked writer dies without a rank; its parent rank is the one that never reports the timeout.
            silent_node, silent_rank, _ = ranks.silent(symptoms)
            if silent_rank is not None and crash.node in (None, silent_node):
                crash.rank, crash.node = silent_rank, silent_node
        verdict = crash_verdict(fault, crash, _facts(bundle, crash.node).get("cdmm"), after)
    elif fault is not None:
        verdict = hardware_verdict(fault, events, roles, order, pack.ordering, after)
    elif after is not None:
        stalls = [e for e in events if e.family == "storage_stall"]
        verdict = symptom_verdict(after, symptoms, ranks, stalls)
    else:
        verdict = state_verdict(job)
    return _assemble(bundle, timeline, pack, verdict)


def _first_primary(primaries: list[Event], first_symptom: Event | None, order: Order) -> Event | None:
    def counts(p: Event) -> bool:
        if first_symptom is None:
            return True
        before = order.precedes(p, first_symptom)
        if before is None:
            # Too close to tell: a crash at a watchdog report is the teardown (ncclCommAbort,
            # SIGABRT handlers); anything else that close still counts.
            return not (p.family == "segfault" and first_symptom.family == "nccl_timeout")
        return before

    candidates = [p for p in primaries if counts(p)]
    if not candidates:
        return None
    first = candidates[0]
    ties = [c for c in candidates[1:] if order.precedes(first, c) is None]
    return max([first, *ties], key=lambda e: e.rule.priority)  # max() keeps the first among equals


def _facts(bundle: Bundle, node: str | None) -> dict[str, Any]:
    facts = bundle.facts
    for name in (node, bundle.job.batch_host, *bundle.job.nodes):
        if name and name in facts:
            return facts[name]
    return {}


def _assemble(bundle: Bundle, timeline: Timeline, pack: RulePack, v: Verdict) -> Diagnosis:
    job = bundle.job
    summary = wording.summary(v, job, _facts(bundle, v.node))
    if v.label in _NO_ROOT:
        v.node = v.rank = None
    facts = _facts(bundle, v.node)
    unique = {id(e): e for e in v.evidence}.values()
    ordered = sorted(unique, key=lambda e: (e.when or _FLOOR, e.source, e.line_no))
    first_fault: dict[str, Any] | None = None
    if v.fault is not None:
        first_fault = fault_record(v.fault)
    elif v.basis == "state":  # Slurm's own record is the first (and only) fault we know of
        first_fault = {"time": iso(job.end), "kind": v.label, "node": None, "rank": None, "source": "job.json",
                       "line": f"state={job.state} exit_code={job.exit_code} derived_exit_code={job.derived_exit_code}"}
    return Diagnosis(
        job_id=job.job_id, label=v.label, summary=summary, root_node=v.node,
        root_rank=v.rank, first_fault=first_fault, evidence=[event_record(e) for e in ordered[:MAX_EVIDENCE]],
        advice=wording.advice(v, pack, job, facts), facts=facts, details=v.details, skipped=list(timeline.notes))
