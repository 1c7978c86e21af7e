"""What slurm-hooks asks of Slurm, and the command-line implementation (Slurm 22.05's CLI).

pyslurm is not used here: its releases build only against the exactly matching Slurm
(25.11 today) and fail against Debian's 22.05 and 24.11 (see README), so the CLI is the
one implementation that runs on every cluster we target.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from slurm_hooks.proc import TOOL_ENV, run_bounded

SEP = "\x1f"  # sacct field delimiter no comment can contain unnoticed (| and newlines can)
_KV = re.compile(r"(\w+)=(.*?)(?=\s+\w+=|\s*$)")


class SlurmError(Exception):
    """A Slurm command failed, timed out or answered something unusable."""


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
    std_err: str = ""
    work_dir: str = ""
    comment: str = ""
    admin_comment: str = ""


@dataclass(frozen=True)
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


def parse_show_job(text: str) -> dict[str, str]:
    """`scontrol show job` output: Key=Value pairs, values may hold spaces."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        for key, value in _KV.findall(line.strip()):
            out.setdefault(key, value)
    return out


# While the Epilog runs, slurmctld says COMPLETING; its Reason tells how the job ended.
_REASON_STATE = {"TimeLimit": "TIMEOUT", "NonZeroExitCode": "FAILED", "Prolog": "FAILED", "NodeDown": "NODE_FAIL",
                 "OutOfMemory": "OUT_OF_MEMORY"}


class SlurmCli:
    def __init__(self, timeout_s: float, accounting_timeout_s: float = 3600.0) -> None:
        self.timeout = timeout_s
        self.accounting_timeout = accounting_timeout_s  # a year of a large cluster takes sacct a while

    def _run(self, *argv: str) -> str:
        try:
            out = run_bounded(argv, self.timeout, env=TOOL_ENV)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{argv[0]} did not answer within {self.timeout:g}s") from None
        except OSError as exc:
            raise SlurmError(f"{argv[0]}: {exc.strerror or exc}") from None
        if out.returncode != 0:
            detail = (out.stderr or out.stdout).decode(errors="replace").strip().splitlines()
            raise SlurmError(f"{' '.join(argv[:3])}: exit {out.returncode}: {detail[-1] if detail else ''}")
        return out.stdout.decode(errors="replace")

    def job(self, job_id: str) -> JobRecord:
        """slurmctld's view (works while slurmdbd is down), with sacct's final state when it has one."""
        show = parse_show_job(self._run("scontrol", "show", "job", job_id))
        state = show.get("JobState", "")
        if state == "COMPLETING":
            clean_exit = show.get("ExitCode") == "0:0" and show.get("Reason") == "None"
            state = _REASON_STATE.get(show.get("Reason", ""), "COMPLETED" if clean_exit else state)
        try:
            row = self._run("sacct", "-n", "-X", "-P", f"--delimiter={SEP}", "-j", job_id, "-o",
                            "State,DerivedExitCode").splitlines()[0].split(SEP)
            state = row[0].split(" ")[0] or state
            derived = row[1]
        except (SlurmError, IndexError):
            derived = show.get("DerivedExitCode", "")
        return JobRecord(job_id=job_id, state=state, exit_code=show.get("ExitCode", ""), derived_exit_code=derived,
                         start=show.get("StartTime", ""), end=show.get("EndTime", ""),
                         node_list=show.get("NodeList", ""), batch_host=show.get("BatchHost", ""),
                         std_out=show.get("StdOut", ""), std_err=show.get("StdErr", ""),
                         work_dir=show.get("WorkDir", ""), comment=show.get("Comment", ""),
                         admin_comment=show.get("AdminComment", ""))

    def accounting_comments(self, job_id: str) -> tuple[str, str]:
        """(Comment, AdminComment) as stored in accounting."""
        out = self._run("sacct", "-n", "-X", "-P", f"--delimiter={SEP}", "-j", job_id, "-o", "Comment,AdminComment")
        fields = out.rstrip("\n").split(SEP)
        if len(fields) < 2:
            raise NotInAccountingYet(f"sacct: no accounting record for job {job_id} yet")
        # A comment holding a newline spills over lines; the delimiter still separates the fields.
        return fields[0], SEP.join(fields[1:]).rstrip("\n")

    def set_job_field(self, job_id: str, field: str, value: str) -> None:
        """sacctmgr is the one tool that edits a finished job (scontrol answers 'already finished')."""
        key = {"admin_comment": "AdminComment", "comment": "Comment"}[field]
        out = self._run("sacctmgr", "-i", "modify", "job", "where", f"jobid={job_id}", "set", f"{key}={value}")
        if "Nothing modified" in out:
            raise NotInAccountingYet(f"sacctmgr: job {job_id} not in accounting yet")

    def hostnames(self, node_list: str) -> list[str]:
        return self._run("scontrol", "show", "hostnames", node_list).split()

    def accounting_between(self, since: datetime, until: datetime) -> Iterator[AccountingRow]:
        """Every job (all users) in the window, streamed from sacct: memory stays flat for millions."""
        from slurm_hooks.slurm.accounting import sacct_argv, stream_rows

        yield from stream_rows(sacct_argv(since, until), self.accounting_timeout)
