"""The steps both post-job hooks share: find the job's nodes and lead; on the annotator, wait
for every node's part of this run, merge, diagnose, then annotate or queue; when no node can be
named the annotator, the run waits undecided (hooks/undecided.py); flush the backlog; prune.

Each step is a function of one `PostJobRun` (the job, the configuration, what the run works with,
slurmctld's view of the job, when the run started), so the steps cannot drift apart in what
they are handed, and a new one needs no new argument list.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any

from slurm_hooks.bundle.retention import UNSURE_KEEP_DAYS, Running
from slurm_hooks.collect.node_part import write_job_json
from slurm_hooks.config import Config
from slurm_hooks.core.clock import utc_now
from slurm_hooks.core.prune_tree import jobs_with_state
from slurm_hooks.core.sandbox import DIAGNOSIS_MEMORY_MB, NOT_BECOME, READER, Bounds, Parsed, run_parse
from slurm_hooks.deliver.annotate import deliver_backlog, deliver_waiting
from slurm_hooks.deliver.outbox import InvalidEntry, OutboxEntry, parse_entry
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.slurm.annotation import encode
from slurm_hooks.slurm.client import JobRecord, SlurmError
from slurm_hooks.slurm.job import JobContext, JobView, RunId

MISSING_NAMED = 8  # missing nodes named in `skipped`; the log's `missing_nodes` has them all
ACCOUNTING_WAIT_S = 6.0  # how long the annotator retries its own job's not-yet-in-accounting record
DERIVED_SETTLE_S = 3.0  # how long a masked crash waits for slurmctld to hear of its step's end


@dataclass(frozen=True)
class PostJobRun:
    """One run of a post-job hook (the Epilog on one node, or the EpilogSlurmctld) for one job."""

    ctx: JobContext  # what Slurm's environment says
    config: Config
    deps: EpilogDeps  # every side effect
    job: JobView  # slurmctld's record, the job's nodes and its lead
    started: float  # deps.clock.monotonic() when the run began: the backlog gets what is left

    @classmethod
    def start(cls, ctx: JobContext, config: Config, deps: EpilogDeps, this_node: str | None) -> PostJobRun:
        """The clock started, then the job looked up (`this_node`: see `look_up_job`)."""
        started = deps.clock.monotonic()
        return cls(ctx, config, deps, look_up_job(ctx, deps, this_node), started)

    @property
    def job_id(self) -> str:
        return self.ctx.job_id

    @property
    def run_id(self) -> RunId:
        """Which run of the job this is: the part markers, the decision and the record say it."""
        return RunId.of(self.ctx, self.job.record)

    def unfinished_jobs(self) -> frozenset[str] | None:
        """The jobs Slurm says have not ended, for retention (bundle/retention.Running): asked once
        per run, whichever pass asks first; None (and a log line saying why) when Slurm cannot say."""
        return self._unfinished

    @cached_property
    def _unfinished(self) -> frozenset[str] | None:
        why = "slurmctld did not answer this job's lookup"  # asking again would cost a second timeout
        if self.job.known:
            try:
                return self.deps.slurm.unfinished_jobs()
            except SlurmError as exc:
                why = str(exc)[:300]
        self.deps.log.warning(
            "retention_unsure",
            error=why,
            detail=f"Slurm cannot say which jobs have ended: their dirs stay up to {UNSURE_KEEP_DAYS} days",
        )
        return None


def look_up_job(ctx: JobContext, deps: EpilogDeps, this_node: str | None) -> JobView:
    """slurmctld's record and the job's nodes; when slurmctld is down, what the environment says
    (the job still gets its evidence kept). `this_node` stands in for a node list nobody can expand.

    The nodes come from the hook's environment first: Slurm 24.11 shrinks a COMPLETING job's node
    list in slurmctld as each node's Epilog ends, so a lead that ends last saw only itself and
    lost every other node's evidence (measured on the 24.11 lane). The environment is the
    allocation as it was when the job ended, on every version.
    Without the record nobody guesses the lead: a job of one node is led by it, any other job's
    lead is "" (undecided: each node writes its part and the run is queued for a flush to decide).
    """
    try:
        record, known = deps.slurm.job(ctx.job_id), True
    except SlurmError as exc:
        deps.log.warning("job_record_unavailable", error=str(exc))
        record, known = JobRecord(job_id=ctx.job_id, node_list=ctx.node_list), False
    listed = hostnames_of(deps, ctx.node_list or record.node_list)
    nodes = listed or ([this_node] if this_node else [])
    lead = (record.batch_host or (nodes[0] if nodes else "")) if known else (listed[0] if len(listed) == 1 else "")
    return JobView(record=record, nodes=tuple(nodes), lead=lead, known=known)


def hostnames_of(deps: EpilogDeps, node_list: str) -> list[str]:
    """`gb-r03-c[05-08]` -> the four names; a plain single name survives slurmctld being down."""
    if not node_list:
        return []
    try:
        return deps.slurm.hostnames(node_list)
    except SlurmError:
        return [node_list] if "[" not in node_list and "," not in node_list else []


def reserve_outbox_entry(run: PostJobRun) -> None:
    """Before the bundle, which is larger: on a filling disk the annotation still fits."""
    try:
        run.deps.outbox.reserve(run.job_id, run.deps.clock.time())
    except OSError as exc:
        run.deps.log.error("outbox_reserve_failed", error=str(exc))


def annotate_job(run: PostJobRun, facts: dict[str, Any] | None) -> None:
    """Wait (bounded) for every node's part, diagnose the merged bundle, annotate or queue.

    The caller reserved the job's outbox entry before any bundle was written (a full disk still
    takes the record); `facts` None means: the lead's, from the spool, once its part is there.
    """
    entry = decide(run, facts, run.config.budgets.merge_wait_s)
    if entry is not None:
        annotate_or_queue(run, entry)


def decide(run: PostJobRun, facts: dict[str, Any] | None, wait_s: float, copy_logs: bool = False) -> OutboxEntry | None:
    """This run's record, from this run's finished parts only (a previous run's, another node's,
    one unfinished when the wait ends are set aside first); None when the mode keeps it (the run
    is then marked decided here; a record is marked once it is queued). `copy_logs`: the job's
    logs are copied now (a run decided late had no lead to copy them)."""
    ctx, config, deps, job, log = run.ctx, run.config, run.deps, run.job, run.deps.log
    missing = wait_for_parts(run, wait_s)
    set_aside_stale(run)
    if copy_logs:
        copy_logs_late(run)
    if facts is None:
        facts = lead_facts(run)
    record_job(run, facts)
    diagnosis = analyse(run, missing)
    if masks_a_crash(diagnosis):
        diagnosis = settle_derived_exit(run, facts, missing) or diagnosis
    diagnosis["run"] = run.run_id.tag  # the record's `run=`: which run of the job it describes
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
        mark_decided(run, None)
        return None
    return OutboxEntry(
        job_id=ctx.job_id,
        field=config.annotation.field,
        queued_at=deps.clock.time(),
        record=encode(diagnosis, ctx.exit_code or job.record.exit_code, job.record.state),
    )


def annotate_or_queue(run: PostJobRun, entry: OutboxEntry) -> None:
    """Queue first (nothing is lost if the hook dies), then deliver it now. When the disk is full
    the record stays in memory for this run: lost only if the direct delivery fails too."""
    deps, wait_s = run.deps, min(ACCOUNTING_WAIT_S, run.config.budgets.epilog_s / 4)
    try:
        deps.outbox.put(entry)
        queued = True
        mark_decided(run, entry)
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


def record_job(run: PostJobRun, facts: dict[str, Any]) -> None:
    try:
        write_job_json(run.deps.spool, run.ctx, run.job, facts, run.config.log_timezone, utc_now(run.deps.clock))
    except OSError as exc:
        run.deps.log.error("job_json_not_written", error=str(exc))


def masks_a_crash(diagnosis: dict[str, Any]) -> bool:
    """`success` although crash lines were seen: the job's exit codes alone hid them."""
    details = diagnosis.get("details")
    return diagnosis.get("label") == "success" and isinstance(details, dict) and bool(details.get("ignored_events"))


def settle_derived_exit(run: PostJobRun, facts: dict[str, Any], missing: list[str]) -> dict[str, Any] | None:
    """A COMPLETED job whose step crashed, seen before slurmctld heard of that step's end: the
    derived exit code (the highest of the steps') is still 0:0 in the hook's environment and the
    record, so the crash reads as masked. slurmstepd reports a step's end apart from srun's exit,
    and under load the batch script can end first (seen on the 24.11 lane: SLURM_JOB_DERIVED_EC 0
    for a job whose `srun` step segfaulted; accounting showed 0:11 later). Ask again, bounded;
    the new diagnosis when the code settled to a failure, else None."""
    deps = run.deps
    deadline = deps.clock.monotonic() + min(DERIVED_SETTLE_S, run.config.budgets.epilog_s / 10)
    while deps.clock.monotonic() < deadline:
        deps.clock.sleep(0.5)
        try:
            record = deps.slurm.job(run.job_id)
        except SlurmError:
            return None
        if record.derived_exit_code not in ("", "0:0"):
            deps.log.info("derived_exit_settled", derived_exit_code=record.derived_exit_code)
            ctx = replace(run.ctx, derived_exit_code=record.derived_exit_code)
            settled = replace(run, ctx=ctx, job=replace(run.job, record=record))
            record_job(settled, facts)
            return analyse(settled, missing)
    return None


def wait_for_parts(run: PostJobRun, wait_s: float) -> list[str]:
    """Wait up to `wait_s` for every node's part of this run; the nodes still missing then.

    A marker of another run (a requeued job's previous run, a reused job id) is not this run's
    part and ends no wait. One directory listing per poll, whatever the job's size.
    """
    deps, run_id = run.deps, run.run_id
    deadline = deps.clock.monotonic() + wait_s
    wanted = set(run.job.nodes)
    missing = wanted - deps.spool.parts_done(run.job_id, run_id)
    while missing and deps.clock.monotonic() < deadline:
        deps.clock.sleep(0.2)
        missing = wanted - deps.spool.parts_done(run.job_id, run_id)
    return sorted(missing)


def set_aside_stale(run: PostJobRun) -> None:
    """Only this run's finished parts are merged: the rest of the bundle goes to `stale/`."""
    try:
        moved = run.deps.spool.set_aside(run.job_id, run.run_id, run.job.nodes or None)
    except OSError as exc:
        run.deps.log.error("stale_parts_not_set_aside", error=str(exc))
        return
    if moved:
        run.deps.log.warning("stale_parts_set_aside", run=run.run_id.tag, count=len(moved), files=moved[:MISSING_NAMED])


def copy_logs_late(run: PostJobRun) -> None:
    """The job's logs, as its user, by whoever decides an undecided run (nobody was its lead)."""
    from slurm_hooks.collect.job_logs import copy_job_logs, log_paths

    ctx, config, deps = run.ctx, run.config, run.deps
    if ctx.uid is None or ctx.gid is None:
        return
    paths = log_paths(run.job.record, ctx, run.job.nodes[0] if run.job.nodes else "")
    limit = config.max_log_read_mb << 20
    try:
        copy_job_logs(deps.spool, ctx.job_id, paths, ctx.uid, ctx.gid, limit, config.budgets.command_s)
    except OSError as exc:
        deps.log.error("evidence_not_written", error=str(exc))


def mark_decided(run: PostJobRun, entry: OutboxEntry | None) -> None:
    """The run is decided: a second Epilog of it (Slurm before 26.05 can run one) or a flush does
    not decide it again; the queued entry is kept with the mark, to be queued again if lost."""
    raw = json.dumps(asdict(entry)).encode() if entry is not None else b""
    try:
        run.deps.spool.mark_decided(run.job_id, run.run_id, raw)
    except OSError as exc:
        run.deps.log.error("decision_not_marked", error=str(exc))


def recorded(run: PostJobRun) -> tuple[bool, OutboxEntry | None]:
    """Whether this run is decided already, and the entry it queued (None: nothing to deliver)."""
    raw = run.deps.spool.decided(run.job_id, run.run_id)
    if raw is None:
        return False, None
    try:
        entry = parse_entry(f"{run.job_id}.json", raw) if raw else None
    except InvalidEntry:
        entry = None
    return True, entry if isinstance(entry, OutboxEntry) else None


def lead_facts(run: PostJobRun) -> dict[str, Any]:
    """The lead node's facts, from its part in the spool (the EpilogSlurmctld has none of its own)."""
    try:
        doc = json.loads(run.deps.spool.read(run.job_id, f"bundle/nodes/{run.job.lead}.json"))
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


DIAGNOSIS_RESULT_BYTES = 8 << 20  # the diagnosis child's answer (its memory: core/sandbox.DIAGNOSIS_MEMORY_MB)


def analyse(run: PostJobRun, missing: list[str]) -> dict[str, Any]:
    """The analysis stage on the merged bundle, in a bounded child (the bundle holds what the job's
    user wrote) that runs as nobody with CAP_DAC_READ_SEARCH alone (core/sandbox.READER): it reads
    root's spool copy and the rule files, and can write nothing of root's, signal no one's process
    but nobody's, and gain no privilege. If it raises, dies or runs past the time left for it, the
    job is still annotated (`unknown`, `not read: <reason>` in `skipped`, the reason in the log):
    no annotation must always mean "not processed". Its CPU and wall time are what the budget
    leaves once the annotation's own wait (annotate_or_queue) and a second to write it are kept back."""
    deps, config = run.deps, run.config
    budget_s = config.budgets.epilog_s
    left_s = budget_s - (deps.clock.monotonic() - run.started) - min(ACCOUNTING_WAIT_S, budget_s / 4) - 1
    bounds = Bounds(DIAGNOSIS_MEMORY_MB, max(1.0, left_s), max(1.0, left_s), DIAGNOSIS_RESULT_BYTES)
    try:  # the bundle dir made here, as root: the child may read the spool, never make or change anything in it
        bundle = deps.spool.bundle_dir(run.job_id)
        parsed = run_parse(lambda: deps.diagnose(bundle, config), bounds, READER)
        if parsed.reason == NOT_BECOME:  # before it read a byte: this host cannot drop so; bounded as root, as before
            why = "could not become nobody with CAP_DAC_READ_SEARCH (a container without it? a user namespace?)"
            deps.log.warning("diagnosis_root_fallback", reason=why)
            parsed = run_parse(lambda: deps.diagnose(bundle, config), bounds)
    except OSError as exc:
        parsed = Parsed(reason=f"bundle not opened ({exc.strerror or exc})")
    result: dict[str, Any]
    got = parsed.value
    if isinstance(got, dict) and isinstance(got.get("label"), str) and isinstance(got.get("skipped"), list):
        result = got
    else:
        reason = parsed.reason or "bad result"  # a bug or hostile input must not cost the job its annotation
        deps.log.error("diagnosis_failed", error=reason)
        result = {
            "job_id": run.job_id,
            "label": "unknown",
            "summary": "diagnosis failed (see the hook log)",
            "root_node": None,
            "root_rank": None,
            "facts": {},
            "skipped": [f"not read: {reason}"],
        }
    if missing:
        named = ", ".join(missing[:MISSING_NAMED]) + (
            f" and {len(missing) - MISSING_NAMED} more" if len(missing) > MISSING_NAMED else ""
        )
        result["skipped"].append(f"no evidence from node(s) {named} within {run.config.budgets.merge_wait_s:g}s")
    return result


def flush_backlog(run: PostJobRun) -> None:
    """Earlier jobs' queued annotations, within what is left of this hook's budget; then retention."""
    config, deps = run.config, run.deps
    left = config.budgets.epilog_s - (deps.clock.monotonic() - run.started)
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
    try:  # jobs still running keep their spool dirs; when that cannot be told here, nothing goes
        live = Running(jobs_with_state(config.state_dir) | {run.job_id}, run.unfinished_jobs)
    except OSError as exc:
        deps.log.warning("spool_not_pruned", error=f"state dir not listed: {exc.strerror or exc}")
        return
    left = config.budgets.epilog_s - (deps.clock.monotonic() - run.started)
    # The real monotonic clock, not deps.clock: the deadline bounds real work on real directories.
    deadline = time.monotonic() + max(0.5, min(5.0, left - 2))
    report = deps.spool.prune(config.retention_days, config.spool_max_mb, deps.clock.time(), live, deadline)
    if report.removed or report.links_removed or report.failed or report.left:
        deps.log.info(
            "spool_pruned",
            jobs=report.removed,
            links_removed=report.links_removed,
            failed=report.failed,
            left=report.left,
        )
