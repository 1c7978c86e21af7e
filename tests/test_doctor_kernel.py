"""The doctor's kernel_log check: no journal and no /dev/kmsg is said with the fix (kmsg-follow);
a configured kernel_log_file that is not there fails; kmsg-follow's counts are shown."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

from slurm_hooks.config import Config
from slurm_hooks.doctor import DoctorDeps
from slurm_hooks.doctor.checks import check_kernel_log
from tests.fakes import GB200, RecordedGpu


def no_journal(argv: Sequence[str], timeout_s: float) -> subprocess.CompletedProcess[bytes]:
    return subprocess.CompletedProcess(list(argv), 1, b"", b"No journal files were found.")


def deps(kmsg: Path) -> DoctorDeps:
    return DoctorDeps(gpu=RecordedGpu(GB200), run=no_journal, slurm_backend=lambda _c: "cli", kmsg=str(kmsg))


def test_no_journal_and_no_kmsg_is_a_warning_whose_fix_is_kmsg_follow(tmp_path: Path) -> None:
    found = check_kernel_log(Config(), deps(tmp_path / "kmsg"))
    assert found.status == "warn" and "No such file or directory" in found.detail and "skipped" in found.detail
    assert "slurm-hooks kmsg-follow --output FILE" in found.fix and "kernel_log_file: FILE" in found.fix


def test_a_readable_kmsg_is_enough(tmp_path: Path) -> None:
    (tmp_path / "kmsg").write_text("")
    assert check_kernel_log(Config(), deps(tmp_path / "kmsg")).status == "ok"


def test_a_configured_file_that_is_not_there_fails_with_the_command_that_writes_it(tmp_path: Path) -> None:
    path = tmp_path / "kernel.log"
    found = check_kernel_log(Config(kernel_log_file=str(path)), deps(tmp_path / "kmsg"))
    assert found.status == "fail" and f"kmsg-follow --output {path}" in found.fix


def test_kmsg_follows_counts_are_shown(tmp_path: Path) -> None:
    path = tmp_path / "kernel.log"
    path.write_text("")
    Path(f"{path}.state").write_text(json.dumps({"written": 12, "dropped": 3, "lost": 0, "seq": 14}))
    found = check_kernel_log(Config(kernel_log_file=str(path)), deps(tmp_path / "kmsg"))
    assert found.status == "ok" and "wrote 12, dropped 3 (output failed), lost 0" in found.detail
