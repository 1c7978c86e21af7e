"""Runs nobody could name the annotator of, and how a later flush decides them.

With `annotator: epilog` the lead is the batch host, which only slurmctld's record says. When it
does not answer a multi-node job's Epilogs, no node guesses (a guess is two annotators or none):
each node writes its part of the run and queues the run `Undecided` in the outbox (one entry,
whichever nodes queue it). A backlog flush (any later Epilog, the EpilogSlurmctld, `slurm-hooks
flush`) decides it under the outbox's lock, exactly once: it merges the run's finished parts,
copies the job's logs as its user, diagnoses, and queues the record in the entry's place; the run's
decision mark keeps a late node or a second flush from deciding it again.
"""

from __future__ import annotations

from dataclasses import replace

from slurm_hooks.config import Config
from slurm_hooks.deliver.outbox import Undecided
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.hooks.post_job import PostJobRun, decide, look_up_job, mark_decided, recorded
from slurm_hooks.slurm.job import JobContext

UNDECIDED_WAIT_S = 3600.0  # a run whose job record never comes (purged, or a long outage): decided from its environment
DECIDE_NEEDS_S = 10.0  # a flush decides a run only with this much of its budget left (a merge and a diagnosis)
REASON = "no job record from slurmctld: the job's lead is not known"


def queue_undecided(run: PostJobRun) -> None:
    """This node's part is written; the run waits in the outbox for a flush to decide it."""
    deps = run.deps
    item = Undecided(run.job_id, run.ctx.to_env(), REASON, deps.clock.time())
    try:
        queued = deps.outbox.queue_undecided(item, run.run_id)
    except OSError as exc:
        deps.log.error("undecided_not_queued", error=str(exc), reason=REASON)
        return
    deps.log.warning("lead_undecided", run=run.run_id.tag, queued=queued, reason=REASON)


def decide_undecided(config: Config, deps: EpilogDeps, started: float | None, budget_s: float | None = None) -> int:
    """Undecided runs, oldest first, decided within `budget_s` (None: what is left of the budget
    of the hook that began at `started`). `started` None (`slurm-hooks flush`): each run's
    diagnosis gets a whole Epilog budget of its own. Returns how many still wait."""
    if budget_s is not None:
        left = budget_s
    else:
        left = config.budgets.epilog_s - (deps.clock.monotonic() - (started or deps.clock.monotonic())) - 2
    if left < DECIDE_NEEDS_S:
        return 0  # not even the outbox is read: the delivery after this gets the time
    until, waiting = deps.clock.monotonic() + left, 0
    with deps.outbox.exclusive() as held:
        if not held:
            return 0  # another flusher is at it
        backlog = deps.outbox.pending(deps.clock.time())
        for name, why in backlog.quarantined:
            deps.log.error("outbox_entry_quarantined", file=name, reason=why)
        for item in backlog.undecided:
            if until - deps.clock.monotonic() < DECIDE_NEEDS_S or not decide_one(config, deps, started, item):
                waiting += 1
    if waiting:
        deps.log.warning("outbox_undecided", count=waiting)
    return waiting


def decide_one(config: Config, deps: EpilogDeps, started: float | None, item: Undecided) -> bool:
    """Decide `item` as the controller's hook would; False while it must wait: its nodes may still
    be writing (`merge_wait_s`), or slurmctld has no record yet (up to UNDECIDED_WAIT_S)."""
    age = deps.clock.time() - item.queued_at
    ctx = JobContext.from_env(item.env)
    if ctx is None or age > config.retention_days * 86400:
        deps.log.error("annotation_dropped", annotated_job=item.job_id, reason="undecided past retention")
        deps.outbox.remove(item)
        return True
    if age < config.budgets.merge_wait_s:
        return False
    begun = deps.clock.monotonic() if started is None else started
    run = PostJobRun(ctx, config, deps, look_up_job(ctx, deps, None), begun)
    if not run.job.known and age < UNDECIDED_WAIT_S:
        return False
    done, kept = recorded(run)  # decided already: by a flush whose entry a late node replaced
    deps.log.info("deciding", annotated_job=ctx.job_id, run=run.run_id.tag, job_record=run.job.known, done=done)
    entry = kept if done else decide(run, None, 0.0, copy_logs=True)
    if entry is None:
        deps.outbox.remove(item)
        return True
    entry = replace(entry, queued_at=item.queued_at)  # retention counts from the job's end
    try:
        deps.outbox.put(entry)
    except OSError as exc:
        deps.log.error("outbox_write_failed", error=str(exc), annotated_job=ctx.job_id)
        return False
    if not done:
        mark_decided(run, entry)
    return True
