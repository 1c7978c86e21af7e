"""Subprocesses a hook can always get rid of: each in its own session, killed on timeout or on exit."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator, Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess

_live: set[int] = set()
# Slurm gives hooks no PATH; the tools they run are parsed in the C locale.
TOOL_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}


def run_bounded(
    argv: Sequence[str],
    timeout_s: float,
    env: dict[str, str] | None = None,
    stdout: IO[bytes] | None = None,
    **popen: Any,
) -> subprocess.CompletedProcess[bytes]:
    """Like subprocess.run(timeout=...), but the whole process group dies with it: a `sleep` forked
    by a hung helper must not outlive the hook. `stdout` may be a file to write into directly;
    `popen` passes user/group/extra_groups. Raises subprocess.TimeoutExpired or OSError."""
    import subprocess  # here, not at the top: every hook imports kill_all, few run a command

    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=stdout or subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
        **popen,
    )
    with killed_on_hook_exit(proc.pid):
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


@contextlib.contextmanager
def killed_on_hook_exit(pid: int) -> Iterator[None]:
    """While the block runs, `pid`'s process group is one that kill_all ends (the pid leads its own group)."""
    _live.add(pid)
    try:
        yield
    finally:
        _live.discard(pid)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_all() -> None:
    """Called when a hook runs out of time: nothing it started may be left behind."""
    for pid in list(_live):
        kill_group(pid)
