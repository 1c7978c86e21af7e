"""EpilogSlurmctld (SlurmUser, once per job): the single annotator when `annotator: epilog_slurmctld`.

It starts alongside the node Epilogs, waits (bounded) for their parts in the shared spool,
then merges, diagnoses and annotates exactly like the lead node's Epilog would.
"""

from __future__ import annotations

import json
import os

from slurm_hooks.hooks.guard import load_config_or_defaults, run_guarded
from slurm_hooks.hooks.state import job_id_from_env


def main(env: dict[str, str] | None = None) -> int:
    env = dict(os.environ) if env is None else env
    job_id = job_id_from_env(env)
    config, log = load_config_or_defaults("epilog_slurmctld", job_id)

    def body() -> None:
        from slurm_hooks.delivery import deliver_backlog
        from slurm_hooks.hooks.epilog import OPT_OUT, finish_job, hostnames_of
        from slurm_hooks.slurm.client import JobRecord, SlurmCli, SlurmError
        from slurm_hooks.spool import Spool

        if job_id is None or config.annotator != "epilog_slurmctld" or OPT_OUT in env.get("SLURM_JOB_COMMENT", ""):
            return
        slurm = SlurmCli(config.budgets.command_s)
        try:
            record = slurm.job(job_id)
        except SlurmError as exc:
            log.warning("job_record_unavailable", error=str(exc))
            record = JobRecord(job_id=job_id, node_list=env.get("SLURM_JOB_NODELIST", ""))
        nodes = hostnames_of(slurm, record.node_list or env.get("SLURM_JOB_NODELIST", ""))
        spool = Spool(config.spool_dir)
        lead = record.batch_host or (nodes[0] if nodes else "")
        try:
            facts = json.loads((spool.bundle_dir(job_id) / "nodes" / f"{lead}.json").read_text())
        except (OSError, ValueError):
            facts = {}
        finish_job(config, spool, record, env, nodes, facts, log)
        deliver_backlog(spool, slurm, log, budget_s=10.0, retention_days=config.retention_days)

    return run_guarded(log, config.budgets.epilog_s, body)
