"""The reader child: run as the job's user (never root), it reads the dumps in the job's dump
directory (and where the job pointed TORCH_FR_DUMP_TEMP_FILE itself) and prints one JSON line each.

Started as `python -S -c ...` by collect.py with the user's uid and gid and no supplementary
groups, inside a time limit; it caps its own address space first. Each file is opened relative
to its directory with O_NOFOLLOW|O_NONBLOCK and must be a regular file no larger than the cap
(its size is read from fstat, so a sparse 10 GB file is refused unread). Only names of the form
<prefix><rank> count, at most `max_dumps`; a bad dump is a `skipped` line, never a traceback.
Each dump is decoded and digested in a child of its own (core/sandbox.py), bounded in memory, CPU
and wall time, that answers with the digest as JSON: a dump whose numbers, nesting or size break
the decoder costs its own line (`not read: killed: cpu time`), never the dumps after it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterator
from typing import Any

from slurm_hooks.core.sandbox import Bounds, run_parse
from slurm_hooks.flight.decode import DumpRefused, decode
from slurm_hooks.flight.digest import digest

OUR_PREFIX = "fr_rank_"  # TORCH_FR_DUMP_TEMP_FILE=<job's dump dir>/fr_rank_; PyTorch appends the rank
JOB_PREFIXES = "job_prefix"  # the job's own TORCH_FR_DUMP_TEMP_FILE values, noted by the TaskProlog
MAX_PREFIXES = 4
MAX_ENTRIES = 100_000  # directory entries looked at per directory
MAX_DIGEST = 1 << 17  # bytes of one dump's digest as its child sends it (64 groups of a few numbers)
_RANK = re.compile(r"(\d{1,7})(?:\.[A-Za-z]{1,8})?")
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def _read(dir_fd: int, name: str, limit: int) -> bytes:
    fd = os.open(name, _OPEN, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DumpRefused("not a regular file")
        if st.st_size > limit:
            raise DumpRefused(f"{st.st_size} bytes, more than {limit}; not read")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        raw = b"".join(chunks)
        if len(raw) > limit:
            raise DumpRefused(f"grew past {limit} bytes while read; not read")
        return raw
    finally:
        os.close(fd)


def job_prefixes(dir_fd: int) -> list[str]:
    """The job's own dump prefixes (absolute paths), deduplicated, at most MAX_PREFIXES."""
    try:
        text = _read(dir_fd, JOB_PREFIXES, 1 << 14).decode("utf-8", errors="replace")
    except (OSError, DumpRefused):
        return []
    found = [p for p in dict.fromkeys(line.strip() for line in text.splitlines()) if p.startswith("/")]
    return found[:MAX_PREFIXES]


def candidates(dir_fd: int, base: str) -> tuple[list[tuple[int, str]], int]:
    """(rank, name) of the dumps named <base><rank>, by rank; and how many entries were not looked at."""
    found: list[tuple[int, str]] = []
    with os.scandir(dir_fd) as entries:
        for i, entry in enumerate(entries):
            if i >= MAX_ENTRIES:
                return sorted(found), 1
            if entry.name.startswith(base) and (m := _RANK.fullmatch(entry.name[len(base) :])):
                found.append((int(m.group(1)), entry.name))
    return sorted(found), 0


def scan(dump_dir: str, max_dumps: int, limit: int, bounds: Bounds | None = None) -> Iterator[dict[str, Any]]:
    """One record per dump: {file, rank, format, bytes, digest} or {file, rank, skipped}; each dump
    decoded within `bounds` (default: its own CPU second or two, 8 bytes of memory per byte read)."""
    bounds = bounds or Bounds(memory_mb=(1024 + 8 * (limit >> 20)), cpu_s=2, wall_s=3, result_bytes=MAX_DIGEST)
    places: list[tuple[str, str]] = [(dump_dir, OUR_PREFIX)]
    try:
        top = os.open(dump_dir, _DIR | os.O_NOFOLLOW)
    except OSError as exc:
        yield {"file": dump_dir, "skipped": f"dump directory not opened ({exc.strerror})"}
        return
    try:
        for prefix in job_prefixes(top):
            folder, base = os.path.split(prefix)
            if os.access(folder, os.W_OK | os.X_OK):  # only where the job's user could have written it
                places.append((folder, base))
            else:
                yield {"file": prefix, "skipped": "the job's TORCH_FR_DUMP_TEMP_FILE lies where its user cannot write"}
    finally:
        os.close(top)
    left = max_dumps
    for folder, base in places:
        try:
            dir_fd = os.open(folder, _DIR | (os.O_NOFOLLOW if folder == dump_dir else 0))
        except OSError as exc:
            yield {"file": folder, "skipped": f"not opened ({exc.strerror})"}
            continue
        try:
            found, unseen = candidates(dir_fd, base)
            if unseen:
                yield {"file": folder, "skipped": f"more than {MAX_ENTRIES} entries; the rest not looked at"}
            for rank, name in found[:left]:
                yield one(dir_fd, name, os.path.join(folder, name), rank, limit, bounds)
            if len(found) > left:  # one line for all of them: 10,000 files must not make 10,000 notes
                yield {
                    "file": folder,
                    "skipped": f"{len(found) - left} more dumps past max_dumps={max_dumps}; not read",
                }
            left = max(0, left - len(found))
        finally:
            os.close(dir_fd)


def one(dir_fd: int, name: str, path: str, rank: int, limit: int, bounds: Bounds) -> dict[str, Any]:
    try:
        raw = _read(dir_fd, name, limit)
    except OSError as exc:
        return {"file": path, "rank": rank, "skipped": f"not opened ({exc.strerror or exc})"}
    except DumpRefused as exc:
        return {"file": path, "rank": rank, "skipped": str(exc)}
    parsed = run_parse(lambda: _decoded(raw), bounds)
    got = parsed.value
    if not parsed.ok or not isinstance(got, dict) or not isinstance(got.get("digest"), dict):
        return {"file": path, "rank": rank, "skipped": f"not read: {parsed.reason or 'bad result'}"}
    if "refused" in got:
        return {"file": path, "rank": rank, "skipped": str(got["refused"])[:300]}
    return {"file": path, "rank": rank, "format": str(got.get("format")), "bytes": len(raw), "digest": got["digest"]}


def _decoded(raw: bytes) -> dict[str, Any]:
    """In the dump's child: {format, digest}, or {refused, digest: {}} for bytes that are not a dump."""
    try:
        fmt, data = decode(raw)
        return {"format": fmt, "digest": digest(data)}
    except (DumpRefused, ValueError) as exc:
        return {"refused": str(exc), "digest": {}}


def main(argv: list[str]) -> int:
    """argv: dump_dir max_dumps max_bytes mem_bytes dump_s (each dump's CPU and wall seconds)."""
    import resource

    dump_dir, max_dumps, limit, mem, dump_s = argv[0], int(argv[1]), int(argv[2]), int(argv[3]), float(argv[4])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    bounds = Bounds(memory_mb=mem >> 20, cpu_s=dump_s, wall_s=dump_s + 1, result_bytes=MAX_DIGEST)
    out = sys.stdout
    for record in scan(dump_dir, max_dumps, limit, bounds):
        out.write(json.dumps(record) + "\n")
        out.flush()  # a reader killed at its time limit leaves every finished line behind
    return 0
