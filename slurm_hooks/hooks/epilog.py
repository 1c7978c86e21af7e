"""Epilog (root, each node of the job): this node's evidence into the spool; on the job's lead node,
merge every node's part, diagnose, and annotate the job in accounting (or queue it).

Exactly one writer per job: the lead node (the batch host, or the first node of an srun-only
job) when `annotator: epilog`; the EpilogSlurmctld when `annotator: epilog_slurmctld`.
"""

from __future__ import annotations

import json
import os
import time
from typing import TYPE_CHECKING, Any

from slurm_hooks.config import Config
from slurm_hooks.hooklog import Log
from slurm_hooks.hooks.guard import load_config_or_defaults, run_guarded
from slurm_hooks.hooks.state import job_id_from_env, read_job_facts, remove_job_state

if TYPE_CHECKING:  # the Epilog imports the heavy parts inside run_epilog, after the guard is up
    from slurm_hooks.slurm.client import JobRecord, Slurm
    from slurm_hooks.spool import Spool

OPT_OUT = "slurm-hooks=off"  # in the job's --comment: no diagnosis, no annotation
ACCOUNTING_WAIT_S = 6.0


def main(env: dict[str, str] | None = None) -> int:
    env = dict(os.environ) if env is None else env
    job_id = job_id_from_env(env)
    config, log = load_config_or_defaults("epilog", job_id)

    def body() -> None:
        if job_id is None:
            log.error("no_job_id", detail="SLURM_JOB_ID missing or not numeric")
            return
        try:
            if OPT_OUT in env.get("SLURM_JOB_COMMENT", ""):
                log.info("opted_out")
                return
            run_epilog(config, env, job_id, log)
        finally:
            remove_job_state(config.state_dir, job_id)
            log.info("state_removed")

    return run_guarded(log, config.budgets.epilog_s, body)


def run_epilog(config: Config, env: dict[str, str], job_id: str, log: Log) -> None:
    from slurm_hooks.delivery import Tally, deliver_backlog, deliver_one
    from slurm_hooks.evidence import copy_job_logs, job_window, log_paths, write_node_part
    from slurm_hooks.facts import collect_facts
    from slurm_hooks.facts.gpu import NvmlQuery
    from slurm_hooks.facts.host import node_name
    from slurm_hooks.slurm.client import JobRecord, SlurmCli, SlurmError
    from slurm_hooks.spool import Spool

    started = time.monotonic()
    spool = Spool(config.spool_dir)
    slurm = SlurmCli(config.budgets.command_s)
    node = node_name()
    try:
        record = slurm.job(job_id)
    except SlurmError as exc:  # slurmctld down or slow: the job still gets its evidence kept
        log.warning("job_record_unavailable", error=str(exc))
        record = JobRecord(job_id=job_id, node_list=env.get("SLURM_NODELIST", node))
    facts = read_job_facts(config.state_dir, job_id) or collect_facts(config, NvmlQuery(config.budgets.nvml_call_s))
    bundle = spool.bundle_dir(job_id)
    kernel_from = write_node_part(bundle, node, facts, job_window(record, facts), config.budgets.command_s)

    nodes = hostnames_of(slurm, record.node_list) or [node]
    lead = record.batch_host or nodes[0]
    copied = []
    if node == lead and env.get("SLURM_JOB_UID", "").isdigit() and env.get("SLURM_JOB_GID", "").isdigit():
        copied = copy_job_logs(bundle, log_paths(record, env, node), int(env["SLURM_JOB_UID"]),
                               int(env["SLURM_JOB_GID"]), config.max_log_read_mb << 20, config.budgets.command_s)
    spool.mark_part_done(job_id, node)
    log.info("evidence_collected", node=node, kernel_from=kernel_from,
             logs=[{"path": c.source, "ok": c.ok, "skipped_bytes": c.skipped_bytes, "error": c.error} for c in copied])

    if config.annotator == "epilog" and node == lead:
        finish_job(config, spool, record, env, nodes, facts, log)
        # This job first, outside the backlog lock another Epilog may hold. The job's record
        # reaches slurmdbd asynchronously, sometimes just after the Epilog starts: retry briefly.
        own = spool.outbox / f"{job_id}.json"
        wait_until = time.monotonic() + min(ACCOUNTING_WAIT_S, config.budgets.epilog_s / 4)
        while own.exists() and deliver_one(own, json.loads(own.read_text()), slurm, log, Tally()) == "not_yet":
            if time.monotonic() > wait_until:
                break
            time.sleep(1.0)
    left = config.budgets.epilog_s - (time.monotonic() - started)
    tally = deliver_backlog(spool, slurm, log, budget_s=max(0.0, min(left - 2, 10.0)),
                            retention_days=config.retention_days)
    if tally.pending:
        log.warning("outbox_pending", count=tally.pending)
    if removed := spool.prune(config.retention_days, config.spool_max_mb):
        log.info("spool_pruned", jobs=removed)
    log.info("epilog_done", elapsed_s=round(time.monotonic() - started, 3))


def hostnames_of(slurm: Slurm, node_list: str) -> list[str]:
    """`gb-r03-c[05-08]` -> the four names; a plain single name survives slurmctld being down."""
    from slurm_hooks.slurm.client import SlurmError

    if not node_list:
        return []
    try:
        return slurm.hostnames(node_list)
    except SlurmError:
        return [node_list] if "[" not in node_list and "," not in node_list else []


def finish_job(config: Config, spool: Spool, record: JobRecord, env: dict[str, str], nodes: list[str],
               facts: dict[str, Any], log: Log) -> None:
    """Wait (bounded) for every node's part, diagnose the merged bundle, queue the annotation."""
    from slurm_hooks.bundle import load_bundle
    from slurm_hooks.diagnose import diagnose
    from slurm_hooks.evidence import write_job_json
    from slurm_hooks.rules import load_rule_pack
    from slurm_hooks.slurm.annotation import encode

    job_id = record.job_id
    deadline = time.monotonic() + config.budgets.merge_wait_s
    while not set(nodes) <= spool.parts_done(job_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    missing = sorted(set(nodes) - spool.parts_done(job_id))
    bundle = spool.bundle_dir(job_id)
    write_job_json(bundle, record, env, nodes, facts, config.log_timezone)
    result = diagnose(load_bundle(bundle), load_rule_pack(config.rule_files))
    if missing:
        result.skipped.append(f"no evidence from node(s) {', '.join(missing)} within {config.budgets.merge_wait_s:g}s")
    diagnosis = result.to_dict()
    spool.save_diagnosis(job_id, diagnosis)
    log.info("diagnosed", label=result.label, root_node=result.root_node, root_rank=result.root_rank,
             summary=result.summary, missing_nodes=missing)
    mode = config.annotation.mode
    if mode == "shadow" or (mode == "failures" and result.label == "success"):
        log.info("annotation_skipped", mode=mode)
        return
    exit_code = env.get("SLURM_JOB_EXIT_CODE2") or record.exit_code
    spool.queue_annotation(job_id, config.annotation.field, encode(diagnosis, exit_code, record.state))
