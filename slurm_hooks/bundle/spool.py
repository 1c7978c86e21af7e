"""The node spool: per-job evidence bundles and diagnoses, and their retention.

<spool_dir>/jobs/<jobid>/bundle/   evidence bundle v1 (DESIGN.md), parts written by each node
<spool_dir>/jobs/<jobid>/parts/    <node>.done once a node's part is complete
<spool_dir>/jobs/<jobid>/diagnosis.json
<spool_dir>/outbox/                annotations not yet in accounting (deliver/outbox.py)

Every file is written atomically, so 32 epilogs at once leave no half-written file behind, and
every path component below the spool root is opened without following links (core/nofollow.py): a
link planted at `jobs/<id>` is refused, never written through.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from slurm_hooks.core.layout import job_dir
from slurm_hooks.core.nofollow import opened_dir, read_at, write_at


@dataclass
class PruneReport:
    removed: list[str] = field(default_factory=list)  # job dirs that are gone
    links_removed: list[str] = field(default_factory=list)  # planted links at jobs/<id>: the link only
    failed: dict[str, str] = field(default_factory=dict)  # job dirs still there, and why


class Spool:
    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def job_dir(self, job_id: str) -> Path:
        return job_dir(self.root, job_id)

    def _parts(self, job_id: str, relpath: str) -> tuple[list[str], str]:
        *dirs, name = relpath.split("/")
        return ["jobs", self.job_dir(job_id).name, *dirs], name

    def bundle_dir(self, job_id: str) -> Path:
        """The job's bundle directory, created private (job logs and kernel lines live there)."""
        with opened_dir(self.root, self._parts(job_id, "")[0], create=True) as fd:
            os.fchmod(fd, 0o700)
        for sub in ("nodes", "kernel", "logs"):
            with opened_dir(self.root, self._parts(job_id, f"bundle/{sub}/")[0], create=True):
                pass
        return self.job_dir(job_id) / "bundle"

    def write(self, job_id: str, relpath: str, data: str | bytes, mode: int = 0o600) -> None:
        """Write `jobs/<id>/<relpath>` atomically, creating directories; links are refused."""
        dirs, name = self._parts(job_id, relpath)
        with opened_dir(self.root, dirs, create=True) as fd:
            write_at(fd, name, data.encode() if isinstance(data, str) else data, mode)

    def read(self, job_id: str, relpath: str, limit: int = 1 << 20) -> bytes:
        dirs, name = self._parts(job_id, relpath)
        with opened_dir(self.root, dirs) as fd:
            return read_at(fd, name, limit)

    @contextlib.contextmanager
    def create(self, job_id: str, relpath: str) -> Iterator[BinaryIO]:
        """A new file to fill (a job log copy), removed again if filling it raises."""
        dirs, name = self._parts(job_id, relpath)
        with opened_dir(self.root, dirs, create=True) as fd:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
            fh: BinaryIO = os.fdopen(out, "wb")
            try:
                with fh:
                    yield fh
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=fd)
                raise

    def remove(self, job_id: str, relpath: str) -> None:
        dirs, name = self._parts(job_id, relpath)
        with opened_dir(self.root, dirs) as fd, contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)

    def mark_part_done(self, job_id: str, node: str, at: float) -> None:
        self.write(job_id, f"parts/{node}.done", str(at))

    def parts_done(self, job_id: str) -> set[str]:
        try:
            with opened_dir(self.root, self._parts(job_id, "parts/")[0]) as fd:
                return {n.removesuffix(".done") for n in os.listdir(fd) if n.endswith(".done")}
        except OSError:  # none yet, not yet handed over to us, or a planted link where the job's dir should be
            return set()

    def hand_over(self, job_id: str) -> None:
        """Give `jobs/`, the job's tree and `outbox/` to the spool root's owner. With `annotator:
        epilog_slurmctld` that owner is SlurmUser: its EpilogSlurmctld reads every node's part and
        writes the diagnosis and the outbox. A no-op unless root writes a spool owned by another."""
        owner = os.stat(self.root)
        if os.geteuid() != 0 or owner.st_uid == 0:
            return
        ids = owner.st_uid, owner.st_gid
        with opened_dir(self.root, []) as root:
            os.chown("jobs", *ids, dir_fd=root, follow_symlinks=False)
            _chown_tree(root, "outbox", *ids)
        with opened_dir(self.root, ["jobs"]) as jobs:
            _chown_tree(jobs, self.job_dir(job_id).name, *ids)

    def save_diagnosis(self, job_id: str, diagnosis: dict[str, Any]) -> None:
        self.write(job_id, "diagnosis.json", json.dumps(diagnosis, indent=1) + "\n")

    # --------------------------------------------------------------- retention
    def prune(self, retention_days: int, max_mb: int, now: float) -> PruneReport:
        """Drop job dirs past retention, then the oldest until the spool fits; says what really went."""
        report = PruneReport()
        with contextlib.ExitStack() as stack:
            try:
                fd = stack.enter_context(opened_dir(self.root, ["jobs"]))
            except FileNotFoundError:
                return report
            entries = []
            for name in os.listdir(fd):
                st = os.lstat(name, dir_fd=fd)
                if stat.S_ISLNK(st.st_mode):  # nothing of ours is a link: remove the link, never its target
                    os.unlink(name, dir_fd=fd)
                    report.links_removed.append(name)
                elif stat.S_ISDIR(st.st_mode):
                    entries.append((st.st_mtime, name, _size(fd, name)))
            total = sum(size for _, _, size in entries)
            for mtime, name, size in sorted(entries):
                if mtime >= now - retention_days * 86400 and total <= max_mb * (1 << 20):
                    break
                if (error := _remove_tree(fd, name)) is None:
                    report.removed.append(name)
                    total -= size
                else:
                    report.failed[name] = error
        return report


def _remove_tree(parent: int, name: str) -> str | None:
    """None once `name` is gone; else the first error. Descriptor-relative throughout, links
    are unlinked, never followed (shutil.rmtree takes a dir_fd only from Python 3.11)."""
    errors: list[str] = []

    def attempt(remove: Callable[..., None], entry: str, fd: int) -> None:
        try:
            remove(entry, dir_fd=fd)
        except NotADirectoryError:  # a link to a directory is listed among the directories
            attempt(os.unlink, entry, fd)
        except OSError as exc:
            errors.append(f"{entry}: {exc.strerror}")

    for _root, dirs, files, fd in os.fwalk(
        name, topdown=False, dir_fd=parent, follow_symlinks=False, onerror=lambda exc: errors.append(str(exc))
    ):
        for entry in files:
            attempt(os.unlink, entry, fd)
        for entry in dirs:
            attempt(os.rmdir, entry, fd)
    attempt(os.rmdir, name, parent)
    try:
        os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return None
    return errors[0] if errors else "still present"


def _chown_tree(parent: int, name: str, uid: int, gid: int) -> None:
    """Links are not followed; a file renamed or removed meanwhile (a writer's temporary) is skipped."""
    for _root, _dirs, files, fd in os.fwalk(name, dir_fd=parent, follow_symlinks=False):
        os.fchown(fd, uid, gid)
        for entry in files:
            with contextlib.suppress(FileNotFoundError):
                os.chown(entry, uid, gid, dir_fd=fd, follow_symlinks=False)


def _size(parent: int, name: str) -> int:
    total = 0
    for _root, _dirs, files, fd in os.fwalk(name, dir_fd=parent, follow_symlinks=False):
        for f in files:
            with contextlib.suppress(OSError):
                st = os.lstat(f, dir_fd=fd)
                total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total
