"""Fakes for the Epilog flow's collaborators (hooks/deps.py): Slurm, clock, kernel log, log, a full disk."""

from __future__ import annotations

import errno
import threading
import time
from datetime import datetime
from typing import Any

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.deliver.outbox import Outbox, OutboxEntry
from slurm_hooks.slurm.client import JobRecord, NotInAccountingYet, SlurmError


class FakeClock:
    """Time that moves only when the code sleeps: waits end at once, and can be read back."""

    def __init__(self, wall: float | None = None) -> None:
        self.wall, self.mono = time.time() if wall is None else wall, 1000.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.wall += seconds
        self.mono += seconds


class RecordingLog:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def _add(self, level: str, event: str, kv: dict[str, Any]) -> None:
        self.lines.append({"level": level, "event": event, **kv})

    def info(self, event: str, **kv: Any) -> None:
        self._add("info", event, kv)

    def warning(self, event: str, **kv: Any) -> None:
        self._add("warning", event, kv)

    def error(self, event: str, **kv: Any) -> None:
        self._add("error", event, kv)

    def events(self, level: str | None = None) -> list[str]:
        return [line["event"] for line in self.lines if level in (None, line["level"])]

    def first(self, event: str) -> dict[str, Any]:
        return next(line for line in self.lines if line["event"] == event)


class FakeSlurm:
    """slurmctld and slurmdbd in memory, each of which can be down; accounting may lag."""

    def __init__(self, jobs: dict[str, JobRecord] | None = None, hosts: dict[str, list[str]] | None = None) -> None:
        self.jobs = jobs or {}
        self.hosts = hosts or {}
        self.ctld_up = self.dbd_up = True
        self.not_yet = 0  # this many accounting reads answer "no record yet" first
        self.accounting: dict[str, tuple[str, str]] = {}
        self.sets: list[tuple[str, str, str]] = []
        self.lock = threading.Lock()
        self.unfinished: set[str] = set()  # what squeue lists as not ended (unfinished_jobs)
        self.unfinished_asked = 0

    def job(self, job_id: str) -> JobRecord:
        if not self.ctld_up:
            raise SlurmError("scontrol: slurm_load_jobs error: Unable to contact slurm controller")
        return self.jobs[job_id]

    def hostnames(self, node_list: str) -> list[str]:
        if not self.ctld_up:
            raise SlurmError("scontrol: Unable to contact slurm controller")
        return self.hosts.get(node_list, [node_list])

    def unfinished_jobs(self) -> frozenset[str]:
        self.unfinished_asked += 1
        if not self.ctld_up:
            raise SlurmError("squeue: slurm_load_jobs error: Unable to contact slurm controller")
        return frozenset(self.unfinished)

    def accounting_comments(self, job_id: str) -> tuple[str, str]:
        with self.lock:
            if not self.dbd_up:
                raise SlurmError("sacct: slurmdbd: Connection refused")
            if self.not_yet > 0:
                self.not_yet -= 1
                raise NotInAccountingYet(f"sacct: no accounting record for job {job_id} yet")
            return self.accounting.get(job_id, ("", ""))

    def set_job_field(self, job_id: str, field: str, value: str) -> None:
        assert job_id.isdigit(), job_id  # only numeric job ids may reach sacctmgr
        with self.lock:
            self.sets.append((job_id, field, value))
            comment, admin = self.accounting.get(job_id, ("", ""))
            self.accounting[job_id] = (value, admin) if field == "comment" else (comment, value)


class FakeKernel:
    def __init__(self, text: str | None = None) -> None:
        self.text = text
        self.windows: list[tuple[datetime, datetime]] = []

    def read(self, start: datetime, end: datetime, boot: datetime | None) -> tuple[str | None, str]:
        self.windows.append((start, end))
        return (self.text, "fake kernel") if self.text is not None else (None, "none (fake)")


def _enospc() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


class FullSpool(Spool):
    """A spool on a disk that has just filled up: directories exist, no file can be written."""

    def write(self, job_id: str, relpath: str, data: str | bytes, mode: int = 0o600) -> None:
        raise _enospc()

    def create(self, job_id: str, relpath: str) -> Any:
        raise _enospc()


class FullOutbox(Outbox):
    """An outbox on a full disk with no reservation to fall back on."""

    def reserve(self, job_id: str, now: float) -> None:
        raise _enospc()

    def put(self, entry: OutboxEntry) -> None:
        raise _enospc()


class LocalHostnamesSlurm(FakeSlurm):
    """`scontrol show hostnames` expands a node list locally: it answers while slurmctld is down."""

    def hostnames(self, node_list: str) -> list[str]:
        return self.hosts.get(node_list, [node_list])
