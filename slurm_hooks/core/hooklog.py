"""JSON-lines log for the hooks and commands, through structlog: one line per event, naming the hook,
the job and what happened.

Hooks have no terminal and Slurm throws their output away, so this file is where an operator
looks. Writing it must never fail a hook: on any error the line goes to stderr instead.

One logger for every hook and command: a structlog BoundLogger with `hook`, `job_id` and `pid`
bound, rendered by structlog's JSONRenderer into {"ts", "level", "hook", "job_id", "pid", "event",
...}, and written by `_LineFile` with one O_APPEND write() per line. structlog's import (~40 ms
here, `make bench`: bench/prolog_imports.py) is the price of the project's one logging library;
the Prolog pays it once per job start.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import MutableMapping
from typing import Any, Protocol

import structlog
from structlog.typing import Processor


class Log(Protocol):
    def info(self, event: str, **kv: Any) -> Any: ...
    def warning(self, event: str, **kv: Any) -> Any: ...
    def error(self, event: str, **kv: Any) -> Any: ...


def _timestamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"


def _append(path: str, line: str) -> None:
    """One write() of one line, so appends from parallel hooks never interleave; stderr if it fails."""
    try:
        if not path:
            raise OSError("no log file configured")
        # A planted symlink or FIFO must not redirect or block a root hook's writes.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK, 0o640)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(f"{path} is not a regular file")
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        sys.stderr.write(line)


class _LineFile:
    """structlog's output side: each rendered event is one appended line (stderr when the file fails)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def msg(self, message: str) -> None:
        _append(self.path, message + "\n")

    info = warning = error = msg


_CONTEXT = ("hook", "job_id", "pid")


def _order(_logger: Any, method: str, event: MutableMapping[str, Any]) -> dict[str, Any]:
    """The line's fixed head (ts, level, hook, job_id, pid, event), then the event's own keys."""
    head = {"ts": _timestamp(), "level": method}
    head.update((k, event.pop(k)) for k in _CONTEXT if k in event)
    head["event"] = event.pop("event")
    return {**head, **event}


_PROCESSORS: list[Processor] = [_order, structlog.processors.JSONRenderer(default=str)]


class HookLog:
    """The log of one hook or command run; `bind` adds context that every later line carries."""

    def __init__(self, path: str, hook: str, job_id: str | None = None, **context: Any) -> None:
        self.path = path
        self._log = structlog.BoundLogger(
            _LineFile(path), _PROCESSORS, {"hook": hook, "job_id": job_id, "pid": os.getpid(), **context}
        )

    def bind(self, **context: Any) -> HookLog:
        bound = HookLog.__new__(HookLog)
        bound.path, bound._log = self.path, self._log.bind(**context)
        return bound

    def info(self, event: str, **kv: Any) -> None:
        self._log.info(event, **kv)

    def warning(self, event: str, **kv: Any) -> None:
        self._log.warning(event, **kv)

    def error(self, event: str, **kv: Any) -> None:
        self._log.error(event, **kv)
