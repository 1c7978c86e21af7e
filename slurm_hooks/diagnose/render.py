"""Print a Diagnosis, or a node's facts, for a person (the JSON forms are `Diagnosis.to_dict()` and
the facts dict). Text is wrapped, never cut (the decisive frame is often the end of a long line);
a value that could not be read says so, and no Python repr reaches the page."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from slurm_hooks.diagnose.result import Diagnosis
from slurm_hooks.timeline.noise import printable

_FACT_KEYS = ("node", "gpu_model", "driver_version", "cuda_driver_version", "cdmm", "ncore_version", "arch")
NOT_READ = "not read"


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


def as_text(value: Any) -> str:
    """One fact for a person: None is "not read"; a mapping is key=value pairs; a list is comma-joined."""
    if value is None or value == "":
        return NOT_READ
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={as_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(as_text(v) for v in value) or "none"
    return str(value)


def facts_text(facts: Mapping[str, Any], config_source: str, width: int = 100) -> str:
    """`slurm-hooks facts`: which config was read, every fact (wrapped), then what could not be read."""
    out = textwrap.wrap(f"config: {config_source}", width, subsequent_indent="  ")
    for key, value in facts.items():
        if key != "errors":
            out += textwrap.wrap(f"{key}: {as_text(value)}", width, subsequent_indent="  ", break_on_hyphens=False)
    errors = facts.get("errors") or []
    out.append("errors: none" if not errors else "errors:")
    for error in errors:
        out += textwrap.wrap(str(error), width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out) + "\n"
