"""How sure a diagnosis is (log-signatures §8.28, issue 28 "never confidently wrong").

`details.confidence` = {"level": "high" | "low", "reasons": [...]}: high where the rules decide
without a tie-break or a guess; low, with each reason, where
- the root of a node verdict rests on text the job's user could have written alone (trust.py):
  then, on a job of several nodes, the node is not named at all, only listed as a candidate;
- the root rests on absence (the ranks that printed nothing: printing is the job's choice);
- the faults cannot be ordered (a line without a time stamp, clocks too close): each is a
  candidate (`details.candidates`), the verdict the one the rules prefer;
- Slurm records the job COMPLETED 0:0 and only the job's own output shows the crash;
- the node's kernel logged a device fault (Xid, OOM kill, link) seconds from the first fault that
  did not decide: it is listed in `details.companions`, never hidden (an Xid that is not fatal,
  seconds from a rank's crash or exception, is listed there too, without lowering the level: the
  rank's own error decides, §8.36);
- a process was SIGKILLed and nothing says who sent it (signals.py, §8.32).
"""

from __future__ import annotations

from typing import Any

from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.result import fault_record
from slurm_hooks.diagnose.signals import killed_by
from slurm_hooks.diagnose.trust import NODE_LABELS, is_kernel, witnessed_by
from slurm_hooks.diagnose.verdict import Verdict
from slurm_hooks.timeline.events import Event

# Verdicts Slurm's own record makes (slurm_state.py: its words count only where accounting agrees)
SLURM_ENDED = frozenset({"time_limit", "cancelled", "preempted", "success"})

MAX_CANDIDATES = 8


def settle(ctx: Context, v: Verdict, concurrent: list[Event], unexamined: list[str]) -> bool:
    """`details.confidence` (and `details.candidates`); withholds a node verdict's root no witness
    names, and says whether it did (the summary then names no node either). `unexamined`: the
    timeline's notes of lines a work cap counted without matching (a fault may be among them)."""
    withheld = False
    reasons: list[str] = []
    candidates: list[dict[str, Any]] = []
    if v.label in NODE_LABELS and v.node is not None and not _witness(ctx, v, v.node):
        fault = fault_record(v.fault) if v.fault is not None else None
        candidates.append({"label": v.label, "node": v.node, "rank": v.rank, "basis": "job_output", "fault": fault})
        if len(ctx.ranks.nodes) > 1:
            reasons.append(
                f"{v.node} is named for {v.label} only by the job's own output (no kernel line of that node "
                "says so; Slurm's record may give the label, never the node): not taken as the root node"
            )
            v.node, v.rank, withheld = None, None, True
        else:
            reasons.append(f"{v.label} rests on the job's own output alone (no kernel line, no Slurm record)")
    if v.node is not None and _by_absence(v):
        reasons.append(
            f"root {v.node} found by absence: its ranks never reported the timeout (whether a rank prints is "
            "the job's choice), nothing shows it failed"
        )
    # forged node faults order nothing; a rank's error on the node of the device fault that decided is
    # its consequence, whatever the clocks say (§8.36)
    concurrent = [e for e in concurrent if _could_decide(ctx, e) and not _caused_by(ctx, v, e)]
    if concurrent and v.fault is not None:
        unstamped = any(e.time is None for e in [v.fault, *concurrent])
        reasons.append(
            "faults the clocks cannot order"
            + (" (a line without a time stamp)" if unstamped else "")
            + f": {v.label} chosen by the rules' preference; each is listed in candidates"
        )
        candidates += [_candidate(ctx, e) for e in [v.fault, *concurrent]]
    if "masked_by_exit" in v.details and not any(is_kernel(e) for e in (v.crash.sightings if v.crash else [])):
        reasons.append("Slurm records COMPLETED 0:0; only the job's own output shows the crash")
    companions = _companions(ctx, v, concurrent)
    if said := [*companions, *_travellers(ctx, v)]:  # app Xids travel with the rank's error (§8.36)
        v.details["companions"] = [fault_record(e) for e in said[:MAX_CANDIDATES]]
    if companions:
        reasons.append(
            f"the node's kernel logged {', '.join(sorted({ctx.label_of(e) for e in companions}))} within "
            f"{ctx.pack.ordering.crash_merge_s:g} s of it: its cause or its companion (listed in companions)"
        )
    if unheard := _unheard(ctx, v, concurrent, companions):
        reasons.append(
            f"the verdict rests on the job's own output, and a node's kernel logged "
            f"{', '.join(sorted({ctx.label_of(e) for e in unheard}))} in the job's window (listed in candidates)"
        )
        candidates += [_candidate(ctx, e) for e in ([v.fault] if v.fault is not None else []) + unheard]
    if unexamined:
        reasons.append(f"lines a work limit left unexamined may hold the fault: {unexamined[0]}")
    if between := _between_runs(ctx, v):
        reasons.append(
            "nothing of this run's own explains how it ended, and a fault's lines without a stamp sit "
            "between the earlier run's last stamp and this run's first (an appended log): the earlier "
            "run's end, or this run's (§8.29)"
        )
        candidates += [_candidate(ctx, e) for e in between if ctx.label_of(e) != "unknown"]
    if unsure := killed_by(ctx, v.label, v.details):  # a SIGKILL: who sent it (§8.32)
        reasons.append(unsure)
        candidates += v.details.pop("candidates", [])
    v.details["confidence"] = {"level": "low" if reasons else "high", "reasons": reasons}
    if candidates:
        v.details["candidates"] = candidates[:MAX_CANDIDATES]
    return withheld


def _between_runs(ctx: Context, v: Verdict) -> list[Event]:
    """Faults of no known run (runs.py `unplaced`) where the last run's verdict is Slurm's bare record."""
    unplaced = ctx.world.runs.unplaced if ctx.world is not None else frozenset()
    if not unplaced or v.label != "unknown":
        return []
    earlier = [e for run in ctx.world.runs.earlier for e in run] if ctx.world is not None else []
    return [e for e in earlier if id(e) in unplaced and (e.role == "primary" or ctx.has(e, "traceback"))][
        :MAX_CANDIDATES
    ]


def _witness(ctx: Context, v: Verdict, node: str) -> bool:
    """A line of the verdict's label that a witness the user cannot write ties to `node` (trust.py)."""
    job = ctx.bundle.job
    for ev in ctx.events:
        if ev is not v.fault and ctx.label_of(ev) != v.label and not (v.label == "gpu_xid" and ctx.has(ev, "xid")):
            continue
        if ctx.has(ev, "xid") and not ctx.is_primary(ev):
            continue
        if id(ev) in ctx.weak and is_kernel(ev):  # another job's process on a shared node (witness.py)
            continue
        if witnessed_by(job, ev, v.label, node):
            return True
    return False


def _could_decide(ctx: Context, ev: Event) -> bool:
    """A fault that could be the verdict: any crash or exception, a node fault only on its witness."""
    label = ctx.label_of(ev)
    if label not in NODE_LABELS:
        return True
    if is_kernel(ev) and id(ev) in ctx.weak:
        return False
    return ev.node is not None and witnessed_by(ctx.bundle.job, ev, label, ev.node) is not None


def _unheard(ctx: Context, v: Verdict, concurrent: list[Event], companions: list[Event]) -> list[Event]:
    """Node faults a node's kernel logged in the job's window (kernel lines outside it are dropped when
    the timeline is built) that a verdict resting on the job's own text leaves unsaid: a forged
    early stamp must not hide them (§8.28). Empty where the verdict has a kernel witness."""
    # Slurm's own ending (its record says how) needs no witness; a failure Slurm's record cannot
    # explain (`unknown` on FAILED) leaves what the kernel saw to say, survived by the job's text or not
    if v.basis == "completed" or (v.basis == "state" and v.label in SLURM_ENDED) or _kernel_backed(ctx, v):
        return []
    said = {id(e) for e in [*v.evidence, *concurrent, *companions]}
    # A fault the job went on after (details.survived, §8.30) is said where the verdict is Slurm's own
    # (its record agrees, §8.27). Elsewhere the progress that "survived" it is the job's text, which
    # alone never outweighs the kernel's witness: a kernel fault of any kind, a crash too, stays a candidate.
    survived = {r.get("source") for r in v.details.get("survived", []) if isinstance(r, dict)}
    if v.label in SLURM_ENDED:
        said_survived, survived = survived, set()
    else:
        said_survived = set()
    return [
        e
        for e in ctx.events
        if is_kernel(e)
        and id(e) not in said
        and (where := f"{e.source}:{e.line_no}") not in said_survived
        and id(e) not in ctx.weak
        and ctx.is_primary(e)
        and (ctx.label_of(e) in NODE_LABELS or where in survived)
    ][:MAX_CANDIDATES]


def _kernel_backed(ctx: Context, v: Verdict) -> bool:
    sightings = [*(v.crash.sightings if v.crash else []), *([v.fault] if v.fault is not None else [])]
    if any(is_kernel(e) and id(e) not in ctx.weak for e in sightings):
        return True
    return v.label in NODE_LABELS and v.node is not None and _witness(ctx, v, v.node)


def _companions(ctx: Context, v: Verdict, concurrent: list[Event]) -> list[Event]:
    """Device and kernel faults (Xid, OOM kill, link) the node's kernel logged seconds from the first
    fault that did not decide: its cause or its companion, reported, never hidden (issue 28, item 8)."""
    if v.fault is None:
        return []
    node = v.node or v.fault.node
    listed = {id(v.fault), *(id(e) for e in concurrent)}
    return [
        e
        for e in ctx.events
        if is_kernel(e)
        and id(e) not in listed
        and e.node == node
        and ctx.is_primary(e)
        and not ctx.has(e, "crash")
        and ctx.label_of(e) != v.label
        and ctx.order.near(e, v.fault, ctx.merge_span)
    ]


def _travellers(ctx: Context, v: Verdict) -> list[Event]:
    """Xids that are not fatal (13, 31, 43: the application's own fault as the GPU saw it) the node's
    kernel logged seconds from the rank's crash or exception: its companions, listed; the rank's own
    error decides, so they leave the confidence as it is (§8.36)."""
    if v.fault is None or (v.basis != "crash" and not ctx.has(v.fault, "exception")):
        return []
    node = v.node or v.fault.node
    return [
        e
        for e in ctx.with_trait("xid")
        if is_kernel(e) and e.node == node and not ctx.is_primary(e) and ctx.order.near(e, v.fault, ctx.merge_span)
    ]


def _caused_by(ctx: Context, v: Verdict, ev: Event) -> bool:
    """`ev`, a rank's crash or exception placed seconds from the device fault that decided (a fatal
    Xid, a link fault) on the node whose kernel logged it, and not before it: that fault's
    consequence, not a rival (§8.36). A line the clocks cannot place at all stays a candidate (§8.28)."""
    if v.label not in ("gpu_xid", "fabric_error") or v.fault is None or not _kernel_backed(ctx, v):
        return False
    if not (ctx.has(ev, "exception") or ctx.has(ev, "crash")) or ev.node is None or ev.node != v.node:
        return False
    placed = ev.when is not None and ctx.order.near(ev, v.fault, ctx.merge_span)
    if not placed or ctx.order.precedes(ev, v.fault) is True:
        return False
    return v.rank is None or ev.rank is None or ev.rank == v.rank


def _by_absence(v: Verdict) -> bool:
    """The root came from the silent ranks, not from a line or a dump naming it."""
    if v.crash is not None and v.crash.by_silence:
        return True
    flight = v.details.get("flight_recorder", {})
    return v.basis == "symptom" and bool(v.details.get("silent_ranks")) and not flight.get("decided_root")


def _candidate(ctx: Context, ev: Event) -> dict[str, Any]:
    rec = fault_record(ev)
    return {
        "label": ctx.label_of(ev),
        "node": rec["node"],
        "rank": rec["rank"],
        "basis": ev.source.split("/", 1)[0],
        "fault": rec,
    }
