"""Files under a directory we own, reached one component at a time, never through a symlink.

Whoever can write into a shared spool (another node's root, a neighbour on a misconfigured
share) could plant `jobs/<id> -> /etc`. Every component below the root is opened relative to its
parent's descriptor with O_NOFOLLOW, so a planted link raises `SymlinkRefused` instead of being
followed: no chmod, write or delete lands at its target. The root itself is the operator's
configured path and is trusted.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class SymlinkRefused(OSError):
    """A path component below the root is a symbolic link (or not what it should be)."""


def _check_name(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def open_child(parent: int, name: str, create: bool = False, mode: int = 0o700) -> int:
    """The directory `name` inside `parent`, created if asked; a link there raises SymlinkRefused."""
    _check_name(name)
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=parent)
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except NotADirectoryError:  # O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: say what it is
        if stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
            raise SymlinkRefused(f"{name}: is a symbolic link; not followed") from None
        raise


@contextlib.contextmanager
def opened_dir(root: Path, parts: Sequence[str], create: bool = False, mode: int = 0o700) -> Iterator[int]:
    """A descriptor of root/parts[0]/parts[1]/..., each part checked, created (with `mode`) if asked."""
    if create:
        root.mkdir(parents=True, exist_ok=True, mode=mode)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts:
            child = open_child(fd, name, create, mode)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def write_at(dir_fd: int, name: str, data: bytes, mode: int = 0o600) -> None:
    """Temporary file, fsync, rename, all inside `dir_fd`: readers see the old file or the new one."""
    _check_name(name)
    tmp = f".{name}.{os.getpid()}.{time.monotonic_ns()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def open_at(dir_fd: int, name: str) -> BinaryIO:
    """A regular file in `dir_fd`, open for reading; a link, FIFO or device raises OSError."""
    fd = os.open(_check_name(name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{name}: not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_at(dir_fd: int, name: str, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file in `dir_fd`; a link, FIFO or device raises OSError."""
    with open_at(dir_fd, name) as fh:
        return fh.read(limit)
