"""EpilogSlurmctld (SlurmUser, once per job): the single annotator when `annotator: epilog_slurmctld`.

It starts alongside the node Epilogs, waits (bounded) for their parts in the shared spool,
then merges, diagnoses and annotates exactly like the lead node's Epilog would.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from slurm_hooks.config import Config
from slurm_hooks.hooks.guard import load_config_or_defaults, run_guarded
from slurm_hooks.hooks.metrics import hook_recorder
from slurm_hooks.hooks.state import job_id_from_env
from slurm_hooks.slurm.job import JobContext

if TYPE_CHECKING:
    from slurm_hooks.hooks.deps import EpilogDeps


def main(env: Mapping[str, str] | None = None) -> int:
    environ = os.environ if env is None else env
    config, log = load_config_or_defaults("epilog_slurmctld", job_id_from_env(environ))

    def body() -> None:
        from slurm_hooks.hooks.deps import real_deps

        ctx = JobContext.from_env(environ)  # inside the guard: Slurm's values may be anything
        if ctx is not None and config.annotator == "epilog_slurmctld":
            run_epilog_slurmctld(ctx, config, real_deps(config, log))

    outbox = os.path.join(config.spool_dir, "outbox")
    return run_guarded(
        log,
        config.budgets.epilog_s,
        body,
        hook_recorder(config.state_dir, config.metrics_file, "epilog_slurmctld", outbox, log),
    )


def run_epilog_slurmctld(ctx: JobContext, config: Config, deps: EpilogDeps) -> None:
    """Reserve the job's outbox entry -> wait, merge, diagnose -> annotate or queue -> flush."""
    from slurm_hooks.hooks.post_job import PostJobRun, annotate_job, flush_backlog, reserve_outbox_entry

    if ctx.opted_out:
        deps.log.info("opted_out")
        return
    run = PostJobRun.start(ctx, config, deps, this_node=None)  # the controller is none of the job's nodes
    reserve_outbox_entry(run)
    annotate_job(run, facts=None)
    flush_backlog(run)
