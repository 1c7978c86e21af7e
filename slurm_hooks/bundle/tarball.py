"""A .tar.gz bundle, extracted with bounds into a private directory that does not outlive its run.

Only the bundle's own layout is taken (`job.json`, `nodes|kernel|logs/<name>`, at the top or
under one folder), only regular files, never sparse ones. The tarball is read as a stream and
no further than `limits.tar_mb` uncompressed bytes, nor past `limits.tar_members` entries, so a
4 GiB bomb or 100,000 tiny files cost what the limits say. The directory goes on every way out
of `extracted`; one that a SIGKILLed run left behind is removed by the next run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tarfile
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from slurm_hooks.bundle.layout import PARTS
from slurm_hooks.config import Limits

PREFIX = "slurm-hooks-bundle-"
_CHUNK = 1 << 20
MAX_HEADER = 64 << 10  # bytes of a GNU long-name or PAX header: a real one is a path and a few values
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
        if self.type in _EXTENDED and self.size > MAX_HEADER:
            raise HeaderTooLarge(f"an extended header declares {self.size} bytes (more than {MAX_HEADER})")
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


def _copy(tar: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    src = tar.extractfile(member)
    assert src is not None  # a regular member always has data
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out:
        left = member.size
        while left > 0 and (chunk := src.read(min(_CHUNK, left))):
            out.write(chunk)
            left -= len(chunk)


def _extract(path: Path, root: Path, limits: Limits, notes: list[str]) -> None:
    budget, taken, ignored = limits.tar_mb << 20, 0, 0
    kinds: Counter[str] = Counter()
    for part in PARTS:
        (root / part).mkdir(mode=0o700)
    try:
        with tarfile.open(path, "r|*", tarinfo=_BoundedInfo) as tar:  # a stream: each byte read once, never seeked back
            for count, member in enumerate(tar):
                rel = _bundle_path(member.name)
                if count >= limits.tar_members:
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
                kind = rel.split("/")[0]  # each part counts on its own (bundle.part_cap); job.json is one
                if kinds[kind] >= (limits.bundle_files if kind == "logs" else limits.tar_members):
                    notes.append(f"tarball: {rel}: past limits.bundle_files={limits.bundle_files} logs; left out")
                    continue
                try:
                    _copy(tar, member, root / rel)
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
            raise TarballError(f"{path}: not a readable bundle tarball ({exc})") from None
        notes.append(f"tarball: cut short ({exc}); what came before is used")
    if ignored:
        notes.append(f"tarball: {ignored} entries outside the bundle layout (or not regular files) ignored")


@contextlib.contextmanager
def extracted(path: Path, limits: Limits) -> Iterator[tuple[Path, list[str]]]:
    """(private directory holding the bundle, notes on what was left out)."""
    tmp = Path(tempfile.gettempdir())
    sweep_leftovers(tmp)
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-") as where:
        _extract(path, Path(where), limits, notes)
        yield Path(where), notes
