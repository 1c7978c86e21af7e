"""File I/O that cannot hang, balloon or be redirected: bounded reads, no FIFOs, atomic writes
made on descriptors (create new, fchmod, rename inside the directory's descriptor)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from typing import BinaryIO

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


def open_regular(path: str | os.PathLike[str], follow: bool = False) -> BinaryIO:
    """A regular file open for reading, for files another party can replace (a hostPath, a
    forwarder's copy): not through a link unless `follow`, never blocking on a FIFO, never a device.
    Raises OSError whose strerror says why (`a symbolic link, not followed`, `not a regular file`)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise OSError(errno.ELOOP, "a symbolic link, not followed", os.fspath(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def atomic_write(path: str | os.PathLike[str], data: str | bytes, mode: int = 0o644, group: int | None = None) -> None:
    """Write to a temporary file in the same directory, fsync, rename: readers see old or new, never half.

    Everything after the directory is opened happens on descriptors: the temporary file is created
    new (O_EXCL, O_NOFOLLOW) inside the directory's descriptor, its mode (and group, if given) set
    with fchmod/fchown, and the rename made inside that descriptor. So where someone else can write
    the directory, a link swapped in for the temporary name is never followed: root's chmod lands
    on the file it created, not on whatever the link names.
    """
    folder, name = os.path.split(os.fspath(path))
    write_in_dir(folder or ".", name, data.encode() if isinstance(data, str) else data, mode, group)


def write_in_dir(
    folder: str, name: str, raw: bytes, mode: int, group: int | None = None, sync: bool = True, tmp: str = ""
) -> None:
    """`write_in` the directory `folder` (the caller's configured path: trusted, followed)."""
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        write_in(dir_fd, name, raw, mode, group, sync, tmp)
    finally:
        os.close(dir_fd)


def write_in(
    dir_fd: int, name: str, raw: bytes, mode: int, group: int | None = None, sync: bool = True, tmp: str = ""
) -> None:
    """`atomic_write` inside an open directory. `tmp`: the temporary name (default a hidden, unique
    one; a fixed one is reused, so a killed run's leftover goes); `sync` False: no fsync (counters
    rewritten on every hook run, where a crash costs a count, not data)."""
    tmp = tmp or f".{name}.{os.getpid()}.{time.monotonic_ns()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    except FileExistsError:  # a killed run's leftover, or a FIFO or link planted there: removed, never opened
        os.unlink(tmp, dir_fd=dir_fd)
        fd = os.open(tmp, flags, 0o600, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view) :]
            if sync:
                os.fsync(fd)
            if group is not None:
                os.fchown(fd, -1, group)  # the owner stays (root when root writes)
            os.fchmod(fd, mode)  # on the descriptor: whatever the name holds by now is not touched
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise
