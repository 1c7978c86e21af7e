"""Where per-job things live: one default state dir, one `<root>/jobs/<jobid>` layout.

Imported on the Prolog's path: pathlib (with urllib.parse and ipaddress, ~5 ms) is imported only by
`job_dir`, not by `job_path`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

DEFAULT_STATE_DIR = "/run/slurm-hooks"  # per-job node facts (Prolog -> TaskProlog, Epilog); config cache
DEFAULT_SPOOL_DIR = "/var/spool/slurm-hooks"  # bundles, diagnoses, the annotation outbox


def is_number(value: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '²', which int() then refuses (a crash before a guard)."""
    return value.isascii() and value.isdigit()


def job_path(root: str | os.PathLike[str], job_id: str) -> str:
    """`<root>/jobs/<jobid>` in the state dir and in the spool alike; the id must be numeric."""
    if not is_number(job_id):
        raise ValueError(f"not a job id: {job_id!r}")  # never a path component we did not check
    return os.path.join(root, "jobs", job_id)


def job_dir(root: str | os.PathLike[str], job_id: str) -> Path:
    """`job_path` as a Path."""
    from pathlib import Path

    return Path(job_path(root, job_id))
