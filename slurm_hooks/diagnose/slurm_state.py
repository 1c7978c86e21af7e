"""Slurm's words in a job's log against Slurm's own record (log-signatures §8.27).

slurmstepd's `*** JOB 5 ON n1 CANCELLED AT ... DUE TO TIME LIMIT ***`, its `Detected 1 oom_kill
event` and srun's `Node failure on n2` reach the diagnosis through the job's own output, where any
process of the job can print the same text. Accounting's state is written by slurmctld alone. A
line of a `slurm_end` family therefore decides only where that state says the same (TIMEOUT for
`time_limit`, ...); where it does not, the line is context: never a fault, and the diagnosis says
that Slurm disagreed.
"""

from __future__ import annotations

from typing import Any

from slurm_hooks.bundle import JobInfo
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.events import Event

# Accounting's state -> the label it gives a job whose logs name nothing (and the one Slurm's words must match).
STATE_LABEL = {
    "TIMEOUT": "time_limit",
    "CANCELLED": "cancelled",
    "PREEMPTED": "preempted",
    "REQUEUED": "preempted",
    "NODE_FAIL": "node_fail",
    "OUT_OF_MEMORY": "oom_killed",
}
MAX_LISTED = 5  # disputed lines named in `details`; `count` has them all


def _label(pack: RulePack, ev: Event) -> str | None:
    family = pack.families.get(ev.family)
    return family.label if family else None


def disputed(job: JobInfo, events: list[Event], pack: RulePack) -> list[Event]:
    """The events of Slurm's words whose label accounting's state does not give the job."""
    agreed = STATE_LABEL.get(job.state)
    return [e for e in events if pack.has(e.family, "slurm_end") and _label(pack, e) != agreed]


def disagreement(job: JobInfo, lines: list[Event], pack: RulePack) -> tuple[dict[str, Any], list[str]]:
    """`details.slurm_disagrees` and the notes for `skipped`, for lines that `disputed` found."""
    state = job.state or "unknown"
    listed = [
        {"says": _label(pack, e), "source": f"{e.source}:{e.line_no}", "line": e.text[:200]} for e in lines[:MAX_LISTED]
    ]
    notes = [
        f"{e.source}: line {e.line_no}: the log says Slurm ended the job ({_label(pack, e)}), Slurm's accounting "
        f"says {state}: taken as context, not as the verdict"
        for e in lines
    ]
    return {"state": state, "count": len(lines), "lines": listed}, notes
