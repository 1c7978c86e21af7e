"""TaskProlog (job user, every task): print the export lines the Prolog prepared.

The deployed TaskProlog is a two-line /bin/sh script that `cat`s the same file (see
`slurm-hooks install-hooks`): a Python start alone costs more than the 10 ms a task may spend
here. This command is the same logic for sites that want it, and for tests.
"""

from __future__ import annotations

import os
import sys

from slurm_hooks.hooks.state import job_id_from_env
from slurm_hooks.layout import DEFAULT_STATE_DIR, job_dir


def main(state_dir: str | None = None) -> int:
    job_id = job_id_from_env(dict(os.environ))
    if job_id is None:
        return 0
    try:
        with open(job_dir(state_dir or DEFAULT_STATE_DIR, job_id) / "env", encoding="utf-8") as fh:
            sys.stdout.write(fh.read(16 * 1024))
    except OSError:
        pass  # no facts for this job: the task runs without SLURM_HOOKS_* rather than not at all
    return 0
