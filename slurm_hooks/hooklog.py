"""JSON-lines log for the hooks: one line per event, naming the hook, the job and what happened.

Hooks have no terminal and Slurm throws their output away, so this file is where an operator
looks. Writing it must never fail a hook: on any error the line goes to stderr instead.
The Prolog and TaskProlog sit on every job start, so this stays dependency-free (structlog
costs ~60-130 ms of imports, measured with `python -X importtime`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


class HookLog:
    def __init__(self, path: str, hook: str, job_id: str | None = None) -> None:
        self.path = path
        self.base: dict[str, Any] = {"hook": hook, "job_id": job_id, "pid": os.getpid()}

    def bind(self, **kv: Any) -> None:
        self.base.update(kv)

    def _emit(self, level: str, event: str, kv: dict[str, Any]) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
        line = json.dumps({"ts": stamp, "level": level, **self.base, "event": event, **kv}, default=str) + "\n"
        try:
            if not self.path:
                raise OSError("no log file configured")
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o640)
            try:
                os.write(fd, line.encode())  # one write() of one line: appends from parallel hooks don't interleave
            finally:
                os.close(fd)
        except OSError:
            sys.stderr.write(line)

    def info(self, event: str, **kv: Any) -> None:
        self._emit("info", event, kv)

    def warning(self, event: str, **kv: Any) -> None:
        self._emit("warning", event, kv)

    def error(self, event: str, **kv: Any) -> None:
        self._emit("error", event, kv)
