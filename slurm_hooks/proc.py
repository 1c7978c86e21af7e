"""Subprocesses a hook can always get rid of: each in its own session, killed on timeout or on exit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Sequence

_live: set[int] = set()


def run_bounded(argv: Sequence[str], timeout_s: float, input_bytes: bytes | None = None,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Like subprocess.run(timeout=...), but the whole process group dies with it: a `sleep` forked
    by a hung helper must not outlive the hook. Raises subprocess.TimeoutExpired or OSError."""
    proc = subprocess.Popen(list(argv), stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, env=env)
    _live.add(proc.pid)
    try:
        out, err = proc.communicate(input_bytes, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise
    finally:
        _live.discard(proc.pid)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all() -> None:
    """Called when a hook runs out of time: nothing it started may be left behind."""
    for pid in list(_live):
        _kill_group(pid)
