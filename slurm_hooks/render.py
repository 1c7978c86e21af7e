"""Print a Diagnosis for a person (the JSON form is `Diagnosis.to_dict()`)."""

from __future__ import annotations

import textwrap
from typing import Any

from slurm_hooks.diagnose.result import Diagnosis
from slurm_hooks.timeline.noise import printable

_FACT_KEYS = ("node", "gpu_model", "driver_version", "cuda_driver_version", "cdmm", "ncore_version", "arch")


def _time(record: dict[str, Any]) -> str:
    """`~` marks a line without its own stamp, placed by its neighbours."""
    if not record.get("time"):
        return "(no time)"
    return record["time"] if record.get("time_exact", True) else f"~{record['time']}"


def to_text(d: Diagnosis, width: int = 100) -> str:
    out = [f"job {d.job_id}: {d.label}", "", *textwrap.wrap(d.summary, width)]
    root = [f"node {d.root_node}" if d.root_node else "", f"rank {d.root_rank}" if d.root_rank is not None else ""]
    if any(root):
        out.append("root: " + ", ".join(p for p in root if p))
    if d.first_fault:
        ff = d.first_fault
        at = f" at {_time(ff)}" if ff.get("time") else ""
        kind = "Slurm's record of the job" if ff["source"] == "job.json" else ff["kind"]  # no log line says more
        out += ["", f"first fault: {kind}{at} ({ff['source']})", f"  {ff['line'][:width]}"]
    if d.facts:
        out += ["", "node facts: " + ", ".join(f"{k}={d.facts[k]}" for k in _FACT_KEYS if d.facts.get(k))]
    if d.evidence:
        out += ["", "evidence (in order):"]
        for ev in d.evidence:
            out.append(f"  {_time(ev):<28} {ev['source']:<26} {ev['line'][: width - 57]}")
    if d.advice:
        out += ["", "what to do:"]
        for i, line in enumerate(d.advice, 1):
            out += textwrap.wrap(line, width, initial_indent=f"  {i}. ", subsequent_indent="     ")
    if d.skipped:
        out += ["", "skipped:"] + [f"  - {s}" for s in d.skipped]
    # Log text (lines, file names in notes) is the user's: no escape byte reaches a terminal (§8.24).
    return "\n".join(printable(line) for line in out) + "\n"
