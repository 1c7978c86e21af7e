"""EpilogSlurmctld (SlurmUser, once per job): the single annotator when `annotator: epilog_slurmctld`.

It starts alongside the node Epilogs, waits (bounded) for their parts in the shared spool,
then merges, diagnoses and annotates exactly like the lead node's Epilog would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from slurm_hooks.config import Config
from slurm_hooks.hooks.guard import run_hook
from slurm_hooks.slurm.job import JobContext

if TYPE_CHECKING:
    from slurm_hooks.core.hooklog import Log
    from slurm_hooks.hooks.deps import EpilogDeps


def main(env: Mapping[str, str] | None = None) -> int:
    def body(config: Config, log: Log, environ: Mapping[str, str]) -> None:
        from slurm_hooks.hooks.deps import real_deps

        ctx = JobContext.from_env(environ)  # inside the guard: Slurm's values may be anything
        if ctx is not None and config.annotator == "epilog_slurmctld":
            run_epilog_slurmctld(ctx, config, real_deps(config, log))

    return run_hook("epilog_slurmctld", env, body)  # guarded from here: the config is loaded inside


def run_epilog_slurmctld(ctx: JobContext, config: Config, deps: EpilogDeps) -> None:
    """Reserve the job's outbox entry -> wait, merge, diagnose -> annotate or queue -> flush
    (deciding the runs that wait undecided: this hook always has the job's record)."""
    from slurm_hooks.hooks.post_job import PostJobRun, annotate_job, flush_backlog, recorded, reserve_outbox_entry
    from slurm_hooks.hooks.undecided import decide_undecided

    if ctx.opted_out:
        deps.log.info("opted_out")
        return
    run = PostJobRun.start(ctx, config, deps, this_node=None)  # the controller is none of the job's nodes
    if recorded(run)[0]:
        deps.log.info("run_already_recorded", run=run.run_id.tag)
    else:
        reserve_outbox_entry(run)
        annotate_job(run, facts=None)
    decide_undecided(config, deps, run.started)
    flush_backlog(run)
