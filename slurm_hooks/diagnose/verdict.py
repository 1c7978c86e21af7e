"""Verdicts: label, root node, root rank and the events behind them; no prose (that is wording.py's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.diagnose import signals
from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.crash import Crash
from slurm_hooks.diagnose.silence import silent_ranks_details
from slurm_hooks.diagnose.slurm_state import STATE_LABEL
from slurm_hooks.timeline.events import Event


@dataclass(frozen=True)
class Seen:
    """A symptom family as the job showed it: its first event and how many ranks reported it."""

    first: Event
    ranks: int
    says: str  # "hit the NCCL watchdog timeout"


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


def seen(ctx: Context, first: Event | None) -> Seen | None:
    if first is None:
        return None
    family = ctx.pack.families.get(first.family)
    says = family.says if family and family.says else f"logged {first.family.replace('_', ' ')} lines"
    return Seen(first, len({e.rank for e in ctx.events if e.family == first.family and e.rank is not None}), says)


def crash_verdict(fault: Event, crash: Crash, cdmm: str, after: Seen | None) -> Verdict:
    if not crash.in_checkpoint:
        label = "app_segfault"
    else:  # CDMM is read from the crashed node's own facts only (§8.15)
        label = "cdmm_checkpoint_segfault" if cdmm == "on" else "checkpoint_segfault"
    evidence = [
        *crash.sightings,
        *crash.frames[:8],
        *([crash.save_start] if crash.save_start else []),
        *([after.first] if after else []),
    ]
    details: dict[str, Any] = {
        "in_save_window": crash.save_start is not None,
        "crash_frames": sorted({f.fields.get("func", "") for f in crash.frames} - {""}),
    }
    if crash.child:
        details["crashed_process"] = crash.child
    if signal := crash_signal(fault, crash):
        details["signal"] = signal
    return Verdict("crash", label, fault, crash.node, crash.rank, evidence, details, after, crash)


def crash_signal(fault: Event, crash: Crash) -> str | None:
    """The signal the crash died of, as its first fault names it, else as another sighting does (§8.32)."""
    return next((s for e in [fault, *crash.sightings] if (s := signals.of_fields(e.fields))), None)


def hardware_verdict(ctx: Context, fault: Event, after: Seen | None) -> Verdict:
    """A fatal Xid, a link failure, an OOM kill or Slurm ending the job, with its other sightings
    (any family with its label: srun's `Out Of Memory` is a sighting of slurmstepd's oom_kill count)."""
    label = ctx.label_of(fault)
    related = [
        e
        for e in ctx.events
        if e is not fault
        and (e.family == fault.family or ctx.label_of(e) == label != "unknown")
        and ctx.is_primary(e)
        and ctx.order.near(e, fault, ctx.merge_span)
    ]
    sightings = [fault, *related]
    # A line that names its node itself outranks one placed on a node by its srun task.
    node = next((e.node for e in sightings if "node" in e.fields), None) or next(
        (e.node for e in sightings if e.node), None
    )
    details: dict[str, Any] = {}
    evidence = [*sightings[:6]]
    if ctx.has(fault, "xid"):
        details["xid"] = fault.field_int("xid")
        # the rank's own CUDA error, else the process the Xid names, else the rank NCCL put on its GPU
        user = _gpu_user(ctx, fault, node)
        rank = user.rank if user else ctx.ranks.rank_of_pid(node, fault.fields.get("pid"))
        if rank is None and (user := _on_gpu(ctx, fault, node)) is not None:
            rank = user.rank
        evidence += [user] if user else []
    elif ctx.has(fault, "link"):
        rank = None  # a link is not a rank
    else:  # an OOM kill names its process: the job's own lines tie that pid to a rank (§8.18)
        rank = next((e.rank for e in sightings if e.rank is not None), None)
        for e in sightings if rank is None else ():
            rank = ctx.ranks.rank_of_pid(e.node or node, e.fields.get("pid"))
            if rank is not None:
                break
    evidence += [after.first] if after else []
    return Verdict("primary", label, fault, node, rank, evidence, details, after)


def _gpu_user(ctx: Context, xid: Event, node: str | None) -> Event | None:
    """The CUDA error of the rank on the failing GPU: on the Xid's node, right after it (§8.16)."""
    for ev in ctx.with_trait("gpu_error"):
        if (
            ev.rank is not None
            and ev.node == node
            and ctx.order.precedes(ev, xid) is not True
            and ctx.order.near(ev, xid, ctx.merge_span)
        ):
            return ev
    return None


def _on_gpu(ctx: Context, xid: Event, node: str | None) -> Event | None:
    """The NCCL init line of the rank whose GPU the Xid names, on the Xid's node: NCCL prints each
    rank's PCI address as `busId 6000` (0000:06:00.0, punctuation dropped), the kernel as `PCI:0000:06:00`."""
    gpu = _pci(xid.fields.get("bdf", ""))
    if gpu is None or node is None:
        return None
    on = [  # NCCL's init lines tie a pid, and with `bus` a GPU, to a rank
        ev
        for ev in ctx.with_trait("pid_rank")
        if ev.node == node and ev.rank is not None and "bus" in ev.fields and _pci(ev.fields["bus"], packed=True) == gpu
    ]
    return on[0] if len({ev.rank for ev in on}) == 1 else None  # two ranks on one GPU name neither


def _pci(text: str, packed: bool = False) -> tuple[int, int, int] | None:
    """(domain, bus, device) of a PCI address: `0000:06:00` / `0000:06:00.0`, or NCCL's packed hex digits."""
    if packed:
        digits = text.rjust(9, "0") if 0 < len(text) <= 16 else ""
        parts = [digits[:-5], digits[-5:-3], digits[-3:-1]] if digits else []
    else:
        parts = text.split(".")[0].split(":")
    try:
        domain, bus, device = (int(p, 16) for p in parts)
    except ValueError:
        return None
    return domain, bus, device


def silent_ranks(ctx: Context, symptoms: list[Event]) -> tuple[str | None, int | None, dict[str, Any]]:
    """The node of the ranks that never reported the watchdog timeout, if they sit on one (§8.8)."""
    reporters = {e.rank for e in symptoms if ctx.has(e, "watchdog") and e.rank is not None}
    return silent_ranks_details(ctx.ranks, reporters)


def symptom_verdict(ctx: Context, first: Seen, symptoms: list[Event]) -> Verdict:
    """Nothing primary came first: the first symptom decides (§8.2, §8.8)."""
    ev = first.first
    label = "unknown" if ctx.has(ev, "xid") else ctx.label_of(ev)
    node = rank = None
    details: dict[str, Any] = {}
    if label == "nccl_timeout":
        node, rank, details = silent_ranks(ctx, symptoms)
    elif label == "fabric_error":
        node = _fabric_node(ctx, [e for e in symptoms if e.family == ev.family])
    evidence = [ev, *symptoms[1:4]]
    if node:
        evidence += [e for e in ctx.with_trait("stall") if e.node == node][:5]
    return Verdict("symptom", label, ev, node, rank, evidence, details, first)


def _fabric_node(ctx: Context, errors: list[Event]) -> str | None:
    """A fabric fault seen only through its symptoms: the one peer they all name, else the one
    node that reports them all (a port of its own)."""
    peers = {ctx.ranks.names.canonical(p) for e in errors if (p := e.fields.get("peer"))}
    if len(peers) == 1 and None not in peers:
        return peers.pop()
    reporters = {e.node for e in errors}
    return reporters.pop() if len(reporters) == 1 and not peers else None


def state_verdict(job: JobInfo) -> Verdict:
    """No event in the logs: Slurm's state and exit codes are all there is."""
    label = STATE_LABEL.get(job.state)
    code, sig = job.exit_status
    dcode, dsig = job.derived_status
    # a crash signal in Slurm's record: a step's `0:7`, a script's `135:0` (§7, §8.32)
    signal = signals.of_exit(code, sig) or signals.of_exit(dcode, dsig)
    details: dict[str, Any] = {}
    if label is None and signals.number(signal) in signals.CRASH:
        label, details["signal"] = "app_segfault", signal
    elif label is None and job.state == "COMPLETED" and (code, sig) == (0, 0):
        label = "success"
    elif label is None:
        label = "unknown"
    return Verdict("state", label, None, None, None, [], details)
