"""The annotation outbox: `<spool>/outbox/<jobid>.json`, one record per job not yet in accounting.

Everything read from it is validated into a typed `OutboxEntry`; what fails (a bad field, a
`queued_at` that is not a number, deep nesting, a link, a non-numeric job id) is moved to
`outbox/quarantine/` and never blocks the entries behind it. The annotator reserves its job's
entry before it writes the (larger) bundle, so that on a full disk the record still fits. A job
whose annotator nobody could name waits here `Undecided` until a backlog flush decides it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from slurm_hooks.core.nofollow import open_child, opened_dir, read_at, write_at
from slurm_hooks.slurm.annotation import MARK, MAX_RECORD, decode
from slurm_hooks.slurm.job import ENV_VARS, JobContext, RunId

FIELDS = ("admin_comment", "comment")
RESERVED_BYTES = 2048  # room for any entry (a record is at most MAX_RECORD)
RESERVATION_TTL_S = 3600.0  # a reservation older than this was left by a hook that died
MAX_ENTRY_BYTES = 64 << 10
MAX_ENV_VALUE = 4096  # one environment value of an undecided entry (paths, the user's comment)
# What `queue_undecided` writes is read back whatever the job gave it (`undecided_doc`): each env
# value, as JSON (a character takes up to 12 bytes there: an emoji's escaped surrogate pair), gets
# an equal share of MAX_ENTRY_BYTES less the reason at its longest and room for keys and numbers.
_FRAME_BYTES = 1024  # the keys (ENV_VARS' names, under 32 characters each), the job id, queued_at, braces
ENV_VALUE_BYTES = (MAX_ENTRY_BYTES - 12 * MAX_RECORD - _FRAME_BYTES) // len(ENV_VARS)
CUT = "[cut]"  # ends a value cut to fit: never taken for the whole of it
_NAME = re.compile(r"([0-9]{1,20})\.json")  # fullmatch: `$` would take a name ending in a newline
_RECORD = re.compile(r"[\x20-\x7e]*")  # fullmatch: one printable line, sacct -P output stays parseable


class InvalidEntry(ValueError):
    """An outbox file that is not an entry we wrote; the message says why."""


@dataclass(frozen=True)
class OutboxEntry:
    job_id: str  # digits only: it reaches `sacctmgr ... where jobid=`
    field: str  # admin_comment | comment
    record: str
    queued_at: float


@dataclass(frozen=True)
class Reservation:
    job_id: str
    reserved_at: float


@dataclass(frozen=True)
class Undecided:
    """A job whose annotator nobody could name (its multi-node Epilogs got no job record from
    slurmctld): what Slurm's environment said, until a backlog flush decides it (hooks/post_job.py)."""

    job_id: str
    env: dict[str, str]  # JobContext.to_env(), read back through JobContext.from_env
    reason: str
    queued_at: float

    def same_run(self, run: RunId) -> bool:
        ctx = JobContext.from_env(self.env)
        return ctx is not None and RunId.of(ctx).same_run(run)


def _undecided(job_id: str, doc: dict[str, Any]) -> Undecided:
    env, reason = doc["env"], doc["undecided"]
    if not isinstance(reason, str) or len(reason) > MAX_RECORD:
        raise InvalidEntry("undecided: the reason is not a short text")
    if (
        not isinstance(env, dict)
        or not set(env) <= ENV_VARS
        or not all(isinstance(v, str) and len(v) <= MAX_ENV_VALUE for v in env.values())
        or env.get("SLURM_JOB_ID") != job_id
    ):
        raise InvalidEntry("undecided: env is not the job's environment as slurm-hooks keeps it")
    return Undecided(job_id, dict(env), reason, _time(doc["queued_at"], "queued_at"))


def undecided_doc(item: Undecided) -> dict[str, Any]:
    """`item` as queue_undecided writes it: every value cut (with CUT) to what `_undecided` and
    parse_entry accept, so the entry is read back, never quarantined, whatever the job's comment or
    paths hold (a run queued undecided must be decided)."""
    env = {k: _cut(v, min(MAX_ENV_VALUE, ENV_VALUE_BYTES)) for k, v in item.env.items() if k in ENV_VARS}
    reason = _cut(item.reason, MAX_RECORD)
    return {"job_id": item.job_id, "undecided": reason, "env": env, "queued_at": item.queued_at}


def _cut(value: str, limit: int) -> str:
    """`value`, or its longest head that with CUT is at most `limit` characters and `limit` bytes as JSON."""
    if len(value) <= limit and len(json.dumps(value)) - 2 <= limit:
        return value
    room, head = limit - len(CUT), 0
    for ch in value:
        room -= len(json.dumps(ch)) - 2
        if room < 0:
            break
        head += 1
    return value[:head] + CUT


def _same_run(item: OutboxEntry | Reservation | Undecided, run: RunId) -> bool:
    """`item` is already this run's: its record (`run=`) or its environment says so."""
    if isinstance(item, Undecided):
        return item.same_run(run)
    tag = (decode(item.record) or {}).get("run", "") if isinstance(item, OutboxEntry) else ""
    return bool(tag) and (parsed := RunId.parse(tag)) is not None and parsed.same_run(run)


def parse_entry(name: str, raw: bytes) -> OutboxEntry | Reservation | Undecided:
    """The typed record in the file `name`, or InvalidEntry saying what is wrong with it."""
    if not (m := _NAME.fullmatch(name)):
        raise InvalidEntry("file name is not <numeric job id>.json")
    if len(raw) > MAX_ENTRY_BYTES:
        raise InvalidEntry(f"larger than {MAX_ENTRY_BYTES} bytes")
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than json can follow
        raise InvalidEntry(f"not JSON: {type(exc).__name__}") from None
    if not isinstance(doc, dict) or doc.get("job_id") != m.group(1):
        raise InvalidEntry("not an object whose job_id matches the file name")
    if doc.keys() == {"job_id", "reserved_at"}:
        return Reservation(m.group(1), _time(doc["reserved_at"], "reserved_at"))
    if doc.keys() == {"job_id", "undecided", "env", "queued_at"}:
        return _undecided(m.group(1), doc)
    if doc.keys() != {"job_id", "field", "record", "queued_at"}:
        raise InvalidEntry(f"unexpected keys {sorted(doc)[:8]}")
    if doc["field"] not in FIELDS:
        raise InvalidEntry(f"field must be one of {', '.join(FIELDS)}")
    record = doc["record"]
    if (
        not isinstance(record, str)
        or not record.startswith(MARK)
        or len(record) > MAX_RECORD
        or not _RECORD.fullmatch(record)
        or "|" in record
    ):
        raise InvalidEntry(f"record is not a {MARK} line")
    return OutboxEntry(m.group(1), doc["field"], record, _time(doc["queued_at"], "queued_at"))


def _time(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InvalidEntry(f"{key} is not a time")
    return float(value)


@dataclass
class Backlog:
    entries: list[OutboxEntry] = field(default_factory=list)  # oldest first
    undecided: list[Undecided] = field(default_factory=list)  # oldest first
    quarantined: list[tuple[str, str]] = field(default_factory=list)  # (file, why)


class Outbox:
    def __init__(self, spool_root: Path) -> None:
        self.root = spool_root

    @contextlib.contextmanager
    def _dir(self) -> Iterator[int]:
        with opened_dir(self.root, ["outbox"], create=True) as fd:
            yield fd

    def reserve(self, job_id: str, now: float) -> None:
        """Room for the job's entry, taken before the bundle: whitespace-padded JSON, still valid."""
        doc = json.dumps(asdict(Reservation(job_id, now))).encode()
        with self._dir() as fd:
            write_at(fd, f"{job_id}.json", doc.ljust(RESERVED_BYTES), mode=0o600)

    def put(self, entry: OutboxEntry) -> None:
        """Queue `entry`; on a full disk, fill the job's reservation in place (its blocks exist)."""
        doc = json.dumps(asdict(entry)).encode()
        with self._dir() as fd:
            try:
                write_at(fd, f"{entry.job_id}.json", doc + b"\n", mode=0o600)
            except OSError as full:
                if not self._fill_reservation(fd, entry.job_id, doc):
                    raise full from None

    @staticmethod
    def _fill_reservation(fd: int, job_id: str, doc: bytes) -> bool:
        try:
            out = os.open(f"{job_id}.json", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            return False
        try:
            size = os.fstat(out).st_size
            if not stat.S_ISREG(os.fstat(out).st_mode) or len(doc) > size:
                return False
            os.pwrite(out, doc.ljust(size), 0)  # same length: no new block is needed
            os.fsync(out)
            return True
        except OSError:
            return False
        finally:
            os.close(out)

    def queue_undecided(self, item: Undecided, run: RunId) -> bool:
        """Queue `item` unless the job's entry is already this run's (another node's undecided
        entry, or the record a flush decided meanwhile); a previous run's entry or a reservation is
        replaced. Every node of the run may call this: one entry results. True when written."""
        name = f"{item.job_id}.json"
        doc = undecided_doc(item)
        with self._dir() as fd:
            try:
                if _same_run(parse_entry(name, read_at(fd, name, MAX_ENTRY_BYTES)), run):
                    return False
            except (OSError, InvalidEntry):
                pass  # none yet (or one pending() would quarantine): ours takes its place
            write_at(fd, name, json.dumps(doc).encode() + b"\n", mode=0o600)
        return True

    def release(self, job_id: str) -> None:
        """Drop the job's reservation (nothing to annotate); a queued entry is left alone."""
        with self._dir() as fd, contextlib.suppress(OSError, InvalidEntry):
            if isinstance(parse_entry(f"{job_id}.json", read_at(fd, f"{job_id}.json", MAX_ENTRY_BYTES)), Reservation):
                os.unlink(f"{job_id}.json", dir_fd=fd)

    def remove(self, entry: OutboxEntry | Undecided) -> None:
        """Remove a delivered entry, unless it was replaced by a newer one meanwhile (a requeued job)."""
        name = f"{entry.job_id}.json"
        with self._dir() as fd, contextlib.suppress(FileNotFoundError):  # another flusher was first
            with contextlib.suppress(OSError, InvalidEntry):
                if parse_entry(name, read_at(fd, name, MAX_ENTRY_BYTES)) != entry:
                    return
            os.unlink(name, dir_fd=fd)

    def pending(self, now: float) -> Backlog:
        """Every valid entry, oldest first; invalid files and dead reservations go to quarantine."""
        backlog = Backlog()
        with self._dir() as fd:
            for name in sorted(os.listdir(fd)):
                if name.startswith(".") or name == "quarantine":
                    continue  # a writer's temporary file, the lock, the quarantine
                try:
                    item = parse_entry(name, read_at(fd, name, MAX_ENTRY_BYTES + 1))
                except FileNotFoundError:
                    continue  # delivered by another flusher just now
                except (OSError, InvalidEntry) as exc:
                    self._quarantine(fd, name, str(exc), backlog)
                    continue
                if isinstance(item, OutboxEntry):
                    backlog.entries.append(item)
                elif isinstance(item, Undecided):
                    backlog.undecided.append(item)
                elif now - item.reserved_at > RESERVATION_TTL_S:
                    self._quarantine(fd, name, "reserved but never filled (its hook died)", backlog)
        backlog.entries.sort(key=lambda e: e.queued_at)
        backlog.undecided.sort(key=lambda e: e.queued_at)
        return backlog

    @staticmethod
    def _quarantine(fd: int, name: str, why: str, backlog: Backlog) -> None:
        qfd = open_child(fd, "quarantine", create=True)
        try:  # a rename moves a link itself, never its target
            os.rename(name, f"{name}.{time.time_ns()}", src_dir_fd=fd, dst_dir_fd=qfd)
        except FileNotFoundError:
            return  # another flusher moved it first
        finally:
            os.close(qfd)
        backlog.quarantined.append((name, why))

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[bool]:
        """A non-blocking lock: True when held; a second backlog flusher just skips its turn."""
        with self._dir() as dfd:
            fd = os.open(".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)
