"""The command-line implementation of the Slurm Protocol (client.py), on Slurm 22.05's CLI: squeue,
sacct, sacctmgr and scontrol, each field followed by a separator the job cannot know."""

from __future__ import annotations

import contextlib
import re
import subprocess
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import IO, Protocol

from slurm_hooks.core.layout import is_number
from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.slurm.client import (
    ENDED,
    NOT_IN_ACCOUNTING,
    AccountingRow,
    JobRecord,
    NotInAccountingYet,
    SlurmError,
    final_state,
    fresh_separator,
    settled_state,
)
from slurm_hooks.slurm.patterns import expand


class Runner(Protocol):
    def __call__(
        self, argv: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]: ...


def split_rows(text: str, sep: str, width: int) -> list[list[str]]:
    """Rows of `width` fields, each field followed by `sep` and each row by a newline (squeue -O
    with `sep` as every field's suffix, `sacct -p --delimiter=sep`). Counts are checked: output
    that does not fit this shape raises instead of shifting fields."""
    if not text:
        return []
    parts = text.split(sep)
    if parts[-1] != "\n" or (len(parts) - 1) % width:
        raise SlurmError(f"unexpected output shape ({len(parts) - 1} fields for rows of {width})")
    rows = [parts[i : i + width] for i in range(0, len(parts) - 1, width)]
    for row in rows[1:]:
        if not row[0].startswith("\n"):
            raise SlurmError("unexpected output shape (row not on its own line)")
        row[0] = row[0][1:]
    return rows


def wait_status(raw: str) -> str:
    """squeue's exit_code is a wait(2) status: 35584 -> 139:0, 11 -> 0:11 (scontrol's ExitCode form)."""
    if not raw.isdigit():
        return raw if re.fullmatch(r"\d+:\d+", raw) else ""
    status = int(raw)
    return f"0:{status & 0x7F}" if status & 0x7F else f"{status >> 8}:0"


_SQUEUE_FIELDS = (
    "JobID",
    "State",
    "Reason",
    "exit_code",
    "DerivedEC",
    "StartTime",
    "EndTime",
    "NodeList",
    "BatchHost",
    "STDOUT",
    "STDERR",
    "WorkDir",
    "Comment",
    "admin_comment",
    "Name",
    "UserName",
    "ArrayJobID",
    "ArrayTaskID",
    "NumTasks",
    "OverSubscribe",
)


_NOT_SET = ("N/A", "n/a", "(null)")  # squeue's words for a field with no value
_ID_STATE = re.compile(r"([0-9]{1,12}) ([A-Z_]{1,32})")  # `squeue -o "%A %T"`: job id, state in extended form
NOT_RUNNING = ENDED | {"REVOKED"}  # states of a job that has no process left anywhere (squeue's words)
UNFINISHED_MAX_BYTES = 64 << 20  # 1.5 million jobs at ~40 bytes a line: past it, Slurm is taken not to have said


def _output_path(show: dict[str, str], key: str) -> str:
    """squeue gives the --output/--error pattern; expand it as slurmctld does (scontrol's StdOut)."""
    pattern = show[key]
    if not pattern:
        return ""
    array = show["ArrayTaskID"] if show["ArrayTaskID"].isdigit() else None
    values = {
        "j": show["JobID"],
        "J": show["JobID"],
        "x": show["Name"],
        "u": show["UserName"],
        "N": show["BatchHost"],
        "n": "0",
        "t": "0",
        "s": "batch",
        "%": "%",
        "A": show["ArrayJobID"] if array else show["JobID"],
        **({"a": array} if array else {}),
    }
    return expand(pattern, values) or ""


def _count(raw: str) -> int:
    """squeue's NumTasks; 0 when it prints none (N/A) or something no job can have."""
    return int(raw) if is_number(raw) and len(raw) <= 10 and int(raw) < 1 << 31 else 0


class SlurmCli:
    """Slurm's commands; `runner` is run_bounded, or a test's recorded answers."""

    def __init__(self, timeout_s: float, accounting_timeout_s: float = 3600.0, runner: Runner = run_bounded) -> None:
        self.timeout = timeout_s
        self.accounting_timeout = accounting_timeout_s  # a year of a large cluster takes sacct a while
        self.runner = runner

    def _run(self, *argv: str) -> str:
        try:
            out = self.runner(argv, self.timeout, env=TOOL_ENV)
        except subprocess.TimeoutExpired:
            raise SlurmError(f"{argv[0]} did not answer within {self.timeout:g}s") from None
        except OSError as exc:
            raise SlurmError(f"{argv[0]}: {exc.strerror or exc}") from None
        if out.returncode != 0:
            detail = (out.stderr or out.stdout).decode(errors="replace").strip().splitlines()
            raise SlurmError(f"{' '.join(argv[:3])}: exit {out.returncode}: {detail[-1] if detail else ''}")
        return out.stdout.decode(errors="replace")

    def job(self, job_id: str) -> JobRecord:
        """slurmctld's view (works while slurmdbd is down), with sacct's final state when it has one.

        squeue, not `scontrol show job`: its Key=Value text cannot be split safely, since a job
        name or comment may itself hold ` BatchHost=x ExitCode=0:0`, and two such fields with
        keys between them are ambiguous whatever the parser. squeue prints fields we choose,
        each followed by a separator the job cannot know.
        """
        sep = fresh_separator()
        fmt = ",".join(f"{name}:0{sep}" for name in _SQUEUE_FIELDS)  # width 0: never cut
        rows = split_rows(self._run("squeue", "-h", "-t", "all", "-j", job_id, "-O", fmt), sep, len(_SQUEUE_FIELDS))
        ours = [dict(zip(_SQUEUE_FIELDS, row, strict=True)) for row in rows if row[0] == job_id]
        if len(ours) != 1:
            raise SlurmError(f"squeue: {len(ours)} records for job {job_id}")
        show = {k: "" if v in _NOT_SET else v for k, v in ours[0].items()}
        exit_code = wait_status(show["exit_code"])
        state = final_state(show["State"], exit_code, show["Reason"])
        derived = wait_status(show["DerivedEC"])
        try:
            final, derived_final = self._accounting(job_id, "State", "DerivedExitCode")
            state, derived = settled_state(final, state), derived_final or derived
        except SlurmError:
            pass
        return JobRecord(
            job_id=job_id,
            state=state,
            exit_code=exit_code,
            derived_exit_code=derived,
            start=show["StartTime"],
            end=show["EndTime"],
            node_list=show["NodeList"],
            batch_host=show["BatchHost"],
            std_out=_output_path(show, "STDOUT"),
            std_err=_output_path(show, "STDERR") or _output_path(show, "STDOUT"),  # no --error: stdout's file
            work_dir=show["WorkDir"],
            comment=show["Comment"],
            admin_comment=show["admin_comment"],
            ntasks=_count(show["NumTasks"]),
            oversubscribe=show["OverSubscribe"],
        )

    def _accounting(self, job_id: str, *fields: str) -> list[str]:
        """One job's fields from sacct (-X: the job, not its steps); NotInAccountingYet when absent."""
        sep = fresh_separator()
        out = self._run(
            "sacct", "-n", "-X", "-p", f"--delimiter={sep}", "-j", job_id, "-o", ",".join(("JobIDRaw", *fields))
        )
        rows = [row for row in split_rows(out, sep, len(fields) + 1) if row[0] == job_id]
        if not rows:
            raise NotInAccountingYet(f"sacct: no accounting record for job {job_id} yet")
        return rows[-1][1:]

    def accounting_comments(self, job_id: str) -> tuple[str, str]:
        """(Comment, AdminComment) as stored in accounting."""
        comment, admin = self._accounting(job_id, "Comment", "AdminComment")
        return comment, admin

    def set_job_field(self, job_id: str, field: str, value: str) -> None:
        """sacctmgr is the one tool that edits a finished job (scontrol answers 'already finished')."""
        key = {"admin_comment": "AdminComment", "comment": "Comment"}[field]
        try:
            out = self._run("sacctmgr", "-i", "modify", "job", "where", f"jobid={job_id}", "set", f"{key}={value}")
        except SlurmError as exc:  # no record matched: exit 1 (the contract test shows it)
            if not any(words in str(exc) for words in NOT_IN_ACCOUNTING):
                raise
            out = "Nothing modified"
        if "Nothing modified" in out:
            raise NotInAccountingYet(f"sacctmgr: job {job_id} not in accounting yet")

    def clusters(self) -> list[str]:
        """Every cluster this slurmdbd serves (`report --clusters all`)."""
        return sorted({c for c in self._run("sacctmgr", "-n", "-P", "list", "clusters", "format=Cluster").split() if c})

    def hostnames(self, node_list: str) -> list[str]:
        return self._run("scontrol", "show", "hostnames", node_list).split()

    def unfinished_jobs(self) -> frozenset[str]:
        """Job ids whose state is not one of the ended ones (client.ENDED, and REVOKED: a federation
        sibling that runs elsewhere). All states, then filtered here, rather than a `-t` list of the
        unfinished: a state this code does not know (a later Slurm's) counts as unfinished, and no
        state name an older squeue lacks can make it refuse the call. No `-r`: pending array tasks
        not yet split off have no job id of their own (so no directory), and stay one line."""
        out = self._run("squeue", "-h", "-a", "-t", "all", "-o", "%A %T")
        if len(out) > UNFINISHED_MAX_BYTES:
            raise SlurmError(f"squeue: more than {UNFINISHED_MAX_BYTES >> 20} MiB of jobs; not read")
        unfinished = set()
        for line in out.splitlines():
            row = _ID_STATE.fullmatch(line)
            if row is None:
                raise SlurmError(f"squeue: unexpected line {line[:80]!r}")
            if row[2] not in NOT_RUNNING:
                unfinished.add(row[1])
        return frozenset(unfinished)

    def accounting_between(self, since: datetime, until: datetime) -> Iterator[AccountingRow]:
        """Every job (all users) in the window, streamed from sacct: memory stays flat for millions."""
        from slurm_hooks.slurm.accounting import parse_rows

        with self.accounting_output(since, until) as (out, sep):
            yield from parse_rows(out, sep)

    @contextlib.contextmanager
    def accounting_output(self, since: datetime, until: datetime, cluster: str = "") -> Iterator[tuple[IO[bytes], str]]:
        """sacct's own output for the window and its separator, unparsed: the report parses it on
        every CPU (accounting.records, then parse_record in each worker). `cluster`: sacct -M."""
        from slurm_hooks.slurm.accounting import sacct_argv, sacct_output

        sep = fresh_separator()  # no comment can hold it, so none can forge a row
        with sacct_output(sacct_argv(since, until, sep, cluster), self.accounting_timeout) as out:
            yield out, sep
