"""The job as a post-job hook sees it: Slurm's environment parsed once into a typed context,
slurmctld's record with the job's nodes and its lead node, and which run of the job this is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

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


def _digits(value: str | None, most: int = 20) -> str:
    return value if value and is_number(value) and len(value) <= most else ""


_SLUID = re.compile(r"[0-9a-z]{1,40}")  # Slurm's SLUID, lowercased: it becomes part of a file name


def _sluid(value: str | None) -> str:
    return value.lower() if value and _SLUID.fullmatch(value.lower()) else ""


def wait_status(code: str) -> str:
    """`exit:signal` back to the wait(2) status SLURM_JOB_DERIVED_EC holds (raw_status's inverse)."""
    exit_, _, signal = code.partition(":")
    if not is_number(exit_) or not is_number(signal) or len(code) > 10:
        return ""
    return str(int(signal) if int(signal) else int(exit_) << 8)


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
    sluid: str = ""  # SLURM_JOB_SLUID (25.11 on): one id per run of the job
    restart_count: str = ""  # SLURM_JOB_RESTART_COUNT (every version's Epilog): digits
    start_time: str = ""  # SLURM_JOB_START_TIME (24.11 on): the run's start, epoch seconds

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
            sluid=_sluid(env.get("SLURM_JOB_SLUID")),
            restart_count=_digits(env.get("SLURM_JOB_RESTART_COUNT"), 10),
            start_time=_digits(env.get("SLURM_JOB_START_TIME")),
        )

    def to_env(self) -> dict[str, str]:
        """The environment `from_env` reads this context back from (a queued run decided later)."""
        values = {
            "SLURM_JOB_ID": self.job_id,
            "SLURM_JOB_UID": "" if self.uid is None else str(self.uid),
            "SLURM_JOB_GID": "" if self.gid is None else str(self.gid),
            "SLURM_JOB_DERIVED_EC": wait_status(self.derived_exit_code),
            "SLURM_JOB_STDIN": "/dev/null" if self.batch else "",
            **{env: getattr(self, name) for name, env in _TEXT_VARS.items()},
        }
        return {k: v for k, v in values.items() if v}


_TEXT_VARS = {  # JobContext fields held as Slurm gave them (from_env checks them again on the way back)
    "user": "SLURM_JOB_USER",
    "comment": "SLURM_JOB_COMMENT",
    "node_list": "SLURM_JOB_NODELIST",
    "exit_code": "SLURM_JOB_EXIT_CODE2",
    "stdout_pattern": "SLURM_JOB_STDOUT",
    "stderr_pattern": "SLURM_JOB_STDERR",
    "work_dir": "SLURM_JOB_WORK_DIR",
    "oversubscribe": "SLURM_JOB_OVERSUBSCRIBE",
    "sluid": "SLURM_JOB_SLUID",
    "restart_count": "SLURM_JOB_RESTART_COUNT",
    "start_time": "SLURM_JOB_START_TIME",
}
ENV_VARS = frozenset(
    ("SLURM_JOB_ID", "SLURM_JOB_UID", "SLURM_JOB_GID", "SLURM_JOB_DERIVED_EC", "SLURM_JOB_STDIN", *_TEXT_VARS.values())
)  # what `to_env` writes


@dataclass(frozen=True)
class JobView:
    """slurmctld's record (or what the environment gives when slurmctld is down), its nodes, its lead."""

    record: JobRecord
    nodes: tuple[str, ...]
    lead: str  # the batch host, or the first node of an srun-only job; "" when unknown (nobody guesses)
    known: bool = True  # `record` is slurmctld's; False: the environment's stand-in (slurmctld did not answer)


_RUN_PARTS = {"s": "sluid", "r": "restart", "t": "start", "l": "started"}


@dataclass(frozen=True)
class RunId:
    """Which run of a job this is: a requeue starts a new run under the same job id, and so does
    Slurm's job id wrapping round. One notion for the spool's part markers, the decision marker and
    the record (`run=`), made of what every node of one run is told alike, so nodes agree on it
    whatever their clocks: the SLUID (25.11 on), the restart count (every version's Epilog), the
    start time in the environment (24.11 on), else slurmctld's Start (22.05, when it answers).

    Two runs are the same when no part both know differs: a node that could not reach slurmctld
    (no `started`) still counts for the lead that could, while a requeue (restart count) or a reused
    id (start time, SLUID) differs in a part both know. Each part is digits or lowercase base32.
    """

    sluid: str = ""
    restart: str = ""
    start: str = ""  # epoch seconds
    started: str = ""  # slurmctld's Start in its own local time, as digits: compared, never converted

    @classmethod
    def of(cls, ctx: JobContext, record: JobRecord | None = None) -> RunId:
        started = re.sub(r"[^0-9]", "", record.start) if record is not None and not ctx.start_time else ""
        return cls(
            _sluid(ctx.sluid),  # checked again: a context is also built by hand (tests, a queued run)
            _digits(ctx.restart_count, 10),
            _digits(ctx.start_time),
            started if 8 <= len(started) <= 14 else "",
        )

    @classmethod
    def parse(cls, tag: str) -> RunId | None:
        """A `tag` back into its parts; None when it is not one (a marker this version did not write)."""
        parts: dict[str, str] = {}
        for piece in tag.split("-") if tag else []:
            name = _RUN_PARTS.get(piece[:1])
            if name is None or name in parts or not _SLUID.fullmatch(piece[1:]):
                return None
            parts[name] = piece[1:]
        return cls(**parts)

    @property
    def tag(self) -> str:
        """`s<sluid>-r<restarts>-t<epoch>-l<start>`, the parts known: a file-name and record-safe text."""
        return "-".join(k + getattr(self, name) for k, name in _RUN_PARTS.items() if getattr(self, name))

    def same_run(self, other: RunId) -> bool:
        return all(
            getattr(self, f.name) == getattr(other, f.name)
            for f in fields(self)
            if getattr(self, f.name) and getattr(other, f.name)
        )
