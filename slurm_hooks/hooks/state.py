"""Per-job node state written by the Prolog and read by the TaskProlog and Epilog.

Layout: <state_dir>/jobs/<jobid>/node.json and env. The job directory is root:<job gid> 0750,
files 0640: the job's user (and root) can read them, other users cannot.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from typing import Any

from slurm_hooks.core.layout import is_number, job_dir, job_path
from slurm_hooks.core.safeio import atomic_write
from slurm_hooks.hooks.jobenv import export_lines


def job_id_from_env(env: Mapping[str, str]) -> str | None:
    value = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID") or ""
    return value if is_number(value) else None  # never a path component we did not check


def write_job_state(state_dir: str, job_id: str, facts: dict[str, Any], gid: int | None) -> str:
    """The job's state directory, written (os.path, not pathlib: this is the Prolog's path)."""
    target = job_path(state_dir, job_id)
    os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
    group = gid if gid is not None and os.geteuid() == 0 else None  # the job's group reads, no one else
    if not os.path.isdir(target):  # set up under another name, then renamed: never seen half-owned
        staging = f"{target}.{os.getpid()}.new"
        os.mkdir(staging, mode=0o750)
        _own(staging, group, 0o750)
        try:
            os.rename(staging, target)
        except OSError:  # another Prolog of this job was first
            os.rmdir(staging)
    _own(target, group, 0o750)
    for name, text in (("node.json", json.dumps(facts, indent=1) + "\n"), ("env", export_lines(facts))):
        atomic_write(os.path.join(target, name), text, mode=0o640)
        _own(os.path.join(target, name), group, 0o640)
    return target


def _own(path: str, group: int | None, mode: int) -> None:
    os.chmod(path, mode)
    if group is not None:
        os.chown(path, 0, group)


def read_job_facts(state_dir: str, job_id: str) -> dict[str, Any] | None:
    try:
        doc = json.loads((job_dir(state_dir, job_id) / "node.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def remove_job_state(state_dir: str, job_id: str) -> None:
    import shutil  # only the Epilog needs it

    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(job_dir(state_dir, job_id))
