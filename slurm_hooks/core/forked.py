"""Calls run side by side: the first in this process, each other one in a forked child at the same
time, its answer sent back pickled through a pipe as plain data.

The Epilog's diagnosis of a large job is pure-Python work on a node whose job has ended, so its
CPUs are free: a thousand-node job's log and kernel files scanned on two or more of them take a
fraction of the time (bench/scale.py). A child's answer crosses as `send` makes it (tuples of
strings and numbers pickle fast; objects that refer to the rule pack would drag copies of it) and
is made whole again by `receive`. A child that fails, dies or sends what cannot be read has its
call run again here, and `notes` says so: nothing is lost to a worker. A child leads its own
process group and is registered with core.proc, so a hook that runs out of time kills it with
everything else it started.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import threading
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from slurm_hooks.core.nogc import no_cycle_collector
from slurm_hooks.core.proc import kill_group, killed_on_hook_exit

T = TypeVar("T")


def cpus() -> int:
    return len(os.sched_getaffinity(0))


def run_side_by_side(
    calls: Sequence[Callable[[], T]], send: Callable[[T], object], receive: Callable[[object], T], notes: list[str]
) -> list[T]:
    """Each call's answer, in the order of `calls`."""
    if len(calls) <= 1 or _threads() > 1:  # a fork copies no other thread, only the locks it held
        return [call() for call in calls]
    with contextlib.ExitStack() as live:  # from its fork on, a child dies with a hook out of time
        children: list[tuple[int, int] | None] = []
        for call in calls[1:]:
            children.append(child := _start(call, send))
            if child is not None:
                live.enter_context(killed_on_hook_exit(child[0]))
        try:
            answers = [calls[0]()]
        except BaseException:
            for child in children:
                if child is not None:
                    _ended(child)
            raise
        for i, (call, child) in enumerate(zip(calls[1:], children, strict=True), start=1):
            ok, answer = _collect(child) if child is not None else (False, "could not fork")
            if ok:
                try:
                    answers.append(receive(answer))
                    continue
                except Exception as exc:  # not what `send` makes: the call is run here instead
                    answer = f"answered what could not be read ({type(exc).__name__})"
            notes.append(f"scan worker {i}: {answer}; its share was scanned again in the main process")
            answers.append(call())
    return answers


def _threads() -> int:
    """This process's threads, C libraries' own (NVML's) included where /proc shows them."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def _start(call: Callable[[], T], send: Callable[[T], object]) -> tuple[int, int] | None:
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:  # EAGAIN, ENOMEM: this process does it all
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:
        os.close(read_end)
        _answer(lambda: send(call()), write_end)
    os.close(write_end)
    with contextlib.suppress(OSError):  # as the child does: whichever runs first, the group exists
        os.setpgid(pid, pid)
    return pid, read_end


def _answer(call: Callable[[], object], write_end: int) -> NoReturn:
    """The child: its answer or what went wrong, then out without running anything of the parent's."""
    code = 0
    try:
        os.setpgid(0, 0)
        try:
            reply: tuple[bool, object] = (True, call())
        except Exception as exc:
            reply = (False, f"{type(exc).__name__}: {exc}")
        with os.fdopen(write_end, "wb") as pipe:
            pickle.dump(reply, pipe, protocol=pickle.HIGHEST_PROTOCOL)
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _collect(child: tuple[int, int]) -> tuple[bool, object]:
    try:
        with os.fdopen(child[1], "rb", closefd=False) as pipe:
            data = pipe.read()
    finally:
        status = _ended(child)
    try:
        with no_cycle_collector():  # tens of thousands of tuples, no cycle among them
            answer = pickle.loads(data)  # our own child's bytes, forked a moment ago
    except Exception:
        code = os.waitstatus_to_exitcode(status)
        return False, f"ended ({'signal ' + str(-code) if code < 0 else 'exit ' + str(code)}) without an answer"
    return answer if isinstance(answer, tuple) and len(answer) == 2 else (False, "answered nonsense")


def _ended(child: tuple[int, int]) -> int:
    """The child's wait status, once it is gone: one that closed its pipe and hung has nothing more to give."""
    pid, read_end = child
    os.close(read_end)
    kill_group(pid)
    return os.waitpid(pid, 0)[1]
