"""Write the scripts Slurm runs as hooks. Slurm gives hooks no PATH: every path here is absolute."""

from __future__ import annotations

import shlex
from pathlib import Path

from slurm_hooks.config import Config

# A Python hook is wrapped twice: its own SIGALRM budget, and coreutils `timeout` as the last
# resort should the interpreter itself wedge. `exit 0` keeps even a missing interpreter from
# draining the node.
_PY_HOOK = """#!/bin/sh
# slurm-hooks {hook}: written by `slurm-hooks install-hooks`; edit the config, not this file.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
{env}/usr/bin/timeout -k 2 {limit} {python} -m slurm_hooks {hook} >/dev/null 2>&1
exit 0
"""

# Runs once per task, hundreds per job: a shell and `cat` cost ~1-2 ms, a Python start ~12-40 ms.
_TASK_PROLOG = """#!/bin/sh
# slurm-hooks task-prolog: prints the export lines the Prolog prepared for this job.
case "$SLURM_JOB_ID" in ''|*[!0-9]*) exit 0 ;; esac
cat {state_dir}/jobs/"$SLURM_JOB_ID"/env 2>/dev/null
exit 0
"""


def install_hooks(dest: Path, python: str, config: Config, config_path: str | None) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    env = f"export SLURM_HOOKS_CONFIG={shlex.quote(config_path)}\n" if config_path else ""
    scripts = {
        "prolog": _PY_HOOK.format(hook="prolog", env=env, python=shlex.quote(python),
                                  limit=int(config.budgets.prolog_s) + 5),
        "epilog": _PY_HOOK.format(hook="epilog", env=env, python=shlex.quote(python),
                                  limit=int(config.budgets.epilog_s) + 5),
        "task_prolog": _TASK_PROLOG.format(state_dir=shlex.quote(config.state_dir)),
    }
    written = []
    for name, text in scripts.items():
        path = dest / f"slurm-hooks-{name}"
        path.write_text(text)
        path.chmod(0o755)
        written.append(path)
    return written
