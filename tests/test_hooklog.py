"""The hook log: a planted symlink or FIFO at `log_file` neither redirects nor blocks a root hook."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurm_hooks.hooklog import HookLog


def test_log_file_symlink_is_not_followed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "etc-shadow"
    target.write_text("root:x:0\n")
    link = tmp_path / "slurm-hooks.log"
    link.symlink_to(target)
    HookLog(str(link), "epilog", "5").info("evidence_collected")
    assert target.read_text() == "root:x:0\n" and link.is_symlink()
    assert '"event": "evidence_collected"' in capsys.readouterr().err  # the line went to stderr instead


def test_log_file_fifo_does_not_block(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "slurm-hooks.log"
    os.mkfifo(fifo)
    HookLog(str(fifo), "prolog", "5").error("x")  # no reader: a blocking open would hang here
    assert '"event": "x"' in capsys.readouterr().err


def test_log_file_regular_file_gets_the_line(tmp_path: Path) -> None:
    path = tmp_path / "slurm-hooks.log"
    HookLog(str(path), "prolog", "5").info("facts_written")
    assert '"event": "facts_written"' in path.read_text()
