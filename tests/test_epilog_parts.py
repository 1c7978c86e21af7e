"""Epilog building blocks: reading user files safely, exit statuses, output patterns, spool and outbox."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from slurm_hooks.delivery import Tally, deliver_backlog
from slurm_hooks.evidence import raw_status
from slurm_hooks.hooklog import HookLog
from slurm_hooks.joblogs import copy_as_user, expand_pattern
from slurm_hooks.slurm.client import JobRecord, SlurmError
from slurm_hooks.spool import Spool

NOBODY = 65534


@pytest.mark.parametrize(("raw", "expected"), [("0", "0:0"), ("11", "0:11"), ("256", "1:0"), ("253", "0:125"),
                                               ("35584", "139:0"), ("", ""), ("x", "")])
def test_derived_exit_code_is_a_wait_status(raw: str, expected: str) -> None:
    assert raw_status(raw) == expected


@pytest.mark.parametrize(("pattern", "expected"), [
    ("/home/alice/jobs/out/%j.out", "/home/alice/jobs/out/42.out"),
    ("/w/%u-%5j-%N.log", "/w/alice-00042-n1.log"),
    ("/w/100%%.out", "/w/100%.out"),
    ("/w/%x-%j.out", None),  # no job name in the Epilog: leave it to scontrol's expanded path
])
def test_output_patterns(pattern: str, expected: str | None) -> None:
    assert expand_pattern(pattern, "42", "alice", "n1") == expected


def test_copy_reads_the_tail_and_records_what_was_skipped(tmp_path: Path) -> None:
    src = tmp_path / "job.out"
    src.write_bytes(b"a" * 1000 + b"THE END\n")
    got = copy_as_user(str(src), tmp_path / "copy", os.getuid(), os.getgid(), limit=100, timeout_s=30)
    assert got.ok and got.skipped_bytes == 908 and (tmp_path / "copy").read_bytes().endswith(b"THE END\n")
    assert len((tmp_path / "copy").read_bytes()) == 100


def test_copy_refuses_a_planted_symlink_and_fifos(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOPSECRET")
    link = tmp_path / "job.out"
    link.symlink_to(secret)
    got = copy_as_user(str(link), tmp_path / "copy", os.getuid(), os.getgid(), limit=1 << 20, timeout_s=30)
    assert not got.ok and "cannot open" in got.error and not (tmp_path / "copy").exists()
    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    got = copy_as_user(str(fifo), tmp_path / "copy2", os.getuid(), os.getgid(), limit=1 << 20, timeout_s=30)
    assert not got.ok and "not a regular file" in got.error


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root (the Epilog is root)")
def test_copy_uses_the_job_users_rights(tmp_path: Path) -> None:
    private = tmp_path / "root-only.out"
    private.write_text("root's secret")
    private.chmod(0o600)
    tmp_path.chmod(0o755)
    got = copy_as_user(str(private), tmp_path / "copy", NOBODY, NOBODY, limit=1 << 20, timeout_s=30)
    assert not got.ok and "Permission denied" in got.error


class FlakySlurm:
    """Accounting that is down until `up` is set; records what was written."""

    def __init__(self) -> None:
        self.up = False
        self.fields: dict[str, tuple[str, str]] = {}
        self.calls = 0

    def job(self, job_id: str) -> JobRecord:
        return JobRecord(job_id=job_id)

    def hostnames(self, node_list: str) -> list[str]:
        return [node_list]

    def accounting_comments(self, job_id: str) -> tuple[str, str]:
        self.calls += 1
        if not self.up:
            raise SlurmError("sacct: slurmdbd: Connection refused")
        return self.fields.get(job_id, ("", ""))

    def set_job_field(self, job_id: str, field: str, value: str) -> None:
        comment, admin = self.fields.get(job_id, ("", ""))
        self.fields[job_id] = (value, admin) if field == "comment" else (comment, value)


def test_outbox_keeps_everything_until_accounting_returns(tmp_path: Path) -> None:
    spool, slurm, log = Spool(str(tmp_path)), FlakySlurm(), HookLog(str(tmp_path / "log"), "test")
    for job in ("1", "2", "3"):
        spool.queue_annotation(job, "admin_comment", f"slurm-hooks/v1 label=success job={job}")
    down = deliver_backlog(spool, slurm, log, budget_s=10, retention_days=30)
    assert (down.delivered, down.pending) == (0, 3) and slurm.calls == 1  # stops at the first refusal
    slurm.up = True
    back = deliver_backlog(spool, slurm, log, budget_s=10, retention_days=30)
    assert back.delivered == 3 and spool.pending() == []
    assert slurm.fields["2"][1] == "slurm-hooks/v1 label=success job=2"


def test_outbox_drops_old_and_quarantines_corrupt_entries(tmp_path: Path) -> None:
    spool, slurm = Spool(str(tmp_path)), FlakySlurm()
    old = spool.queue_annotation("7", "admin_comment", "slurm-hooks/v1 label=x")
    entry = json.loads(old.read_text())
    old.write_text(json.dumps({**entry, "queued_at": time.time() - 40 * 86400}))
    (spool.outbox / "8.json").write_text("{half a fi")
    tally = deliver_backlog(spool, slurm, HookLog(str(tmp_path / "log"), "t"), budget_s=10, retention_days=30)
    assert tally == Tally(dropped=1) and (spool.outbox / "8.corrupt").exists()


def test_prune_by_age_then_size(tmp_path: Path) -> None:
    spool = Spool(str(tmp_path))
    for job, age_days, size in (("1", 40, 10), ("2", 5, 3 << 20), ("3", 1, 10)):
        bundle = spool.bundle_dir(job)
        (bundle / "logs" / "big").write_bytes(b"x" * size)
        then = time.time() - age_days * 86400
        os.utime(spool.job_dir(job), (then, then))
    assert spool.prune(retention_days=30, max_mb=1) == ["1", "2"]
    assert spool.job_dir("3").exists()


def test_a_job_not_yet_in_accounting_does_not_stop_the_backlog(tmp_path: Path) -> None:
    from slurm_hooks.slurm.client import NotInAccountingYet

    class Lagging(FlakySlurm):
        def accounting_comments(self, job_id: str) -> tuple[str, str]:
            if job_id == "1":
                raise NotInAccountingYet("sacct: no accounting record for job 1 yet")
            return ("", "")

    spool, slurm = Spool(str(tmp_path)), Lagging()
    for job in ("1", "2", "3"):
        spool.queue_annotation(job, "admin_comment", f"slurm-hooks/v1 label=success job={job}")
    tally = deliver_backlog(spool, slurm, HookLog(str(tmp_path / "log"), "t"), budget_s=10, retention_days=30)
    assert (tally.delivered, tally.pending) == (2, 1)
    assert [entry["job_id"] for _, entry in spool.pending()] == ["1"]
