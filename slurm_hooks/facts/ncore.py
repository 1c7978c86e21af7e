"""The ncore (CoreWeave node image) version: no on-node file is documented, so sources are configured."""

from __future__ import annotations

import os

from slurm_hooks.config import NcoreSource
from slurm_hooks.proc import run_bounded
from slurm_hooks.safeio import read_small

MAX_VERSION = 64


def _first_line(text: str) -> str | None:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
    return line[:MAX_VERSION] if line else None


def read_ncore(sources: tuple[NcoreSource, ...], host_root: str, timeout_s: float, errors: list[str]) -> str | None:
    """The first source that yields a version wins; each failure is recorded in `errors`."""
    for src in sources:
        try:
            if src.type == "file":
                value = _first_line(read_small(os.path.join(host_root, src.path.lstrip("/")), 4096))
            elif src.type == "env":
                value = _first_line(os.environ.get(src.name, ""))
            else:
                value = _from_command(src.argv, timeout_s, errors)
                if value is None:
                    continue  # why is already in `errors`
        except OSError as exc:
            errors.append(f"ncore {src.type} {src.path or src.name or src.argv[0]}: {exc.strerror or exc}")
            continue
        if value:
            return value
        errors.append(f"ncore {src.type} {src.path or src.name or src.argv[0]}: empty")
    return None


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
