"""The node spool: per-job evidence bundles and diagnoses, the annotation outbox, retention.

<spool_dir>/jobs/<jobid>/bundle/   evidence bundle v1 (DESIGN.md), parts written by each node
<spool_dir>/jobs/<jobid>/parts/    <node>.done once a node's part is complete
<spool_dir>/jobs/<jobid>/diagnosis.json
<spool_dir>/outbox/<jobid>.json    annotations not yet in accounting (slurmdbd down, slow, ...)
Every file is written atomically, so 32 epilogs at once leave no half-written file behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slurm_hooks.safeio import atomic_write


class Spool:
    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def job_dir(self, job_id: str) -> Path:
        return self.root / "jobs" / job_id

    def bundle_dir(self, job_id: str) -> Path:
        path = self.job_dir(job_id) / "bundle"
        for sub in ("nodes", "kernel", "logs"):
            (path / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.job_dir(job_id), 0o700)  # job logs and other users' kernel lines live here
        return path

    def mark_part_done(self, job_id: str, node: str) -> None:
        parts = self.job_dir(job_id) / "parts"
        parts.mkdir(parents=True, exist_ok=True)
        atomic_write(parts / f"{node}.done", str(time.time()))

    def parts_done(self, job_id: str) -> set[str]:
        parts = self.job_dir(job_id) / "parts"
        return {p.name.removesuffix(".done") for p in parts.glob("*.done")} if parts.is_dir() else set()

    def save_diagnosis(self, job_id: str, diagnosis: dict[str, Any]) -> Path:
        path = self.job_dir(job_id) / "diagnosis.json"
        atomic_write(path, json.dumps(diagnosis, indent=1) + "\n", mode=0o600)
        return path

    # ------------------------------------------------------------------ outbox
    @property
    def outbox(self) -> Path:
        path = self.root / "outbox"
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return path

    def queue_annotation(self, job_id: str, field: str, record: str) -> Path:
        path = self.outbox / f"{job_id}.json"
        entry = {"job_id": job_id, "field": field, "record": record, "queued_at": time.time()}
        atomic_write(path, json.dumps(entry) + "\n", mode=0o600)
        return path

    def pending(self) -> list[tuple[Path, dict[str, Any]]]:
        out = []
        for path in sorted(self.outbox.glob("*.json"), key=lambda p: p.stat().st_mtime):
            try:
                entry = json.loads(path.read_text())
                if isinstance(entry, dict) and {"job_id", "field", "record"} <= entry.keys():
                    out.append((path, entry))
                    continue
            except (OSError, ValueError):
                pass
            path.rename(path.with_suffix(".corrupt"))  # kept for a person to look at, never retried
        return out

    @contextlib.contextmanager
    def exclusive(self, name: str) -> Iterator[bool]:
        """A non-blocking lock: True when held; a second flusher just skips the backlog."""
        fd = os.open(self.root / f".{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    # --------------------------------------------------------------- retention
    def prune(self, retention_days: int, max_mb: int) -> list[str]:
        """Drop job dirs past retention, then the oldest until the spool fits; returns what went."""
        jobs = self.root / "jobs"
        if not jobs.is_dir():
            return []
        entries = sorted((p.stat().st_mtime, p) for p in jobs.iterdir() if p.is_dir())
        cutoff = time.time() - retention_days * 86400
        removed = []
        total = sum(_size(p) for _, p in entries)
        for mtime, path in entries:
            if mtime >= cutoff and total <= max_mb * (1 << 20):
                break
            total -= _size(path)
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path.name)
        return removed


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
