"""Print a Diagnosis for a person (the JSON form is `Diagnosis.to_dict()`). Text is wrapped, never
cut (the decisive frame is often the end of a long line), and no Python repr reaches the page;
a node's facts are facts/render.py's."""

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


def _wrap(text: str, width: int, indent: str) -> list[str]:
    """A log line as it was (runs of spaces kept), wrapped at `width` under `indent`."""
    return textwrap.wrap(
        text.strip("\n"),
        width,
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        replace_whitespace=False,
        break_on_hyphens=False,
    ) or [indent]


def to_text(d: Diagnosis, width: int = 100) -> str:
    out = [f"job {d.job_id}: {d.label}", "", *textwrap.wrap(d.summary, width)]
    root = [f"node {d.root_node}" if d.root_node else "", f"rank {d.root_rank}" if d.root_rank is not None else ""]
    if any(root):
        out.append("root: " + ", ".join(p for p in root if p))
    confidence = d.details.get("confidence") or {}
    if confidence.get("level") == "low":  # a guess is said to be one (log-signatures §8.28)
        out.append("confidence: low")
        for reason in confidence.get("reasons", []):
            out += textwrap.wrap(str(reason), width, initial_indent="  - ", subsequent_indent="    ")
    if d.first_fault:
        ff = d.first_fault
        at = f" at {_time(ff)}" if ff.get("time") else ""
        kind = "Slurm's record of the job" if ff["source"] == "job.json" else ff["kind"]  # no log line says more
        out += ["", f"first fault: {kind}{at} ({ff['source']})", *_wrap(ff["line"], width, "  ")]
    if d.facts:
        facts = ", ".join(f"{k}={d.facts[k]}" for k in _FACT_KEYS if d.facts.get(k))
        out += ["", *textwrap.wrap("node facts: " + facts, width, subsequent_indent="  ")]
    if d.evidence:
        out += ["", "evidence (in order):"]
        for ev in d.evidence:
            out += [f"  {_time(ev):<23} {ev['source']}", *_wrap(ev["line"], width, "    ")]
    if d.advice:
        out += ["", "what to do:"]
        for i, line in enumerate(d.advice, 1):
            out += textwrap.wrap(line, width, initial_indent=f"  {i}. ", subsequent_indent="     ")
    if d.skipped:
        out += ["", "skipped:"]
        for s in d.skipped:
            out += textwrap.wrap(s, width, initial_indent="  - ", subsequent_indent="    ")
    # Log text (lines, file names in notes) is the user's: no escape byte reaches a terminal (§8.24).
    return "\n".join(printable(line) for line in out) + "\n"
