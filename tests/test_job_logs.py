"""Reading the job's own files safely: the user's rights, no links, the tail only; output patterns."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.collect.job_logs import copy_as_user, copy_job_logs, expand_pattern, log_paths
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.slurm.job import JobContext

NOBODY = 65534


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("/home/alice/jobs/out/%j.out", "/home/alice/jobs/out/42.out"),
        ("/w/%u-%5j-%N.log", "/w/alice-00042-n1.log"),
        ("/w/100%%.out", "/w/100%.out"),
        ("/w/%x-%j.out", None),  # no job name in the Epilog: leave it to scontrol's expanded path
    ],
)
def test_output_patterns(pattern: str, expected: str | None) -> None:
    assert expand_pattern(pattern, "42", "alice", "n1") == expected


def test_log_paths_prefer_slurmctlds_then_patterns_then_the_default() -> None:
    ctx = JobContext(
        job_id="42", user="alice", stdout_pattern="/w/%j.out", stderr_pattern="/w/%x.err", work_dir="/w", batch=True
    )
    assert log_paths(JobRecord("42", std_out="/s/o", std_err="/dev/null"), ctx, "n1") == ["/s/o"]
    assert log_paths(JobRecord("42"), ctx, "n1") == ["/w/42.out"]
    assert log_paths(JobRecord("42"), JobContext(job_id="42", work_dir="/w", batch=True), "n1") == ["/w/slurm-42.out"]
    assert log_paths(JobRecord("42"), JobContext(job_id="42", work_dir="/w"), "n1") == []  # srun: no default file


def test_copy_reads_the_tail_and_records_what_was_skipped(tmp_path: Path) -> None:
    src = tmp_path / "job.out"
    src.write_bytes(b"a" * 1000 + b"THE END\n")
    with open(tmp_path / "copy", "wb") as out:
        got = copy_as_user(str(src), out, os.getuid(), os.getgid(), limit=100, timeout_s=30)
    assert got.ok and got.skipped_bytes == 908 and (tmp_path / "copy").read_bytes().endswith(b"THE END\n")
    assert len((tmp_path / "copy").read_bytes()) == 100


def test_copy_refuses_a_planted_symlink_and_fifos(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOPSECRET")
    link = tmp_path / "job.out"
    link.symlink_to(secret)
    fifo = tmp_path / "fifo.out"
    os.mkfifo(fifo)
    spool = Spool(str(tmp_path / "spool"))
    spool.bundle_dir("1")
    got = copy_job_logs(spool, "1", [str(link), str(fifo)], os.getuid(), os.getgid(), limit=1 << 20, timeout_s=30)
    assert not got[0].ok and "cannot open" in got[0].error
    assert not got[1].ok and "not a regular file" in got[1].error
    assert list((spool.job_dir("1") / "bundle/logs").iterdir()) == []  # no partial copies left


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another user needs root (the Epilog is root)")
def test_copy_uses_the_job_users_rights() -> None:
    """As nobody: a world-readable log is copied, a root-only file is refused by the reader itself."""
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own tmp dirs are private to root
    try:
        folder.chmod(0o755)
        public, private = folder / "public.out", folder / "root-only.out"
        public.write_text("fine\n")
        private.write_text("root's secret")
        private.chmod(0o600)
        python = "/usr/bin/python3"  # the test's interpreter may sit under /root, which nobody cannot enter
        with open(folder / "copy", "wb") as out:
            assert copy_as_user(str(public), out, NOBODY, NOBODY, 1 << 20, 30, python=python).ok
        assert (folder / "copy").read_text() == "fine\n"
        with open(folder / "copy2", "wb") as out:
            got = copy_as_user(str(private), out, NOBODY, NOBODY, 1 << 20, 30, python=python)
        assert not got.ok and got.error == "cannot open: Permission denied"
    finally:
        shutil.rmtree(folder)
