"""Diagnosis: a bundle's timeline and node facts -> label, root node and rank, evidence and advice.

Stages, each its own module: `world` (the job's runs and steps, before any verdict: `runs`,
`steps`), `ranks` (which rank ran where, the world completed from Slurm's counts), `order`
(before/after under clock uncertainty), `crash` (one crash from its sightings, frames and save
window), `signals` (which signal, who sent a SIGKILL), `survived` (faults the job went on after),
`verdict` (label and root, no prose), `confidence` (how sure, on which witness), `wording` (summary
and advice from a verdict), and `classify`, which reads top to bottom like log-signatures §8.
"""

from __future__ import annotations

from slurm_hooks.bundle import Bundle
from slurm_hooks.core.nogc import no_cycle_collector
from slurm_hooks.diagnose.classify import classify
from slurm_hooks.diagnose.result import LABELS, Diagnosis
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.scan import Scanner, default_scanner

__all__ = ["LABELS", "Diagnosis", "diagnose"]


def diagnose(bundle: Bundle, pack: RulePack, scanner: Scanner | None = None) -> Diagnosis:
    with no_cycle_collector():  # events, hits and matches form no cycle; a large job makes a million of them
        timeline = build_timeline(bundle, pack, scanner or default_scanner(bundle.limits.line_bytes))
        return classify(bundle, timeline, pack)
