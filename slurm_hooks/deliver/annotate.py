"""Deliver annotations to Slurm accounting; whatever cannot be delivered now stays queued.

Delivery is idempotent: the record replaces our own earlier one, so two flushers (a backlog
flush and an Epilog delivering its own job) may both deliver an entry and both remove it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from slurm_hooks.core.clock import Clock
from slurm_hooks.core.hooklog import Log
from slurm_hooks.deliver.outbox import Outbox, OutboxEntry
from slurm_hooks.slurm.annotation import merged_value
from slurm_hooks.slurm.client import NotInAccountingYet, Slurm, SlurmError

# settled: delivered, already there, or left alone | not_yet: the job's record is still on its
# way to slurmdbd | unavailable: accounting did not answer
Outcome = Literal["settled", "not_yet", "unavailable"]


@dataclass
class Tally:
    delivered: int = 0
    left_alone: int = 0  # the field belongs to another tool; the diagnosis stays in the spool
    pending: int = 0
    dropped: int = 0
    quarantined: int = 0


def deliver(entry: OutboxEntry, slurm: Slurm, log: Log, tally: Tally) -> Outcome:
    """One record into accounting (no outbox involved: the caller keeps or removes it)."""
    try:
        comment, admin = slurm.accounting_comments(entry.job_id)
        current = admin if entry.field == "admin_comment" else comment
        value = merged_value(entry.field, current, entry.record)
        if value is None:
            log.warning(
                "annotation_left_alone",
                annotated_job=entry.job_id,
                field=entry.field,
                reason="field holds another tool's value",
                holder=current[:8],
            )
            tally.left_alone += 1
        elif value != current:
            slurm.set_job_field(entry.job_id, entry.field, value)
            log.info("annotation_delivered", annotated_job=entry.job_id, field=entry.field)
            tally.delivered += 1
        else:  # a lost reply, or another flusher was first: the hook log says who delivered it
            log.info("annotation_already_there", annotated_job=entry.job_id, field=entry.field)
            tally.delivered += 1
    except SlurmError as exc:
        tally.pending += 1
        log.warning("annotation_queued", annotated_job=entry.job_id, error=str(exc))
        return "not_yet" if isinstance(exc, NotInAccountingYet) else "unavailable"
    return "settled"


def deliver_waiting(entry: OutboxEntry, slurm: Slurm, log: Log, clock: Clock, wait_s: float) -> Outcome:
    """The job that just ended: its accounting record reaches slurmdbd asynchronously, sometimes
    just after the Epilog starts, so a `not_yet` is retried each second for up to `wait_s`."""
    until = clock.monotonic() + wait_s
    while (outcome := deliver(entry, slurm, log, Tally())) == "not_yet" and clock.monotonic() < until:
        clock.sleep(1.0)
    return outcome


def deliver_backlog(
    outbox: Outbox, slurm: Slurm, log: Log, clock: Clock, budget_s: float, retention_days: int
) -> Tally:
    """Every queued annotation, oldest first, until the time budget runs out; one flusher at a time."""
    tally = Tally()
    deadline = clock.monotonic() + budget_s
    failing = False
    with outbox.exclusive() as held:
        if not held:
            return tally
        backlog = outbox.pending(clock.time())
        for name, why in backlog.quarantined:
            log.error("outbox_entry_quarantined", file=name, reason=why)
            tally.quarantined += 1
        for entry in backlog.entries:
            if clock.time() - entry.queued_at > retention_days * 86400:
                log.error("annotation_dropped", annotated_job=entry.job_id, reason="older than retention")
                outbox.remove(entry)
                tally.dropped += 1
            elif clock.monotonic() > deadline or failing:
                tally.pending += 1
            else:  # once accounting does not answer, the rest would only burn the hook's time budget
                outcome = deliver(entry, slurm, log, tally)
                failing = outcome == "unavailable"
                if outcome == "settled":
                    outbox.remove(entry)
    return tally
