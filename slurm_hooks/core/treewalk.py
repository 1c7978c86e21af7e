"""One way to walk a directory tree that someone else may have shaped: an explicit stack of
directory descriptors, no recursion, no link followed, a depth cap and a deadline.

`os.fwalk` and `shutil.rmtree` recurse in Python (3.11): a tree 1,500 levels deep raises
RecursionError, and a directory a job filled with 200,000 entries is walked to its end whatever the
hook's budget. Here every directory is opened relative to its parent's descriptor with
`O_NOFOLLOW | O_DIRECTORY`, entries that are not directories (links, FIFOs, sockets, devices) are
handed to the caller by name and never opened, a directory on another filesystem (a mount point)
is not entered, and at most `max_depth` directories are open at once (fds stay bounded; what lies
deeper is handed over as `deep`, not entered). Time is checked at every entry: past the deadline
the walk stops and says so (`timed_out`), so the caller can leave the rest to its next run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

MAX_DEPTH = 32  # our own trees are 1-4 levels deep; deeper is input-shaped (two fds per open level)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NO_DEADLINE = float("inf")
ERRORS_KEPT = 8  # a walk past 200,000 unreadable directories keeps the first few reasons, not all
_SWAPPED = object()  # _enter's answer for a directory that is a link by the time it is opened
SHOWN = 80  # characters of a name in a report: names are the tree owner's text (newlines and all)


class Event(NamedTuple):
    kind: Literal["dir", "file", "deep", "left"]
    fd: int  # dir: the directory's own descriptor; otherwise the directory holding `name`
    name: str


def shown(name: str) -> str:
    """A name as a report may carry it: escaped (no newline reaches a log line) and cut short."""
    return ascii(name)[1:-1][:SHOWN]


@dataclass
class _Level:
    fd: int
    entries: os._ScandirIterator[str]  # closed by hand: a level ends before its `with` could
    name: str


@dataclass
class Walk:
    """Events for the tree below the open directory `top` (which the caller opened and closes).

    dir: a directory just entered (fd: its own); file: anything that is not a directory; deep: a
    directory at the depth cap, not entered; left: a directory whose entries have all been
    handed out, its own fd closed (fd: its parent). `own_modes`: a directory of this process's uid
    that it cannot list or change gets u+rwx first (the owner may; deleting needs it)."""

    top: int
    deadline: float = NO_DEADLINE
    max_depth: int = MAX_DEPTH
    own_modes: bool = False
    errors: list[str] = field(default_factory=list)  # what could not be entered, and why (the first few)
    timed_out: bool = False

    def events(self) -> Iterator[Event]:
        device = os.fstat(self.top).st_dev
        if self.own_modes:
            _own_modes(self.top)
        stack = [_Level(self.top, os.scandir(self.top), "")]
        try:
            while stack:
                level = stack[-1]
                if time.monotonic() > self.deadline:
                    self.timed_out = True
                    return
                entry = next(level.entries, None)
                if entry is None:
                    stack.pop()
                    level.entries.close()
                    if stack:
                        os.close(level.fd)
                        yield Event("left", stack[-1].fd, level.name)
                    continue
                if not _is_dir(entry):
                    yield Event("file", level.fd, entry.name)
                elif len(stack) >= self.max_depth:
                    yield Event("deep", level.fd, entry.name)
                elif (entered := self._enter(level.fd, entry.name, device)) is _SWAPPED:
                    yield Event("file", level.fd, entry.name)  # a link now: handed out, never followed
                elif isinstance(entered, _Level):
                    stack.append(entered)
                    yield Event("dir", entered.fd, entry.name)
        finally:
            for level in stack:
                level.entries.close()
                if level.fd != self.top:
                    os.close(level.fd)

    def _enter(self, parent: int, name: str, device: int) -> _Level | object | None:
        """The directory's level; _SWAPPED when it is a link by now; None when it cannot be entered."""
        try:
            fd = open_dir(parent, name, self.own_modes)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                return _SWAPPED
            if exc.errno != errno.ENOENT:  # gone meanwhile: nothing to say
                self._error(f"{shown(name)}: {exc.strerror or exc}")
            return None
        try:
            if os.fstat(fd).st_dev != device:  # a mount point: not ours to walk into
                raise OSError(errno.EXDEV, "another filesystem; not entered")
            return _Level(fd, os.scandir(fd), name)
        except OSError as exc:  # EMFILE, ENOMEM: this one is left, the walk goes on
            os.close(fd)
            self._error(f"{shown(name)}: {exc.strerror or exc}")
            return None

    def _error(self, why: str) -> None:
        if len(self.errors) < ERRORS_KEPT:
            self.errors.append(why)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:  # gone meanwhile: handed out as a file, whose unlink finds nothing
        return False


def open_dir(parent: int, name: str, own_modes: bool = False) -> int:
    """The directory `name` in `parent`, never through a link (ELOOP/ENOTDIR for one). With
    `own_modes`, a directory of ours without r/x gets u+rwx by an O_PATH descriptor (no name is
    looked up twice), and one without w gets it too."""
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    except PermissionError:
        if not own_modes:
            raise
        _chmod_by_path_fd(parent, name)
        fd = os.open(name, DIR_FLAGS, dir_fd=parent)
    if own_modes:
        _own_modes(fd)
    return fd


def _own_modes(fd: int) -> None:
    st = os.fstat(fd)
    if st.st_uid == os.geteuid() and st.st_mode & 0o700 != 0o700:
        os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)


def _chmod_by_path_fd(parent: int, name: str) -> None:
    """u+rwx on a directory we may not open for reading: fchmod refuses an O_PATH descriptor, and
    /proc/self/fd/N names exactly the inode that descriptor holds (the name is not looked up again)."""
    fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        st = os.fstat(fd)
        if st.st_uid == os.geteuid():
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) | 0o700)
    finally:
        os.close(fd)


def tree_size(parent: int, name: str, deadline: float, max_depth: int = MAX_DEPTH) -> int | None:
    """Bytes of the regular files below `name` (links not followed, nothing past the depth cap);
    None when the deadline came first."""
    try:
        top = os.open(name, DIR_FLAGS, dir_fd=parent)
    except OSError:
        return 0  # gone, or no longer a directory: nothing of ours to count
    total = 0
    walk = Walk(top, deadline, max_depth)
    try:
        for event in walk.events():
            if event.kind == "file":
                with contextlib.suppress(OSError):
                    st = os.lstat(event.name, dir_fd=event.fd)
                    total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    except OSError:  # the top could not be listed: what was counted is what there is to say
        pass
    finally:
        os.close(top)
    return None if walk.timed_out else total


def chown_tree(parent: int, name: str, uid: int, gid: int, max_depth: int = MAX_DEPTH) -> None:
    """`name` and everything below it to uid:gid; links are changed themselves, never followed;
    a file renamed or removed meanwhile (a writer's temporary) is skipped, and so is a missing `name`."""
    try:
        top = os.open(name, DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        return
    try:
        os.fchown(top, uid, gid)
        for event in Walk(top, NO_DEADLINE, max_depth).events():
            if event.kind == "dir":
                os.fchown(event.fd, uid, gid)
            elif event.kind in ("file", "deep"):  # "deep": the directory itself, not what is below
                with contextlib.suppress(FileNotFoundError):
                    os.chown(event.name, uid, gid, dir_fd=event.fd, follow_symlinks=False)
    finally:
        os.close(top)
