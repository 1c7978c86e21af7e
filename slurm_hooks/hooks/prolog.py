"""Prolog (root, each node): record this node's GPU stack for the job's TaskProlog and Epilog."""

from __future__ import annotations

import os

from slurm_hooks.facts import collect_facts
from slurm_hooks.facts.gpu import GpuQuery, NvmlQuery
from slurm_hooks.hooks.guard import load_config_or_defaults, run_guarded
from slurm_hooks.hooks.state import job_id_from_env, write_job_state
from slurm_hooks.layout import is_number
from slurm_hooks.metrics import hook_recorder


def main(env: dict[str, str] | None = None, gpu: GpuQuery | None = None) -> int:
    env = dict(os.environ) if env is None else env
    job_id = job_id_from_env(env)
    config, log = load_config_or_defaults("prolog", job_id)

    def body() -> None:
        if job_id is None:
            log.error("no_job_id", detail="SLURM_JOB_ID missing or not numeric")
            return
        facts = collect_facts(config, gpu or NvmlQuery(config.budgets.nvml_call_s))
        gid = env.get("SLURM_JOB_GID")
        where = write_job_state(config.state_dir, job_id, facts, int(gid) if gid and is_number(gid) else None)
        log.info(
            "facts_recorded",
            node=facts["node"],
            driver=facts["driver_version"],
            cdmm=facts["cdmm"],
            ncore=facts["ncore_version"],
            errors=facts["errors"],
            state=str(where),
        )

    return run_guarded(
        log, config.budgets.prolog_s, body, hook_recorder(config.state_dir, config.metrics_file, "prolog", log=log)
    )
