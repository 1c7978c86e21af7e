"""kmsg-follow's output file: appends that are all or nothing, rotation to FILE.1, and the trim a
restart does. Opened for every batch and never through a link: a hostPath directory that is
recreated, a file an operator moved away, or a planted symlink cost a batch, never the process."""

from __future__ import annotations

import os
import stat
from typing import Protocol


class Output(Protocol):
    """The output file; append is all or nothing: a failed write leaves the file as it was."""

    def append(self, data: bytes) -> tuple[int, int]:
        """(inode, size) after writing `data`; raises OSError and leaves no part of `data` behind."""
        ...

    def identity(self) -> tuple[int, int] | None:
        """(inode, size) of FILE, None if there is none."""
        ...

    def rotate(self) -> None: ...
    def trim(self, size: int) -> None: ...


class OutputFile:
    """FILE on a local disk (a hostPath): opened for every batch, never through a link."""

    def __init__(self, path: str) -> None:
        self.path = path

    def _open(self, flags: int) -> int:
        fd = os.open(self.path, flags | os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{self.path}: not a regular file")
        return fd

    def append(self, data: bytes) -> tuple[int, int]:
        fd = self._open(os.O_APPEND | os.O_CREAT)
        try:
            before = os.fstat(fd)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fdatasync(fd)  # before the state says these lines are there
            except OSError:
                os.ftruncate(fd, before.st_size)  # no half line: frees the space the write took
                raise
            return before.st_ino, before.st_size + len(data)
        finally:
            os.close(fd)

    def identity(self) -> tuple[int, int] | None:
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size

    def rotate(self) -> None:
        os.replace(self.path, self.path + ".1")

    def trim(self, size: int) -> None:
        fd = self._open(0)
        try:
            os.ftruncate(fd, size)
        finally:
            os.close(fd)
