"""The node spool: per-job evidence bundles and diagnoses, and their retention.

<spool_dir>/jobs/<jobid>/bundle/   evidence bundle v1 (DESIGN.md), parts written by each node
<spool_dir>/jobs/<jobid>/parts/    <node>@<run>.done once a node's part of that run is complete
<spool_dir>/jobs/<jobid>/stale/    what the annotator set aside: no finished part of its run vouched for it
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
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from slurm_hooks.bundle.layout import PARTS
from slurm_hooks.bundle.retention import PruneReport, prune_jobs
from slurm_hooks.core.layout import job_dir
from slurm_hooks.core.nofollow import open_child, opened_dir, read_at, write_at
from slurm_hooks.core.treewalk import chown_tree as _chown_tree  # iterative; links changed, never followed
from slurm_hooks.slurm.job import RunId

MARKER_BYTES = 1 << 20  # a part marker: its run, its time and the bundle files it vouches for


class Spool:
    def __init__(self, root: str) -> None:
        self.root = Path(root)
        self._wrote: dict[str, set[str]] = {}  # per job, the bundle files this process wrote: its part

    def _vouch(self, job_id: str, relpath: str) -> None:
        if relpath.startswith("bundle/"):
            self._wrote.setdefault(job_id, set()).add(relpath)

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
        self._vouch(job_id, relpath)

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
        self._vouch(job_id, relpath)

    def remove(self, job_id: str, relpath: str) -> None:
        dirs, name = self._parts(job_id, relpath)
        self._wrote.get(job_id, set()).discard(relpath)
        with opened_dir(self.root, dirs) as fd, contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)

    def mark_part_done(self, job_id: str, node: str, at: float, run: RunId | None = None) -> None:
        """`parts/<node>@<run>.done`: this node's part of that run is complete, and these bundle
        files (what this process wrote for the job) are it. Another run's marker stays beside it."""
        tag = run.tag if run is not None else ""
        doc = json.dumps({"run": tag, "at": at, "files": sorted(self._wrote.get(job_id, ()))})
        self.write(job_id, f"parts/{node}@{tag}.done" if tag else f"parts/{node}.done", doc)

    def mark_decided(self, job_id: str, run: RunId, entry: bytes) -> None:
        """`parts/@<run>.decided`: the run's record is decided; `entry` is the outbox entry it queued
        (b"" when there is nothing to deliver). A second Epilog of the run, or a flush, reads it back."""
        self.write(job_id, f"parts/@{run.tag}.decided", entry)

    def decided(self, job_id: str, run: RunId) -> bytes | None:
        """What `mark_decided` kept for `run`, None when the run is not decided."""
        for _, tag, name in self._markers(job_id, ".decided"):
            if tag and tag.same_run(run):
                with contextlib.suppress(OSError):
                    return self.read(job_id, f"parts/{name}", MARKER_BYTES)
        return None

    def _markers(self, job_id: str, kind: str = ".done") -> list[tuple[str, RunId | None, str]]:
        """(node, run, file name) of every marker of `kind`: one directory listing, whatever the job's size."""
        try:
            with opened_dir(self.root, self._parts(job_id, "parts/")[0]) as fd:
                names = [n for n in os.listdir(fd) if n.endswith(kind)]
        except OSError:  # none yet, not yet handed over to us, or a planted link where the job's dir should be
            return []
        out = []
        for name in names:
            node, at, tag = name.removesuffix(kind).rpartition("@")
            out.append((node, RunId.parse(tag), name) if at else (tag, RunId(), name))  # <node>.done: no run said
        return out

    def parts_done(self, job_id: str, run: RunId | None = None) -> set[str]:
        """The nodes whose part of `run` is complete (another run's marker is not this run's part);
        every node with a marker when `run` is None."""
        return {node for node, tag, _ in self._markers(job_id) if run is None or (tag and run.same_run(tag))}

    def set_aside(self, job_id: str, run: RunId, nodes: Iterable[str] | None) -> list[str]:
        """Move out of `bundle/` every file no finished part of `run` from `nodes` (None: any node)
        vouches for: a previous run's part (a requeue, a reused job id), a node that is not this
        run's, a part still being written when the wait ended, an old job.json. The diagnosis then
        reads this run's finished parts only; what was moved waits in `stale/` for retention."""
        wanted, moved = None if nodes is None else set(nodes), []
        vouched = set(self._wrote.get(job_id, ()))  # this process's own writes are this run's
        markers = [
            name
            for node, tag, name in self._markers(job_id)
            if (wanted is None or node in wanted) and tag and run.same_run(tag)
        ]
        with contextlib.suppress(FileNotFoundError), opened_dir(self.root, self._parts(job_id, "parts/")[0]) as fd:
            for name in markers:
                vouched |= _vouched_by(fd, name)
        with contextlib.suppress(FileNotFoundError), opened_dir(self.root, self._parts(job_id, "")[0]) as job:
            for sub in ("", *PARTS):
                folder = f"bundle/{sub}/" if sub else "bundle/"
                dirs = self._parts(job_id, folder)[0]
                with contextlib.suppress(FileNotFoundError), opened_dir(self.root, dirs) as fd:
                    names = [n for n in os.listdir(fd) if not n.startswith(".") and (sub or n not in PARTS)]
                    moved += _move(fd, job, sub, [n for n in names if folder + n not in vouched])
        return moved

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
    def prune(
        self,
        retention_days: int,
        max_mb: int,
        now: float,
        live: Collection[str] = frozenset(),
        deadline: float | None = None,
    ) -> PruneReport:
        """Drop job dirs past retention, then the oldest until the spool fits; says what really went.
        Bounded by `deadline` (time.monotonic(); default bundle/retention.py's PRUNE_S from now) and
        incremental: the next run goes on where this one stopped. Jobs in `live` are never touched."""
        return prune_jobs(self.root, retention_days, max_mb, now, live, deadline)


def _vouched_by(parts: int, name: str) -> set[str]:
    """The bundle files a part marker lists; none when it cannot be read (an older version's marker)."""
    try:
        doc = json.loads(read_at(parts, name, MARKER_BYTES))
    except (OSError, ValueError, RecursionError):
        return set()
    files = doc.get("files") if isinstance(doc, dict) else None
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else set()


def _move(part: int, job: int, sub: str, names: list[str]) -> list[str]:
    """`names` from the bundle's `sub` folder into the job's `stale/`; a rename moves a link itself."""
    moved: list[str] = []
    if not names:
        return moved
    stale = open_child(job, "stale", create=True)
    try:
        for name in names:
            with contextlib.suppress(FileNotFoundError):  # its writer replaced it meanwhile
                os.rename(name, f"{sub or 'bundle'}-{name}", src_dir_fd=part, dst_dir_fd=stale)
                moved.append(f"{sub}/{name}" if sub else name)
    finally:
        os.close(stale)
    return moved
