"""JSON-lines log for the hooks: one line per event, naming the hook, the job and what happened.

Hooks have no terminal and Slurm throws their output away, so this file is where an operator
looks. Writing it must never fail a hook: on any error the line goes to stderr instead.

One writer for every hook and command, one format ({"ts", "level", "hook", "job_id", "pid",
"event", ...}), rendered by json.dumps. It is dependency-free on purpose: the Prolog sits on every
job start and structlog's import costs 60-130 ms (it pulls in asyncio; `python -X importtime`),
and all the hooks need from a logging library is this one line (README, "Logs").
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from typing import Any, Protocol


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


class HookLog:
    def __init__(self, path: str, hook: str, job_id: str | None = None) -> None:
        self.path = path
        self.base: dict[str, Any] = {"hook": hook, "job_id": job_id, "pid": os.getpid()}

    def _emit(self, level: str, event: str, kv: dict[str, Any]) -> None:
        _append(
            self.path,
            json.dumps({"ts": _timestamp(), "level": level, **self.base, "event": event, **kv}, default=str) + "\n",
        )

    def info(self, event: str, **kv: Any) -> None:
        self._emit("info", event, kv)

    def warning(self, event: str, **kv: Any) -> None:
        self._emit("warning", event, kv)

    def error(self, event: str, **kv: Any) -> None:
        self._emit("error", event, kv)
