"""The job as a post-job hook sees it: Slurm's environment parsed once into a typed context,
and slurmctld's record with the job's nodes and its lead node."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from slurm_hooks.core.layout import is_number
from slurm_hooks.slurm.client import JobRecord

OPT_OUT = "slurm-hooks=off"  # in the job's --comment: no evidence, no diagnosis, no annotation


def raw_status(value: str | None) -> str:
    """SLURM_JOB_DERIVED_EC is a wait(2) status: 11 -> 0:11, 256 -> 1:0, 253 (OOM) -> 0:125."""
    if not value or not is_number(value) or len(value) > 10:
        return ""
    status = int(value)
    return f"0:{status & 0x7F}" if status & 0x7F else f"{status >> 8}:0"


def _id(value: str | None) -> int | None:
    return int(value) if value and is_number(value) and int(value) < 2**32 else None  # uid_t, gid_t


@dataclass(frozen=True)
class JobContext:
    """What Slurm tells an Epilog (or EpilogSlurmctld) in its environment; user-set values are text only."""

    job_id: str  # digits: it becomes a path component and a sacctmgr argument
    uid: int | None = None
    gid: int | None = None
    user: str = ""
    comment: str = ""  # the user's --comment
    node_list: str = ""
    exit_code: str = ""  # SLURM_JOB_EXIT_CODE2, exit:signal
    derived_exit_code: str = ""  # from SLURM_JOB_DERIVED_EC's wait status
    stdout_pattern: str = ""  # --output as given, unexpanded
    stderr_pattern: str = ""
    work_dir: str = ""
    batch: bool = False  # sbatch sets SLURM_JOB_STDIN; without --output it writes slurm-<id>.out
    oversubscribe: str = ""  # SLURM_JOB_OVERSUBSCRIBE (24.11 on; 22.05 has none): for when slurmctld is down

    @property
    def opted_out(self) -> bool:
        return OPT_OUT in self.comment

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> JobContext | None:
        """None when the environment names no numeric job id."""
        job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
        if not is_number(job_id):
            return None
        return cls(
            job_id=job_id,
            uid=_id(env.get("SLURM_JOB_UID")),
            gid=_id(env.get("SLURM_JOB_GID")),
            user=env.get("SLURM_JOB_USER", ""),
            comment=env.get("SLURM_JOB_COMMENT", ""),
            node_list=env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST", ""),
            exit_code=env.get("SLURM_JOB_EXIT_CODE2", ""),
            derived_exit_code=raw_status(env.get("SLURM_JOB_DERIVED_EC")),
            stdout_pattern=env.get("SLURM_JOB_STDOUT", ""),
            stderr_pattern=env.get("SLURM_JOB_STDERR", ""),
            work_dir=env.get("SLURM_JOB_WORK_DIR", ""),
            batch=bool(env.get("SLURM_JOB_STDIN")),
            oversubscribe=env.get("SLURM_JOB_OVERSUBSCRIBE", ""),
        )


@dataclass(frozen=True)
class JobView:
    """slurmctld's record (or what the environment gives when slurmctld is down), its nodes, its lead."""

    record: JobRecord
    nodes: tuple[str, ...]
    lead: str  # the batch host, or the first node of an srun-only job; "" when unknown
