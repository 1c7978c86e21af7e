"""The ncore (CoreWeave node image) version: no on-node file is documented, so sources are configured.

`cmdline` reads the image name from the kernel command line, where CoreWeave's netboot (its public
iPXE templates) puts the rootfs URL `.../coreweave-ncore-images/<image-name>/...`. That URL's query
string carries presigned credentials: only the one path segment after `coreweave-ncore-images/` is
kept, and no other part of the command line is ever recorded, logged or put in an error.
"""

from __future__ import annotations

import os
import re

from slurm_hooks.config import NcoreSource
from slurm_hooks.core.proc import run_bounded
from slurm_hooks.core.safeio import read_small

MAX_VERSION = 64
CMDLINE = "proc/cmdline"  # under host_root; /proc/cmdline is the host's in any container too
_IMAGES = "coreweave-ncore-images/"
_IMAGE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}(?=/)")  # a whole path segment, nothing else


def _first_line(text: str) -> str | None:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
    return line[:MAX_VERSION] if line else None


def read_ncore(sources: tuple[NcoreSource, ...], host_root: str, timeout_s: float, errors: list[str]) -> str | None:
    """The first source that yields a version wins; each failure is recorded in `errors`."""
    for src in sources:
        try:
            if src.type == "cmdline":
                value = _from_cmdline(host_root, errors)
                if value is None:
                    continue  # why is already in `errors`
            elif src.type == "file":
                value = _first_line(read_small(os.path.join(host_root, src.path.lstrip("/")), 4096))
            elif src.type == "env":
                value = _first_line(os.environ.get(src.name, ""))
            else:
                value = _from_command(src.argv, timeout_s, errors)
                if value is None:
                    continue  # why is already in `errors`
        except OSError as exc:
            errors.append(f"ncore {src.type} {_where(src)}: {exc.strerror or exc}")
            continue
        if value:
            return value
        errors.append(f"ncore {src.type} {_where(src)}: empty")
    return None


def _where(src: NcoreSource) -> str:
    return "/" + CMDLINE if src.type == "cmdline" else src.path or src.name or src.argv[0]


def _from_cmdline(host_root: str, errors: list[str]) -> str | None:
    """The image name from the kernel command line; None (said in `errors`, without any of the
    command line's text) when there is none. OSError propagates: its message holds only the path."""
    text = read_small(os.path.join(host_root, CMDLINE), 4096)
    at = text.find(_IMAGES)
    match = _IMAGE_NAME.match(text, at + len(_IMAGES)) if at >= 0 else None
    if match is None:
        why = "not a plain image name after" if at >= 0 else "no"
        errors.append(f"ncore cmdline /{CMDLINE}: {why} {_IMAGES}<image-name>/ in the kernel command line")
        return None
    return match.group()


def _from_command(argv: tuple[str, ...], timeout_s: float, errors: list[str]) -> str | None:
    """First line of the command's output ("" if none); a failing command is noted in `errors`: None."""
    import subprocess  # only sites with a command source pay for it on the job-start path

    try:
        out = run_bounded(argv, timeout_s)
    except subprocess.TimeoutExpired:
        errors.append(f"ncore command {argv[0]}: no answer within {timeout_s:g}s")
        return None
    if out.returncode != 0:
        errors.append(f"ncore command {argv[0]}: exit {out.returncode}")
        return None
    return _first_line(out.stdout.decode(errors="replace")) or ""
