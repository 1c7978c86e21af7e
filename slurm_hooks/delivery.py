"""Deliver queued annotations to Slurm accounting; whatever cannot be delivered now stays queued."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_hooks.hooklog import Log
from slurm_hooks.slurm.annotation import merged_value
from slurm_hooks.slurm.client import NotInAccountingYet, Slurm, SlurmError
from slurm_hooks.spool import Spool


@dataclass
class Tally:
    delivered: int = 0
    left_alone: int = 0  # the field belongs to another tool; the diagnosis stays in the spool
    pending: int = 0
    dropped: int = 0


def deliver_one(path: Path, entry: dict[str, Any], slurm: Slurm, log: Log, tally: Tally) -> str:
    """settled (delivered, already there, or left alone) | not_yet (the job's record is still on
    its way to slurmdbd) | unavailable (accounting did not answer)."""
    job_id, field, record = str(entry["job_id"]), str(entry["field"]), str(entry["record"])
    try:
        comment, admin = slurm.accounting_comments(job_id)
        current = admin if field == "admin_comment" else comment
        value = merged_value(field, current, record)
        if value is None:
            log.warning("annotation_left_alone", annotated_job=job_id, field=field,
                        reason="field holds another tool's value", holder=current[:8])
            tally.left_alone += 1
        elif value != current:
            slurm.set_job_field(job_id, field, value)
            log.info("annotation_delivered", annotated_job=job_id, field=field)
            tally.delivered += 1
        else:
            tally.delivered += 1  # already there: re-delivery after a lost reply
    except SlurmError as exc:
        tally.pending += 1
        log.warning("annotation_queued", annotated_job=job_id, error=str(exc))
        return "not_yet" if isinstance(exc, NotInAccountingYet) else "unavailable"
    path.unlink(missing_ok=True)
    return "settled"


def deliver_backlog(spool: Spool, slurm: Slurm, log: Log, budget_s: float, retention_days: int) -> Tally:
    """Every queued annotation, oldest first, until the time budget runs out; one flusher at a time."""
    tally = Tally()
    deadline = time.monotonic() + budget_s
    failing = False
    with spool.exclusive("outbox") as held:
        if not held:
            return tally
        for path, entry in spool.pending():
            if time.time() - float(entry.get("queued_at", time.time())) > retention_days * 86400:
                log.error("annotation_dropped", annotated_job=entry["job_id"], reason="older than retention")
                path.unlink(missing_ok=True)
                tally.dropped += 1
                continue
            if time.monotonic() > deadline or failing:
                tally.pending += 1
                continue
            # Once accounting does not answer, the rest would only burn the hook's time budget.
            failing = deliver_one(path, entry, slurm, log, tally) == "unavailable"
    return tally
