"""File I/O that cannot hang, balloon or be redirected: bounded reads, no FIFOs, atomic writes."""

from __future__ import annotations

import contextlib
import os
import stat
import time

SMALL = 64 * 1024


def read_small(path: str | os.PathLike[str], limit: int = SMALL) -> str:
    """Up to `limit` bytes of a regular file (procfs files count), decoded leniently.

    O_NONBLOCK plus the S_ISREG check means a FIFO or device planted where a file should be
    raises instead of blocking the hook forever. Raises OSError on any problem.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path}: not a regular file")
        chunks, left = [], limit
        while left > 0 and (chunk := os.read(fd, min(left, SMALL))):
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], data: str | bytes, mode: int = 0o644) -> None:
    """Write to a temporary file in the same directory, fsync, rename: readers see old or new, never half."""
    raw = data.encode() if isinstance(data, str) else data
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{time.monotonic_ns()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
