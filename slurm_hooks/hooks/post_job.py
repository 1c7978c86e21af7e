"""The steps both post-job hooks share: find the job's nodes and lead; on the annotator, wait
for every node's part, merge, diagnose, then annotate or queue; flush the backlog; prune."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from slurm_hooks.collect.node_part import write_job_json
from slurm_hooks.config import Config
from slurm_hooks.core.clock import utc_now
from slurm_hooks.deliver.annotate import deliver_backlog, deliver_waiting
from slurm_hooks.deliver.outbox import OutboxEntry
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.slurm.annotation import encode
from slurm_hooks.slurm.client import JobRecord, SlurmError
from slurm_hooks.slurm.job import JobContext, JobView

MISSING_NAMED = 8  # missing nodes named in `skipped`; the log's `missing_nodes` has them all
ACCOUNTING_WAIT_S = 6.0  # how long the annotator retries its own job's not-yet-in-accounting record
DERIVED_SETTLE_S = 3.0  # how long a masked crash waits for slurmctld to hear of its step's end


def look_up_job(ctx: JobContext, deps: EpilogDeps, this_node: str | None) -> JobView:
    """slurmctld's record and the job's nodes; when slurmctld is down, what the environment says
    (the job still gets its evidence kept). `this_node` stands in for a node list nobody can expand.

    The nodes come from the hook's environment first: Slurm 24.11 shrinks a COMPLETING job's node
    list in slurmctld as each node's Epilog ends, so a lead that ends last saw only itself and
    lost every other node's evidence (measured on the 24.11 lane). The environment is the
    allocation as it was when the job ended, on every version."""
    try:
        record = deps.slurm.job(ctx.job_id)
    except SlurmError as exc:
        deps.log.warning("job_record_unavailable", error=str(exc))
        record = JobRecord(job_id=ctx.job_id, node_list=ctx.node_list or (this_node or ""))
    nodes = hostnames_of(deps, ctx.node_list or record.node_list) or ([this_node] if this_node else [])
    return JobView(record=record, nodes=tuple(nodes), lead=record.batch_host or (nodes[0] if nodes else ""))


def hostnames_of(deps: EpilogDeps, node_list: str) -> list[str]:
    """`gb-r03-c[05-08]` -> the four names; a plain single name survives slurmctld being down."""
    if not node_list:
        return []
    try:
        return deps.slurm.hostnames(node_list)
    except SlurmError:
        return [node_list] if "[" not in node_list and "," not in node_list else []


def reserve_outbox_entry(ctx: JobContext, deps: EpilogDeps) -> None:
    """Before the bundle, which is larger: on a filling disk the annotation still fits."""
    try:
        deps.outbox.reserve(ctx.job_id, deps.clock.time())
    except OSError as exc:
        deps.log.error("outbox_reserve_failed", error=str(exc))


def annotate_job(ctx: JobContext, config: Config, deps: EpilogDeps, job: JobView, facts: dict[str, Any] | None) -> None:
    """Wait (bounded) for every node's part, diagnose the merged bundle, annotate or queue.

    The caller reserved the job's outbox entry before any bundle was written (a full disk still
    takes the record); `facts` None means: the lead's, from the spool, once its part is there.
    """
    log = deps.log
    missing = wait_for_parts(ctx.job_id, job.nodes, config.budgets.merge_wait_s, deps)
    if facts is None:
        facts = lead_facts(ctx.job_id, job.lead, deps)
    record_job(ctx, config, deps, job, facts)
    diagnosis = analyse(ctx.job_id, config, deps, missing)
    if masks_a_crash(diagnosis):
        diagnosis = settle_derived_exit(ctx, config, deps, job, facts, missing) or diagnosis
    label = diagnosis.get("label")
    log.info(
        "diagnosed",
        label=label,
        root_node=diagnosis.get("root_node"),
        root_rank=diagnosis.get("root_rank"),
        summary=diagnosis.get("summary"),
        missing_nodes=missing,
    )
    if deps.metrics is not None and not deps.metrics.diagnosis(str(label)):
        log.warning("metrics_not_written")
    try:
        deps.spool.save_diagnosis(ctx.job_id, diagnosis)
    except OSError as exc:
        log.error("diagnosis_not_saved", error=str(exc))
    mode = config.annotation.mode
    if mode == "shadow" or (mode == "failures" and label == "success"):
        log.info("annotation_skipped", mode=mode, label=label)
        deps.outbox.release(ctx.job_id)
        return
    entry = OutboxEntry(
        job_id=ctx.job_id,
        field=config.annotation.field,
        queued_at=deps.clock.time(),
        record=encode(diagnosis, ctx.exit_code or job.record.exit_code, job.record.state),
    )
    annotate_or_queue(entry, deps, wait_s=min(ACCOUNTING_WAIT_S, config.budgets.epilog_s / 4))


def annotate_or_queue(entry: OutboxEntry, deps: EpilogDeps, wait_s: float) -> None:
    """Queue first (nothing is lost if the hook dies), then deliver it now. When the disk is full
    the record stays in memory for this run: lost only if the direct delivery fails too."""
    try:
        deps.outbox.put(entry)
        queued = True
    except OSError as exc:
        deps.log.error("outbox_write_failed", error=str(exc), trying="direct delivery")
        queued = False
    outcome = deliver_waiting(entry, deps.slurm, deps.log, deps.clock, wait_s)
    if outcome == "settled" and queued:
        deps.outbox.remove(entry)
    elif outcome != "settled" and not queued:
        deps.log.error(
            "annotation_lost",
            annotated_job=entry.job_id,
            record=entry.record,
            reason=f"outbox not writable and accounting {outcome.replace('_', ' ')}",
        )


def record_job(ctx: JobContext, config: Config, deps: EpilogDeps, job: JobView, facts: dict[str, Any]) -> None:
    try:
        write_job_json(deps.spool, ctx, job, facts, config.log_timezone, utc_now(deps.clock))
    except OSError as exc:
        deps.log.error("job_json_not_written", error=str(exc))


def masks_a_crash(diagnosis: dict[str, Any]) -> bool:
    """`success` although crash lines were seen: the job's exit codes alone hid them."""
    details = diagnosis.get("details")
    return diagnosis.get("label") == "success" and isinstance(details, dict) and bool(details.get("ignored_events"))


def settle_derived_exit(
    ctx: JobContext, config: Config, deps: EpilogDeps, job: JobView, facts: dict[str, Any], missing: list[str]
) -> dict[str, Any] | None:
    """A COMPLETED job whose step crashed, seen before slurmctld heard of that step's end: the
    derived exit code (the highest of the steps') is still 0:0 in the hook's environment and the
    record, so the crash reads as masked. slurmstepd reports a step's end apart from srun's exit,
    and under load the batch script can end first (seen on the 24.11 lane: SLURM_JOB_DERIVED_EC 0
    for a job whose `srun` step segfaulted; accounting showed 0:11 later). Ask again, bounded;
    the new diagnosis when the code settled to a failure, else None."""
    deadline = deps.clock.monotonic() + min(DERIVED_SETTLE_S, config.budgets.epilog_s / 10)
    while deps.clock.monotonic() < deadline:
        deps.clock.sleep(0.5)
        try:
            record = deps.slurm.job(ctx.job_id)
        except SlurmError:
            return None
        if record.derived_exit_code not in ("", "0:0"):
            deps.log.info("derived_exit_settled", derived_exit_code=record.derived_exit_code)
            settled = replace(ctx, derived_exit_code=record.derived_exit_code)
            record_job(settled, config, deps, replace(job, record=record), facts)
            return analyse(ctx.job_id, config, deps, missing)
    return None


def wait_for_parts(job_id: str, nodes: tuple[str, ...], wait_s: float, deps: EpilogDeps) -> list[str]:
    """Wait up to `wait_s` for every node's part; the nodes still missing then.

    One directory listing per poll, whatever the job's size (1,152 parts are one listdir).
    """
    deadline = deps.clock.monotonic() + wait_s
    wanted = set(nodes)
    missing = wanted - deps.spool.parts_done(job_id)
    while missing and deps.clock.monotonic() < deadline:
        deps.clock.sleep(0.2)
        missing = wanted - deps.spool.parts_done(job_id)
    return sorted(missing)


def lead_facts(job_id: str, lead: str, deps: EpilogDeps) -> dict[str, Any]:
    try:
        doc = json.loads(deps.spool.read(job_id, f"bundle/nodes/{lead}.json"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def analyse(job_id: str, config: Config, deps: EpilogDeps, missing: list[str]) -> dict[str, Any]:
    """The analysis stage on the merged bundle. If it raises, the job is still annotated
    (`unknown`, with the reason in the log): no annotation must always mean "not processed"."""
    try:
        result = deps.diagnose(deps.spool.bundle_dir(job_id), config)
    except Exception as exc:  # a bug or hostile input must not cost the job its annotation
        deps.log.error("diagnosis_failed", error=f"{type(exc).__name__}: {exc}")
        result = {
            "job_id": job_id,
            "label": "unknown",
            "summary": "diagnosis failed (see the hook log)",
            "root_node": None,
            "root_rank": None,
            "facts": {},
            "skipped": [],
        }
    if missing:
        named = ", ".join(missing[:MISSING_NAMED]) + (
            f" and {len(missing) - MISSING_NAMED} more" if len(missing) > MISSING_NAMED else ""
        )
        result["skipped"].append(f"no evidence from node(s) {named} within {config.budgets.merge_wait_s:g}s")
    return result


def flush_backlog(config: Config, deps: EpilogDeps, started: float) -> None:
    """Earlier jobs' queued annotations, within what is left of this hook's budget; then retention."""
    left = config.budgets.epilog_s - (deps.clock.monotonic() - started)
    tally = deliver_backlog(
        deps.outbox,
        deps.slurm,
        deps.log,
        deps.clock,
        budget_s=max(0.0, min(left - 2, 10.0)),
        retention_days=config.retention_days,
    )
    if tally.pending:
        deps.log.warning("outbox_pending", count=tally.pending)
    report = deps.spool.prune(config.retention_days, config.spool_max_mb, deps.clock.time())
    if report.removed or report.links_removed or report.failed:
        deps.log.info("spool_pruned", jobs=report.removed, links_removed=report.links_removed, failed=report.failed)
