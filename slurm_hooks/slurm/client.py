"""What slurm-hooks asks of Slurm: the Protocol, the records and errors it speaks in, and what the
backends and the accounting stream share (the job's final state, the per-call field separator).

cli_backend.py is the command-line implementation (Slurm 22.05's CLI), which runs on every cluster
we target; pyslurm_backend.py is the in-process alternative where a pyslurm built for the running
Slurm is installed, and backend.py chooses between them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

# Field separators are per call and random: a job's own text (name, comment, paths) cannot hold
# one, so it cannot shift a field or forge a row the way `BatchHost=` in a job name or \x1f in a
# comment could with a fixed separator or `scontrol show job`'s Key=Value text.
SEP_BYTES = 8
SEP = "\x1f"  # the fixed delimiter of the accounting stream (slurm/accounting.py checks its field count)


class SlurmError(Exception):
    """A Slurm command failed, timed out or answered something unusable."""


# sacctmgr's last line when `modify job` matched no record: 22.05 says the first, 24.11 the second
# (after `Request didn't affect anything` on the line before); pyslurm 24.11 raises the second too.
NOT_IN_ACCOUNTING = ("didn't affect anything", "Data has not changed since time specified")


class NotInAccountingYet(SlurmError):
    """slurmdbd answers but has no record of the job yet (it arrives asynchronously)."""


@dataclass(frozen=True)
class JobRecord:
    job_id: str
    state: str = ""  # COMPLETED, FAILED, TIMEOUT, CANCELLED, ... (sacct form, first word)
    exit_code: str = ""  # exit:signal
    derived_exit_code: str = ""
    start: str = ""  # Slurm's local time, no zone
    end: str = ""
    node_list: str = ""
    batch_host: str = ""
    std_out: str = ""
    std_err: str = ""  # where stderr goes: stdout's file when the job has no --error (both backends)
    work_dir: str = ""
    comment: str = ""
    admin_comment: str = ""
    ntasks: int = 0  # Slurm's task count (NumTasks); 0: not known
    oversubscribe: str = ""  # Slurm's word (squeue's OverSubscribe, pyslurm's resource_sharing); "": not known


def nodes_shared(oversubscribe: str) -> bool | None:
    """Slurm's OverSubscribe word as "other jobs may run on these nodes meanwhile" (docs/DESIGN.md, job.json).

    Only NO is a node to the job alone (--exclusive, or a partition with OverSubscribe=EXCLUSIVE;
    a partition with OverSubscribe=FORCE says YES even for --exclusive, as measured on 22.05 and 24.11).
    YES is oversubscribed; OK (the usual answer) is dedicated CPUs, so with select/cons_tres other
    jobs may hold the node's other CPUs and GPUs; USER and MCS leave it to the same user's or
    security class's other jobs; TOPO shares by topology. Each is another job's process beside
    this one's. "" (slurmctld down, an older record) is not known.
    """
    word = oversubscribe.strip().upper()
    return None if not word else word != "NO"


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs 9x, and a report makes millions
class AccountingRow:
    """One job (sacct -X), values as Slurm gives them. A line that could not be read comes with an
    empty job_id (its text, cut short, in `comment`), so callers count it instead of losing it."""

    job_id: str
    state: str
    exit_code: str
    derived_exit_code: str
    start: str
    end: str
    elapsed_s: int
    node_list: str
    n_nodes: int
    n_gpus: int
    partition: str
    user: str
    account: str
    comment: str
    admin_comment: str


class Slurm(Protocol):
    def job(self, job_id: str) -> JobRecord: ...
    def accounting_between(self, since: datetime, until: datetime) -> Iterator[AccountingRow]: ...
    def accounting_comments(self, job_id: str) -> tuple[str, str]: ...
    def set_job_field(self, job_id: str, field: str, value: str) -> None: ...
    def hostnames(self, node_list: str) -> list[str]: ...
    def unfinished_jobs(self) -> frozenset[str]:
        """Every job id slurmctld has not seen end (running, pending, suspended, completing, ...):
        what retention must never touch. Raises SlurmError when Slurm cannot say (nothing is ruled out)."""
        ...


def fresh_separator() -> str:
    return f"\x1f{secrets.token_hex(SEP_BYTES)}\x1f"


# While the Epilog runs, slurmctld says COMPLETING; its Reason tells how the job ended.
_REASON_STATE = {
    "TimeLimit": "TIMEOUT",
    "NonZeroExitCode": "FAILED",
    "Prolog": "FAILED",
    "NodeDown": "NODE_FAIL",
    "OutOfMemory": "OUT_OF_MEMORY",
}


def final_state(state: str, exit_code: str, reason: str) -> str:
    """How a job ended, also while it is still COMPLETING (both backends read slurmctld this way)."""
    if state != "COMPLETING":
        return state
    return _REASON_STATE.get(reason, "COMPLETED" if exit_code == "0:0" and reason == "None" else state)


# States in which a job has ended, as accounting names them (sacct adds "by UID" to CANCELLED).
ENDED = frozenset(
    ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL", "DEADLINE")
)


def settled_state(stored: str, live: str) -> str:
    """Accounting's state once it says how the job ended; slurmctld's while accounting lags behind
    (slurmdbd may still say PENDING for a running job, or RUNNING for one the Epilog sees ending)."""
    first = stored.split(" ")[0]
    return first if first in ENDED else live
