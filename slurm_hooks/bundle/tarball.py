"""A .tar.gz bundle, extracted with bounds into a private directory that does not outlive its run.

Only the bundle's own layout is taken (`job.json`, `nodes|kernel|logs/<name>`, at the top or
under one folder), only regular files, never sparse ones. The tarball is read as a stream and
no further than `limits.tar_mb` uncompressed bytes, nor past `limits.tar_members` entries, so a
4 GiB bomb or 100,000 tiny files cost what the limits say. Its headers are bounded too: each
extended one, their sum, and how many may chain (tarfile follows a chain by recursion).

tarfile and zlib parse the bytes in a bounded child (core/sandbox.py), as the tarball's owner
when this runs as root: the child is handed the open tarball and the bundle directory as
descriptors, writes the members there, and answers with its notes. Whatever else a tarball can
make tarfile do, it costs that child (`tarball: not read: killed: memory limit`), never the
command. The bundle directory sits inside a root-only one, so no other process of the owner can
reach it while the child writes. The directory goes on every way out of `extracted`; one that a
SIGKILLed run left behind is removed by the next run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from slurm_hooks.bundle.layout import PARTS
from slurm_hooks.config import Limits
from slurm_hooks.core.sandbox import Bounds, Owner, owner_of, run_parse

PREFIX = "slurm-hooks-bundle-"
_CHUNK = 1 << 20
MAX_HEADER = 64 << 10  # bytes of a GNU long-name or PAX header: a real one is a path and a few values
MAX_HEADERS = 1 << 20  # bytes of all of a tarball's extended headers together (a global one is kept and copied)
MAX_CHAIN = 8  # extended headers in a row before one member (a real one: a PAX header and a long name or two)
MAX_NOTES = 50  # notes the extraction sends back; the rest are counted
# The extraction child: address space beyond the forked image, CPU and wall seconds, its answer's bytes.
# (Config `limits` has no keys for these yet: module constants until it does.)
EXTRACT_BOUNDS = Bounds(memory_mb=512, cpu_s=120, wall_s=180, result_bytes=64 << 10)
_EXTENDED = (
    tarfile.GNUTYPE_LONGNAME,
    tarfile.GNUTYPE_LONGLINK,
    tarfile.XHDTYPE,
    tarfile.XGLTYPE,
    tarfile.SOLARIS_XHDTYPE,
)


class TarballError(Exception):
    """Not a readable tarball at all."""


class HeaderTooLarge(tarfile.HeaderError):
    """An extended header that declares more than MAX_HEADER bytes (tarfile would read them all)."""


class _BoundedTar(tarfile.TarFile):
    """A TarFile that counts the extended headers it has met: in a row, and in all."""

    chain = 0
    header_bytes = 0
    members: list[tarfile.TarInfo]  # tarfile's own list, which typeshed leaves out


class _BoundedInfo(tarfile.TarInfo):
    """tarfile's member header, judged before tarfile reads what it declares.

    tarfile reads a GNU long-name or PAX header's body in one piece (a 3 MB .tar.gz can declare
    3 GiB), and a PAX sparse 1.0 member's map until its count is met: both are refused here,
    from the 512-byte header alone, before a byte of them is read. The check sits in
    `_proc_member`, the hook tarfile names for subclasses and calls for every header (follow-up
    ones too), not in `frombuf`: Debian 13's Python 3.13.5 parses headers through `_frombuf`
    and never calls an overridden `frombuf`.
    """

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        assert isinstance(tarfile_, _BoundedTar)
        if self.type in _EXTENDED:
            if self.size > MAX_HEADER:
                raise HeaderTooLarge(f"an extended header declares {self.size} bytes (more than {MAX_HEADER})")
            tarfile_.chain += 1
            tarfile_.header_bytes += self.size
            if tarfile_.chain > MAX_CHAIN:  # tarfile reads the next header by recursion
                raise HeaderTooLarge(f"more than {MAX_CHAIN} extended headers in a row")
            if tarfile_.header_bytes > MAX_HEADERS:
                raise HeaderTooLarge(f"extended headers past {MAX_HEADERS} bytes in all")
        else:
            tarfile_.chain = 0
        if self.type == tarfile.GNUTYPE_SPARSE:  # its extension headers would be read in a loop
            raise HeaderTooLarge("an old GNU sparse member")
        return super()._proc_member(tarfile_)  # type: ignore[misc, no-any-return]

    def _proc_gnusparse_10(self, member: tarfile.TarInfo, pax: dict[str, str], tar: tarfile.TarFile) -> None:
        """Marks the member sparse (and so refused) without reading its map; tarfile skips its data."""
        member.sparse = b""


def _bundle_path(name: str) -> str | None:
    """`job.json` or `part/file` for a member in the bundle layout (optionally under one folder)."""
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if parts and parts[-1] == "job.json" and (len(parts) == 1 or (len(parts) == 2 and parts[0] not in PARTS)):
        return "job.json"
    if len(parts) in (2, 3) and parts[-2] in PARTS:
        leaf = parts[-1]
        if leaf not in ("..",) and not leaf.startswith(".") and "\0" not in leaf and len(leaf.encode()) <= 255:
            return f"{parts[-2]}/{leaf}"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_leftovers(tmp: Path) -> None:
    """Remove our extraction directories whose run is gone (SIGKILL gives no chance to clean up)."""
    for entry in tmp.glob(f"{PREFIX}*"):
        pid = entry.name[len(PREFIX) :].split("-")[0]
        with contextlib.suppress(OSError):
            st = entry.lstat()
            if (
                pid.isdigit()
                and not _alive(int(pid))
                and entry.is_dir()
                and not entry.is_symlink()
                and st.st_uid == os.geteuid()
            ):
                shutil.rmtree(entry, ignore_errors=True)


def _copy(tar: tarfile.TarFile, member: tarfile.TarInfo, dir_fd: int, name: str) -> None:
    src = tar.extractfile(member)
    assert src is not None  # a regular member always has data
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as out:
        left = member.size
        while left > 0 and (chunk := src.read(min(_CHUNK, left))):
            out.write(chunk)
            left -= len(chunk)


def _extract(tar_fd: int, root_fd: int, limits: Limits) -> dict[str, Any]:
    """The child's work: {notes, unreadable}; every file written below `root_fd`."""
    budget, taken, ignored, count = limits.tar_mb << 20, 0, 0, 0
    notes: list[str] = []
    kinds: Counter[str] = Counter()
    dirs = {"": root_fd}
    for part in PARTS:
        os.mkdir(part, 0o700, dir_fd=root_fd)
        dirs[part] = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=root_fd)
    unreadable = ""
    try:
        with (
            os.fdopen(tar_fd, "rb", closefd=False) as raw,
            _BoundedTar.open(fileobj=raw, mode="r|*", tarinfo=_BoundedInfo) as tar,
        ):  # a stream: each byte read once, never seeked back
            while (member := tar.next()) is not None:
                tar.members.clear()  # a stream needs none of them back; kept, each holds its PAX headers
                rel = _bundle_path(member.name)
                count += 1
                if count > limits.tar_members:
                    notes.append(f"tarball: entries past limits.tar_members={limits.tar_members} left out")
                    break
                if member.issparse():
                    notes.append(f"tarball: {member.name[:200]}: sparse member refused")
                    continue
                if member.offset_data + member.size > budget:
                    notes.append(
                        f"tarball: {member.name[:200]} and the rest left out: past limits.tar_mb={limits.tar_mb}"
                    )
                    break
                if rel is None or not member.isreg():
                    ignored += not member.isdir()
                    continue
                kind, _, leaf = rel.rpartition("/")  # each part counts on its own (bundle.part_cap); job.json is one
                if kinds[kind] >= (limits.bundle_files if kind == "logs" else limits.tar_members):
                    notes.append(f"tarball: {rel}: past limits.bundle_files={limits.bundle_files} logs; left out")
                    continue
                try:
                    _copy(tar, member, dirs[kind], leaf)
                except FileExistsError:
                    notes.append(f"tarball: {member.name[:200]}: a second {rel}; the first one kept")
                    continue
                taken += 1
                kinds[kind] += 1
    except (
        tarfile.TarError,
        OSError,
        EOFError,
        zlib.error,
        ValueError,
    ) as exc:  # ValueError: a number tarfile cannot parse
        if not taken:
            unreadable = str(exc)[:300]
        notes.append(f"tarball: cut short ({str(exc)[:300]}); what came before is used")
    if ignored:
        notes.append(f"tarball: {ignored} entries outside the bundle layout (or not regular files) ignored")
    if len(notes) > MAX_NOTES:
        notes[MAX_NOTES - 1 :] = [f"tarball: {len(notes) - MAX_NOTES + 1} more notes like these"]
    return {"notes": notes, "unreadable": unreadable}


def _answer(value: object) -> tuple[list[str], str]:
    """(notes, why nothing could be read) from the child's answer, checked: it is data the child chose."""
    if not isinstance(value, dict) or not isinstance(notes := value.get("notes"), list):
        return [], "bad result"
    unreadable = value.get("unreadable")
    return [str(n)[:400] for n in notes[:MAX_NOTES]], unreadable if isinstance(unreadable, str) else ""


def _opened(path: Path) -> int:
    """The tarball, opened without blocking on a FIFO; refused unless a regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TarballError(f"{path}: not a regular file")
    return fd


def _extract_bounded(path: Path, private: Path, limits: Limits) -> tuple[Path, list[str]]:
    """The bundle directory, filled by a bounded child as the tarball's owner; the child's notes.

    Root extracting a user's tarball: the bundle directory is the owner's, inside `private`, which
    stays root's alone, so no process of the owner but the child can reach it. Otherwise the
    child runs as this process's user and `private` itself is the bundle directory."""
    try:
        tar_fd = _opened(path)
    except OSError as exc:
        raise TarballError(f"{path}: not read ({exc.strerror or exc})") from None
    try:
        owner: Owner | None = owner_of(tar_fd) if os.geteuid() == 0 else None
        where = private
        if owner is not None and owner.uid != 0:
            where = private / f"{PREFIX}{os.getpid()}-bundle"
            where.mkdir(mode=0o700)
            os.chown(where, owner.uid, owner.gid, follow_symlinks=False)
        root_fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            parsed = run_parse(lambda: _extract(tar_fd, root_fd, limits), EXTRACT_BOUNDS, owner, keep=(tar_fd, root_fd))
        finally:
            os.close(root_fd)
    finally:
        os.close(tar_fd)
    if not parsed.ok:
        if not (where / "job.json").is_file() and not any(where.glob("*/*")):  # it died before a first member
            raise TarballError(f"{path}: not read: {parsed.reason}")
        return where, [f"tarball: not read past what came before: {parsed.reason}"]
    notes, unreadable = _answer(parsed.value)
    if unreadable:
        raise TarballError(f"{path}: not a readable bundle tarball ({unreadable})")
    return where, notes


@contextlib.contextmanager
def extracted(path: Path, limits: Limits) -> Iterator[tuple[Path, list[str]]]:
    """(private directory holding the bundle, notes on what was left out)."""
    tmp = Path(tempfile.gettempdir())
    sweep_leftovers(tmp)
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as private:
        yield _extract_bounded(path, Path(private), limits)
