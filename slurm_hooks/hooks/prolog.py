"""Prolog (root, each node): record this node's GPU stack for the job's TaskProlog and Epilog."""

from __future__ import annotations

from typing import TYPE_CHECKING

from slurm_hooks.core.layout import is_number
from slurm_hooks.facts import collect_facts
from slurm_hooks.facts.gpu import GpuQuery, NvmlQuery
from slurm_hooks.hooks.guard import run_hook
from slurm_hooks.hooks.state import job_id_from_env, write_job_state

if TYPE_CHECKING:
    from collections.abc import Mapping

    from slurm_hooks.config import Config
    from slurm_hooks.core.hooklog import Log


def main(env: dict[str, str] | None = None, gpu: GpuQuery | None = None) -> int:
    def body(config: Config, log: Log, env: Mapping[str, str]) -> None:
        job_id = job_id_from_env(env)
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
        if config.flight_recorder.mode == "on":
            prepare_flight(config, job_id, dict(env), log)

    return run_hook("prolog", env, body)  # guarded from here: the config is loaded inside


def prepare_flight(config: Config, job_id: str, env: dict[str, str], log: Log) -> None:
    """The job's flight-recorder dump directory (docs/flight-recorder.md); imported only when it is on."""
    from slurm_hooks.flight.setup import prepare

    uid, gid = env.get("SLURM_JOB_UID", ""), env.get("SLURM_JOB_GID", "")
    if not (uid.isdigit() and gid.isdigit()):
        log.error("flight_recorder_not_prepared", detail="SLURM_JOB_UID/GID missing or not numeric")
        return
    try:
        log.info("flight_recorder_ready", dir=prepare(config, job_id, int(uid), int(gid)))
    except OSError as exc:
        log.error("flight_recorder_not_prepared", error=str(exc))
