"""The hook log: a planted symlink or FIFO at `log_file` neither redirects nor blocks a root hook."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from slurm_hooks.core.hooklog import HookLog


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


def test_lines_come_from_structlog_with_bound_context(tmp_path: Path) -> None:
    """One JSON object per line, head first: ts, level, hook, job_id, pid, event, then the event's keys."""
    import json

    import structlog

    path = tmp_path / "slurm-hooks.log"
    log = HookLog(str(path), "epilog", "77")
    assert isinstance(log._log, structlog.BoundLogger)
    log.warning("slurm_backend_fallback", reason="no pyslurm")
    log.bind(node="gb-r07-c02").info("evidence_collected", logs=[{"ok": True}])
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert list(first)[:6] == ["ts", "level", "hook", "job_id", "pid", "event"]
    assert (first["level"], first["hook"], first["job_id"], first["reason"]) == (
        "warning",
        "epilog",
        "77",
        "no pyslurm",
    )
    assert second["node"] == "gb-r07-c02" and second["logs"] == [{"ok": True}] and second["pid"] == os.getpid()
