"""One Slurm call in a forked child, so that the per-call budget holds even for a C call that never
returns to Python: pyslurm's calls into libslurm hold the GIL for their whole length (with slurmctld
down, libslurm retries for longer than a hook's budget), so neither a thread nor a signal handler can
stop them. A child can be killed; the answer comes back through a pipe as pickled plain data.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import NoReturn, TypeVar

from slurm_hooks.core.proc import kill_group, killed_on_hook_exit
from slurm_hooks.slurm.client import SlurmError

T = TypeVar("T")


def call_forked(what: str, call: Callable[[], T], timeout_s: float) -> T:
    """`call()`'s result, computed in a child that is killed (with anything it started) after
    `timeout_s`. Whatever goes wrong comes back as a SlurmError naming `what`: a SlurmError raised
    in the child is raised here as it was (NotInAccountingYet stays NotInAccountingYet), any other
    exception becomes one, and so do a child that dies or does not answer in time."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _answer(what, call, write_end)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first, the group exists
        os.setpgid(pid, pid)
    os.close(write_end)
    answer: bytes | None = None
    with killed_on_hook_exit(pid):  # the hook's own budget running out kills the child too
        try:
            answer = _read_within(read_end, timeout_s)
        finally:
            os.close(read_end)
            if answer is None:  # out of time, or this process interrupted: the child goes now
                kill_group(pid)
            status = os.waitpid(pid, 0)[1]  # always reaped: no zombie is left behind
    if answer is None:
        raise SlurmError(f"{what} did not answer within {timeout_s:g}s")
    try:
        ok, value = pickle.loads(answer)  # our own child's bytes: the same code, forked a moment ago
    except Exception:
        raise SlurmError(f"{what}: {_ended(status)} before answering") from None
    if ok:
        return value  # type: ignore[no-any-return]
    raise value


def _answer(what: str, call: Callable[[], object], write_end: int) -> NoReturn:
    """The child: run the call, send (ok, value or SlurmError), and leave without running anything
    of the parent's (no atexit, no buffered output flushed twice, no test fixture)."""
    code = 0
    try:
        os.setpgid(0, 0)  # its own process group, so that kill_group ends what it may start as well
        reply: tuple[bool, object]
        try:
            reply = (True, call())
        except SlurmError as exc:
            reply = (False, exc)
        except Exception as exc:  # the Protocol promises SlurmError, whatever the library raised
            reply = (False, SlurmError(f"{what}: {type(exc).__name__}: {exc}"))
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(pickle.dumps(reply))
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _read_within(fd: int, timeout_s: float) -> bytes | None:
    """Everything up to end of file, or None once `timeout_s` has passed."""
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        return f"killed by signal {number} ({signal.strsignal(number)})"
    return f"exited {os.waitstatus_to_exitcode(status)}"
