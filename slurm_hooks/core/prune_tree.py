"""Deleting a tree someone else shaped: iteratively (core/treewalk.py), as the tree's owner, within a
deadline; what is left is said, and the next run goes on from there.

A job user owns its flight-recorder dump directory and can put anything in it: a chain of 1,500
directories (`shutil.rmtree` recurses: RecursionError), 200,000 files (past any budget), links,
FIFOs, sockets, devices, names with newlines, directories without r/w/x. Deleting that as root
would also mean root acting on paths the user can change under it. So a tree whose owner is not
root is emptied by a forked child that first drops to the owner's uid and gid (no supplementary
groups): whatever the tree holds or becomes meanwhile, the child can do only what its owner
could. The root parent then removes the emptied top directory from its own parent, which the
user cannot write. Entries that are not directories are unlinked by name, never opened; a
directory at the depth cap is moved up to the top (renamed, in the same tree) and emptied from
there, so depth costs descriptors up to the cap and never more.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import os
import stat
import time
from dataclasses import dataclass

from slurm_hooks.core.layout import is_number
from slurm_hooks.core.sandbox import Bounds, Owner, run_parse
from slurm_hooks.core.treewalk import MAX_DEPTH, Walk, open_dir, shown

PRUNING = ".pruning."  # the name of a doomed entry while its removal takes more than one run
GRACE_S = 1.0  # past the deadline, what the owner's child gets to say so before it is killed
ANSWER_MAX = 4096  # the child's answer: two numbers and one short line
CHILD_MB = 256  # the deleting child's memory beyond its forked image: a stack of descriptors and names
_hoisted = itertools.count()


@dataclass(frozen=True)
class Removal:
    gone: bool  # nothing is left at the name
    removed: int  # entries removed by this run
    left: str = ""  # when not gone: why (the first error, or the deadline); the next run goes on


@dataclass
class _Tally:
    removed: int = 0
    first: str = ""  # the first failure, as a report says it; then only counted (memory stays flat)
    failures: int = 0
    timed_out: bool = False

    def attempt(self, remove: str, fd: int, name: str) -> None:
        try:
            (os.rmdir if remove == "rmdir" else os.unlink)(name, dir_fd=fd)
            self.removed += 1
        except FileNotFoundError:
            pass
        except OSError as exc:
            if not (remove == "rmdir" and exc.errno == errno.ENOTEMPTY and self.failures):  # said already
                self.fail(f"{shown(name)}: {exc.strerror or exc}")

    def fail(self, why: str) -> None:
        self.first = self.first or why
        self.failures += 1

    @property
    def left(self) -> str:
        if self.timed_out:
            return "stopped at the deadline; the rest is left for the next run"
        more = f" (and {self.failures - 1} more)" if self.failures > 1 else ""
        return self.first + more


def remove_tree(parent: int, name: str, deadline: float, max_depth: int = MAX_DEPTH) -> Removal:
    """Remove `name` in the directory `parent` by `deadline` (time.monotonic()). Anything but a
    directory is unlinked (a link: the link only). A directory is emptied as its owner when this
    process is root and the owner is not, then removed here."""
    try:
        st = os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return Removal(True, 0)
    if not stat.S_ISDIR(st.st_mode):
        return _unlink(parent, name)
    try:
        top = open_dir(parent, name)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # swapped for a link since the lstat
            return _unlink(parent, name)
        return Removal(exc.errno == errno.ENOENT, 0, f"{shown(name)}: {exc.strerror or exc}")
    try:
        owner = os.fstat(top)
        if os.geteuid() == 0 and owner.st_uid != 0:  # never as group root, whatever the top's group
            removed, left = _as_owner(top, owner.st_uid, owner.st_gid, deadline, max_depth)
        else:
            tally = empty_dir(top, deadline, max_depth)
            removed, left = tally.removed, tally.left
    finally:
        os.close(top)
    if left:
        return Removal(False, removed, left)
    gone = _unlink(parent, name, rmdir=True)
    return Removal(gone.gone, removed + gone.removed, gone.left)


def prune_entry(parent: int, name: str, deadline: float) -> Removal:
    """remove_tree, under a name that says it is going (PRUNING + name, in the same directory):
    a removal cut short by the deadline changes the directory's mtime, so its age would no longer
    say it must go; the next run finds the mark and goes on, whatever the age."""
    if not name.startswith(PRUNING):
        with contextlib.suppress(OSError):  # a mark already there, still full: removed in place
            os.rename(name, PRUNING + name, src_dir_fd=parent, dst_dir_fd=parent)
            name = PRUNING + name
    return remove_tree(parent, name, deadline)


def _unlink(parent: int, name: str, rmdir: bool = False) -> Removal:
    tally = _Tally()
    tally.attempt("rmdir" if rmdir else "unlink", parent, name)
    return Removal(not tally.failures, tally.removed, tally.left)


def empty_dir(top: int, deadline: float, max_depth: int = MAX_DEPTH) -> _Tally:
    """Everything below the open directory `top`, removed with this process's rights."""
    tally = _Tally()
    while True:  # one pass per round of hoisting: each pass starts where the last moved things to
        walk = Walk(top, deadline, max_depth, own_modes=os.geteuid() != 0)
        hoisted = 0
        try:
            for event in walk.events():
                if event.kind == "file":
                    tally.attempt("unlink", event.fd, event.name)
                elif event.kind == "left":
                    tally.attempt("rmdir", event.fd, event.name)
                elif event.kind == "deep":
                    hoisted += _hoist(event.fd, event.name, top, tally)
        except OSError as exc:  # the top itself could not be listed or changed
            tally.fail(f"not listed: {exc.strerror or exc}")
            return tally
        for why in walk.errors:
            tally.fail(why)
        tally.timed_out = walk.timed_out
        if walk.timed_out or not hoisted:
            return tally


def _hoist(fd: int, name: str, top: int, tally: _Tally) -> int:
    """Move a directory at the depth cap up into `top`: 1 once moved. Moving a directory to another
    parent needs write permission on it (its `..` changes): as its owner, open_dir gives that."""
    try:
        os.close(open_dir(fd, name, own_modes=os.geteuid() != 0))
        for _ in range(8):
            try:
                os.rename(name, f".hoisted.{os.getpid()}.{next(_hoisted)}", src_dir_fd=fd, dst_dir_fd=top)
                return 1
            except OSError as exc:  # that name is taken (the owner may have put anything there): the next
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                    raise
    except OSError as exc:
        tally.fail(f"{shown(name)}: {exc.strerror or exc} (below the depth cap)")
    return 0


def _as_owner(top: int, uid: int, gid: int, deadline: float, max_depth: int) -> tuple[int, str]:
    """empty_dir(top) in a bounded child that is uid:gid, no supplementary groups, holding only
    `top` of root's descriptors (core/sandbox.py): (removed, left)."""

    def empty() -> dict[str, object]:
        tally = empty_dir(top, deadline, max_depth)
        return {"removed": tally.removed, "left": tally.left}

    wall_s = max(0.1, deadline - time.monotonic()) + GRACE_S
    parsed = run_parse(empty, Bounds(CHILD_MB, wall_s, wall_s, ANSWER_MAX), Owner(uid, gid), keep=(top,))
    got = parsed.value
    if isinstance(got, dict) and isinstance(got.get("removed"), int) and isinstance(got.get("left"), str):
        return got["removed"], got["left"][:400]
    return 0, f"deletion as uid {uid} ended without an answer ({parsed.reason or 'bad result'})"


def jobs_with_state(state_dir: str) -> frozenset[str]:
    """The jobs this node still runs: the Prolog writes `<state_dir>/jobs/<id>` and the Epilog
    removes it last, so retention never touches a job that has not ended here. Raises OSError
    when that cannot be told (the caller then removes nothing)."""
    try:
        names = os.listdir(os.path.join(state_dir, "jobs"))
    except FileNotFoundError:  # no job has run here since the state dir (memory) was emptied
        return frozenset()
    return frozenset(name for name in names if is_number(name))
