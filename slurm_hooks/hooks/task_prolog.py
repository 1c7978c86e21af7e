"""TaskProlog (job user, every task): print the export lines the Prolog prepared.

The deployed TaskProlog is a two-line /bin/sh script that `cat`s the same file (see
`slurm-hooks install-hooks`): a Python start alone costs more than the 10 ms a task may spend
here. This command is the same logic for sites that want it, and for tests.
"""

from __future__ import annotations

import os
import sys

from slurm_hooks.core.layout import DEFAULT_STATE_DIR, job_dir
from slurm_hooks.core.safeio import read_small
from slurm_hooks.hooks.state import job_id_from_env

# The config's default path, spelt out: importing the config module (and PyYAML to read the file)
# would cost this per-task command ~40% more start-up (bench/hook_startup.py). A test keeps it
# equal to config.DEFAULT_PATH.
DEFAULT_CONFIG = "/etc/slurm-hooks/config.yaml"
_MAX_CONFIG_BYTES = 1 << 16


def configured_state_dir(env: dict[str, str]) -> str:
    """`state_dir` of $SLURM_HOOKS_CONFIG (else the default file), read as one top-level `key: value` line.

    Only this key is read, so only its plain form is understood (`state_dir: /path`, optionally
    quoted, optionally with a `# comment`); anything else leaves the default in place. The Prolog,
    which writes the directory, validates the whole file.
    """
    try:  # bounded, and never blocking: a FIFO or device where the config should be is refused
        text = read_small(env.get("SLURM_HOOKS_CONFIG") or DEFAULT_CONFIG, _MAX_CONFIG_BYTES)
    except OSError:
        return DEFAULT_STATE_DIR
    for line in text.splitlines():
        if line.startswith("state_dir:"):
            value = line[len("state_dir:") :].split(" #")[0].strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            return value if value.startswith("/") else DEFAULT_STATE_DIR
    return DEFAULT_STATE_DIR


def main(state_dir: str | None = None) -> int:
    """0 whatever the config or the job's state hold: the task starts, with the exports or without."""
    try:
        env = dict(os.environ)
        job_id = job_id_from_env(env)
        if job_id is None:
            return 0
        where = job_dir(state_dir or configured_state_dir(env), job_id)
        try:
            with open(where / "env", encoding="utf-8") as fh:
                sys.stdout.write(fh.read(16 * 1024))
        except OSError:
            pass  # no facts for this job: the task runs without SLURM_HOOKS_* rather than not at all
        if (where / "flight").is_file():  # `flight_recorder: on`: the same sh fragment the deployed script runs
            import subprocess

            sys.stdout.flush()
            subprocess.run(
                ["/bin/sh", "-c", '. "$1"', "sh", str(where / "flight")], stderr=subprocess.DEVNULL, check=False
            )
    except Exception:  # a NUL byte in state_dir (ValueError), an unreadable state dir (PermissionError)
        pass
    return 0
