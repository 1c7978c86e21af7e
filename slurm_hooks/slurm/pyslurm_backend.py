"""The Slurm Protocol through pyslurm: libslurm, no command to start and no text to parse.

Built for the pyslurm release line that matches the running Slurm (backend.py checks that before
this class is made). Differences from the CLI, on purpose visible:
* comments keep case and quotes (sacctmgr 22.05 lowercases them and turns quotes into backticks);
* pyslurm reads exit codes through WEXITSTATUS and takes 128 off codes >= 128, so a batch script
  that ends with `exit 139` reads 11:0 here and 139:0 through scontrol (the Epilog takes the exit
  code from SLURM_JOB_EXIT_CODE2 anyway);
* pyslurm 22.5's accounting job has no AllocTRES, so `n_gpus` in `accounting_between` is 0.
* libslurm's calls hold the GIL and have no timeout we can set (with slurmctld down one Epilog took
  18 s against a 10 s budget), so every call a hook makes runs in a forked child, killed after the
  per-call budget (bounded.py), as the CLI backend bounds each command. `accounting_between`
  (the report's range read, an admin's command with no hook budget) and `hostnames` (parsed
  locally by libslurm, no RPC) stay in-process.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from types import ModuleType

from slurm_hooks.core.times import system_zone
from slurm_hooks.slurm.bounded import call_forked
from slurm_hooks.slurm.cli_backend import NOT_RUNNING, SlurmCli
from slurm_hooks.slurm.client import (
    NOT_IN_ACCOUNTING,
    AccountingRow,
    JobRecord,
    NotInAccountingYet,
    SlurmError,
    final_state,
    settled_state,
)


def _stamp(epoch: int | None) -> str:
    """Slurm's own text form: naive time in the system's zone, 'Unknown' when unset (what scontrol
    and sacct print, run without TZ: proc.TOOL_ENV). Not this process's zone: a TZ that differs
    from /etc/localtime would shift the kernel window by the difference (node_part.job_window
    reads these times in the system's zone)."""
    return datetime.fromtimestamp(epoch, system_zone()[1]).strftime("%Y-%m-%dT%H:%M:%S") if epoch else "Unknown"


def _exit(code: int | None, signal: int | None) -> str:
    return f"{code or 0}:{signal or 0}"


@dataclass(frozen=True)
class Stored:
    """What the hooks read of a job's accounting record: plain data, so it crosses the fork's pipe."""

    state: str
    derived_exit_code: str
    comment: str
    admin_comment: str


class SlurmPyslurm:
    def __init__(self, pyslurm: ModuleType, timeout_s: float, cli: SlurmCli | None = None) -> None:
        self.ps = pyslurm
        self.timeout = timeout_s  # per call, as SlurmCli's per command
        self.cli = cli or SlurmCli(timeout_s)  # what unfinished_jobs asks when pyslurm cannot

    @contextlib.contextmanager
    def _call(self, what: str) -> Iterator[None]:
        """pyslurm's errors as the Protocol's, for the calls made in-process."""
        try:
            yield
        except (self.ps.PyslurmError, ValueError, OSError) as exc:
            raise SlurmError(f"pyslurm {what}: {type(exc).__name__}: {exc}") from None

    def job(self, job_id: str) -> JobRecord:
        """slurmctld's view (works while slurmdbd is down), with accounting's final state when it has one."""
        record = call_forked("pyslurm Job.load", lambda: self._live(job_id), self.timeout)
        try:
            stored = call_forked("pyslurm db.Jobs.load", lambda: self._stored(job_id), self.timeout)
        except SlurmError:
            return record
        return replace(
            record, state=settled_state(stored.state, record.state), derived_exit_code=stored.derived_exit_code
        )

    def accounting_comments(self, job_id: str) -> tuple[str, str]:
        stored = call_forked("pyslurm db.Jobs.load", lambda: self._stored(job_id), self.timeout)
        return stored.comment, stored.admin_comment

    def set_job_field(self, job_id: str, field: str, value: str) -> None:
        """Through slurmdbd (a finished job's live record refuses changes): db.Jobs.modify with a JobFilter."""
        call_forked("pyslurm db.Jobs.modify", lambda: self._modify(job_id, field, value), self.timeout)

    # The three below run in the forked child: they return plain data or raise SlurmError.

    def _live(self, job_id: str) -> JobRecord:
        live = self.ps.Job.load(int(job_id))
        exit_code = _exit(live.exit_code, live.exit_code_signal)
        end = live.end_time
        if live.time_limit is None and end and end > time.time():  # as scontrol: no limit, not ended yet
            end = None
        return JobRecord(
            job_id=job_id,
            state=final_state(live.state or "", exit_code, live.state_reason or ""),
            exit_code=exit_code,
            derived_exit_code=_exit(live.derived_exit_code, live.derived_exit_code_signal),
            start=_stamp(live.start_time),
            end=_stamp(end),
            node_list=live.allocated_nodes or "",
            batch_host=live.batch_host or "",
            std_out=live.standard_output or "",
            std_err=live.standard_error or live.standard_output or "",  # no --error: stdout's file (as 24.11 says)
            work_dir=live.working_directory or "",
            comment=live.comment or "",
            admin_comment=live.admin_comment or "",
            ntasks=int(live.ntasks or 0),
            oversubscribe=live.resource_sharing or "",  # slurm_job_share_string, squeue's words
        )

    def _stored(self, job_id: str) -> Stored:
        """The accounting record; a JobFilter, never a Jobs collection (pyslurm bug)."""
        jobs = self.ps.db.Jobs.load(self.ps.db.JobFilter(ids=[int(job_id)]))
        found = [job for job in jobs.values() if str(job.id) == job_id]
        if not found:
            raise NotInAccountingYet(f"pyslurm: no accounting record for job {job_id} yet")
        job = found[0]
        return Stored(
            state=job.state or "",
            derived_exit_code=_exit(job.derived_exit_code, job.derived_exit_code_signal),
            comment=job.comment or "",
            admin_comment=job.admin_comment or "",
        )

    def _modify(self, job_id: str, field: str, value: str) -> None:
        try:
            changed = self.ps.db.Jobs.modify(self.ps.db.JobFilter(ids=[int(job_id)]), self.ps.db.Job(**{field: value}))
        except self.ps.PyslurmError as exc:  # 22.5: "Nothing was modified"; 24.11: NOT_IN_ACCOUNTING's
            if not any(words in str(exc) for words in ("Nothing was modified", *NOT_IN_ACCOUNTING)):
                raise
            changed = []
        if int(job_id) not in changed:
            raise NotInAccountingYet(f"pyslurm: job {job_id} not in accounting yet")

    def unfinished_jobs(self) -> frozenset[str]:
        """slurmctld's job table, read as the CLI backend reads squeue's; when pyslurm fails (or
        slurmctld does not answer it in time), squeue is asked, as the CLI backend asks it."""
        try:
            return call_forked("pyslurm Jobs.load", self._unfinished, self.timeout)
        except SlurmError:
            return self.cli.unfinished_jobs()

    def _unfinished(self) -> frozenset[str]:
        """In the forked child: slurm_job_state_string's words, as squeue's %T prints them."""
        jobs = self.ps.Jobs.load()
        return frozenset(str(job.id) for job in jobs.values() if (job.state or "") not in NOT_RUNNING)

    def hostnames(self, node_list: str) -> list[str]:
        with self._call("nodelist_from_range_str"):
            return list(self.ps.utils.nodelist_from_range_str(node_list))

    def accounting_between(self, since: datetime, until: datetime) -> Iterator[AccountingRow]:
        """Every job (all users) in the window, like `sacct -a -X -S since -E until`."""
        window = self.ps.db.JobFilter(start_time=int(since.timestamp()), end_time=int(until.timestamp()))
        with self._call("db.Jobs.load"):
            jobs = self.ps.db.Jobs.load(window)
        for job in sorted(jobs.values(), key=lambda j: int(j.id)):
            yield AccountingRow(
                job_id=str(job.id),
                state=job.state or "",
                exit_code=_exit(job.exit_code, job.exit_code_signal),
                derived_exit_code=_exit(job.derived_exit_code, job.derived_exit_code_signal),
                start=_stamp(job.start_time),
                end=_stamp(job.end_time),
                elapsed_s=int(job.elapsed_time or 0),
                node_list=job.nodelist or "",
                n_nodes=int(job.num_nodes or 0),
                n_gpus=0,
                partition=job.partition or "",
                user=job.user_name or "",
                account=job.account or "",
                comment=job.comment or "",
                admin_comment=job.admin_comment or "",
            )
