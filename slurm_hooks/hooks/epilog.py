"""Epilog (root, each node of the job): this node's evidence into the spool; on the job's lead node,
merge every node's part, diagnose, and annotate the job in accounting (or queue it).

Exactly one writer per job: the lead node (the batch host, or the first node of an srun-only
job) when `annotator: epilog`; the EpilogSlurmctld when `annotator: epilog_slurmctld`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from slurm_hooks.config import Config
from slurm_hooks.hooks.guard import run_hook
from slurm_hooks.hooks.state import read_job_facts, remove_job_state
from slurm_hooks.slurm.job import JobContext

if TYPE_CHECKING:  # the heavy parts are imported inside main's body, once the guard is up
    from slurm_hooks.core.hooklog import Log
    from slurm_hooks.hooks.deps import EpilogDeps
    from slurm_hooks.hooks.post_job import PostJobRun


def main(env: Mapping[str, str] | None = None) -> int:
    def body(config: Config, log: Log, environ: Mapping[str, str]) -> None:
        from slurm_hooks.hooks.deps import real_deps

        ctx = JobContext.from_env(environ)  # inside the guard: Slurm's values may be anything
        if ctx is None:
            log.error("no_job_id", detail="SLURM_JOB_ID missing or not numeric")
            return
        try:
            run_epilog(ctx, config, real_deps(config, log))
        finally:
            remove_job_state(config.state_dir, ctx.job_id)
            log.info("state_removed")

    return run_hook("epilog", env, body)  # guarded from here: the config is loaded inside


def run_epilog(ctx: JobContext, config: Config, deps: EpilogDeps) -> None:
    """Collect this node's part of the run -> (lead only) wait, merge, diagnose -> annotate or
    queue; (no lead can be named: slurmctld did not answer) queue the run undecided -> flush."""
    from slurm_hooks.facts import collect_facts
    from slurm_hooks.hooks.post_job import PostJobRun, annotate_job, flush_backlog, recorded, reserve_outbox_entry
    from slurm_hooks.hooks.undecided import decide_undecided, queue_undecided

    if ctx.opted_out:
        deps.log.info("opted_out")
        return
    run = PostJobRun.start(ctx, config, deps, this_node=deps.node)
    on_lead = deps.node == run.job.lead
    decided = recorded(run)[0]  # Slurm before 26.05 can run the Epilog twice: the run's record is made once
    annotating = on_lead and config.annotator == "epilog" and not decided
    if annotating:
        reserve_outbox_entry(run)
    facts = read_job_facts(config.state_dir, ctx.job_id) or collect_facts(config, deps.gpu)
    collect_node_part(run, facts, with_job_logs=on_lead)
    if annotating:
        annotate_job(run, facts)
    elif decided:
        deps.log.info("run_already_recorded", run=run.run_id.tag)
    elif not run.job.lead and config.annotator == "epilog":
        queue_undecided(run)
    decide_undecided(config, deps, run.started)
    flush_backlog(run)
    if config.flight_recorder.mode == "on":  # housekeeping last: the record is made or queued by now
        from slurm_hooks.flight.collect import prune_dumps

        if pruned := prune_dumps(config, ctx.job_id, deps.clock.time(), ask=run.unfinished_jobs):
            deps.log.info("flight_dumps_pruned", outcome=pruned.removeprefix("; "))
    if config.annotator == "epilog_slurmctld":  # the controller's hook merges, as SlurmUser
        try:
            deps.spool.hand_over(ctx.job_id)
        except OSError as exc:
            deps.log.error("spool_not_handed_over", error=str(exc))
    deps.log.info("epilog_done", elapsed_s=round(deps.clock.monotonic() - run.started, 3))


def collect_node_part(run: PostJobRun, facts: dict[str, Any], with_job_logs: bool) -> None:
    """Facts, kernel lines and (on the lead) the job's logs into the spool, then this node's marker.

    A part that cannot be written (disk full, a planted link) is logged; the rest goes on, and
    the marker is still set so that the annotator does not wait for it in vain.
    """
    from slurm_hooks.collect.job_logs import copy_job_logs, log_paths
    from slurm_hooks.collect.node_part import job_window, write_node_part
    from slurm_hooks.core.clock import utc_now

    ctx, config, deps, job = run.ctx, run.config, run.deps, run.job
    kernel_from, logs = "", []
    try:
        deps.spool.bundle_dir(ctx.job_id)
        kernel_from = write_node_part(
            deps.spool, ctx.job_id, deps.node, facts, job_window(job.record, facts, utc_now(deps.clock)), deps.kernel
        )
        if with_job_logs and ctx.uid is not None and ctx.gid is not None:
            copied = copy_job_logs(
                deps.spool,
                ctx.job_id,
                log_paths(job.record, ctx, deps.node),
                ctx.uid,
                ctx.gid,
                config.max_log_read_mb << 20,
                config.budgets.command_s,
            )
            logs = [{"path": c.source, "ok": c.ok, "skipped_bytes": c.skipped_bytes, "error": c.error} for c in copied]
    except OSError as exc:
        deps.log.error("evidence_not_written", error=str(exc))
    if config.flight_recorder.mode == "on":
        collect_flight_part(run)
    try:
        deps.spool.mark_part_done(ctx.job_id, deps.node, deps.clock.time(), run.run_id)
    except OSError as exc:
        deps.log.error("part_marker_not_written", error=str(exc))
    deps.log.info("evidence_collected", node=deps.node, kernel_from=kernel_from, logs=logs)


def collect_flight_part(run: PostJobRun) -> None:
    """This node's flight-recorder digest into the bundle, before the part marker (docs/flight-recorder.md)."""
    from slurm_hooks.flight.collect import collect_flight

    ctx, config, deps = run.ctx, run.config, run.deps
    try:
        outcome = collect_flight(deps.spool, ctx.job_id, deps.node, ctx.uid, ctx.gid, config, deps.clock.time())
        deps.log.info("flight_recorder_read", outcome=outcome)
    except Exception as exc:  # the dumps are the user's: whatever they break costs this part, not the record
        deps.log.error("flight_recorder_not_read", error=f"{type(exc).__name__}: {str(exc)[:200]}")
