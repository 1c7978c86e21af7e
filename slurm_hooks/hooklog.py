"""JSON-lines log for the hooks: one line per event, naming the hook, the job and what happened.

Hooks have no terminal and Slurm throws their output away, so this file is where an operator
looks. Writing it must never fail a hook: on any error the line goes to stderr instead.

Two writers, one format ({"ts", "level", "hook", "job_id", "pid", "event", ...}):
* `HookLog`, dependency-free, for the Prolog: it sits on every job start and structlog's import
  costs 60-130 ms (it pulls in asyncio; measured with `python -X importtime`);
* `structured()`, structlog with a JSON renderer, for everything that runs after the job.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import MutableMapping
from typing import Any, Protocol, cast


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
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
    except OSError:
        sys.stderr.write(line)


class HookLog:
    def __init__(self, path: str, hook: str, job_id: str | None = None) -> None:
        self.path = path
        self.base: dict[str, Any] = {"hook": hook, "job_id": job_id, "pid": os.getpid()}

    def bind(self, **kv: Any) -> None:
        self.base.update(kv)

    def _emit(self, level: str, event: str, kv: dict[str, Any]) -> None:
        _append(self.path, json.dumps({"ts": _timestamp(), "level": level, **self.base, "event": event, **kv},
                                      default=str) + "\n")

    def info(self, event: str, **kv: Any) -> None:
        self._emit("info", event, kv)

    def warning(self, event: str, **kv: Any) -> None:
        self._emit("warning", event, kv)

    def error(self, event: str, **kv: Any) -> None:
        self._emit("error", event, kv)


class _AppendLogger:
    """structlog's output end: each rendered event becomes one appended line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def msg(self, message: str) -> None:
        _append(self.path, message + "\n")

    info = warning = error = msg


def structured(path: str, hook: str, job_id: str | None = None) -> Log:
    import structlog

    def fields(_logger: Any, level: str, event: MutableMapping[str, Any]) -> dict[str, Any]:
        return {"ts": _timestamp(), "level": level, "hook": hook, "job_id": job_id, "pid": os.getpid(), **event}

    return cast(Log, structlog.wrap_logger(
        _AppendLogger(path),
        processors=[fields, structlog.processors.JSONRenderer(default=str)],
        wrapper_class=structlog.BoundLogger,
    ))
