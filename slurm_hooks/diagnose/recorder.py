"""PyTorch flight-recorder digests in the verdict (bundle `flight/`, docs/flight-recorder.md).

An `nccl_timeout` with nothing primary before it, whose logs leave the root open (every rank
reported the timeout, or the silent ones sit on several nodes), gets its root from the dumps:
the ranks behind the rest, or without a dump, when they sit on one node. A verdict the logs
decided keeps its root; the dumps are added as evidence and say whether they agree.
"""

from __future__ import annotations

from slurm_hooks.diagnose.context import Context
from slurm_hooks.diagnose.verdict import Verdict
from slurm_hooks.flight.analysis import analyse, load_docs


def apply_flight(ctx: Context, v: Verdict, notes: list[str]) -> None:
    if not ctx.bundle.flight:
        return
    docs = load_docs(ctx.bundle.flight, notes)
    if not docs:
        return
    view = analyse(docs, ctx.ranks.world, ctx.ranks.node_of)
    details = v.details["flight_recorder"] = view.to_details()
    suspects = view.suspects
    if not suspects:
        return
    nodes = {ctx.ranks.node_of(r) or view.dumped.get(r) for r in suspects}
    if v.rank is not None:
        details["agrees"] = v.rank in suspects
    elif v.node is not None:
        details["agrees"] = v.node in nodes
    elif v.label == "nccl_timeout" and v.basis == "symptom" and len(nodes) == 1 and None not in nodes:
        v.node = nodes.pop()
        v.rank = suspects[0] if len(suspects) == 1 else None
        details["decided_root"] = True
