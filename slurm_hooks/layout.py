"""Where per-job things live: one default state dir, one `<root>/jobs/<jobid>` layout.

Imported by the TaskProlog, so it imports nothing beyond pathlib.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_STATE_DIR = "/run/slurm-hooks"  # per-job node facts (Prolog -> TaskProlog, Epilog); config cache
DEFAULT_SPOOL_DIR = "/var/spool/slurm-hooks"  # bundles, diagnoses, the annotation outbox


def job_dir(root: str | Path, job_id: str) -> Path:
    """`<root>/jobs/<jobid>` in the state dir and in the spool alike; the id must be numeric."""
    if not job_id.isdigit():
        raise ValueError(f"not a job id: {job_id!r}")  # never a path component we did not check
    return Path(root) / "jobs" / job_id
