"""Epilog (root, each node of the job): clean up the job's node state."""

from __future__ import annotations

import os

from slurm_hooks.hooks.guard import load_config_or_defaults, run_guarded
from slurm_hooks.hooks.state import job_id_from_env, remove_job_state


def main(env: dict[str, str] | None = None) -> int:
    env = dict(os.environ) if env is None else env
    job_id = job_id_from_env(env)
    config, log = load_config_or_defaults("epilog", job_id)

    def body() -> None:
        if job_id is None:
            log.error("no_job_id", detail="SLURM_JOB_ID missing or not numeric")
            return
        remove_job_state(config.state_dir, job_id)
        log.info("state_removed")

    return run_guarded(log, config.budgets.epilog_s, body)
