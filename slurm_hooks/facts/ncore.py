"""The ncore (CoreWeave node image) version: no on-node file is documented, so sources are configured."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from slurm_hooks.config import NcoreSource
from slurm_hooks.proc import run_bounded
from slurm_hooks.safeio import read_small

MAX_VERSION = 64


def _first_line(text: str) -> str | None:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), None)
    return line[:MAX_VERSION] if line else None


def read_ncore(sources: tuple[NcoreSource, ...], host_root: str, timeout_s: float,
               errors: list[str]) -> str | None:
    """The first source that yields a version wins; each failure is recorded in `errors`."""
    for src in sources:
        try:
            if src.type == "file":
                value = _first_line(read_small(Path(host_root) / src.path.lstrip("/"), 4096))
            elif src.type == "env":
                value = _first_line(os.environ.get(src.name, ""))
            else:
                out = run_bounded(src.argv, timeout_s)
                if out.returncode != 0:
                    errors.append(f"ncore command {src.argv[0]}: exit {out.returncode}")
                    continue
                value = _first_line(out.stdout.decode(errors="replace"))
        except subprocess.TimeoutExpired:
            errors.append(f"ncore command {src.argv[0]}: no answer within {timeout_s:g}s")
            continue
        except OSError as exc:
            errors.append(f"ncore {src.type} {src.path or src.name or src.argv[0]}: {exc.strerror or exc}")
            continue
        if value:
            return value
        errors.append(f"ncore {src.type} {src.path or src.name or src.argv[0]}: empty")
    return None
