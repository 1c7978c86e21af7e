"""Write the scripts Slurm runs as hooks. Slurm gives hooks no PATH: every path here is absolute."""

from __future__ import annotations

import shlex
from pathlib import Path

from slurm_hooks.config import Config

# A Python hook is wrapped twice: its own SIGALRM budget, and coreutils `timeout` as the last
# resort should the interpreter itself wedge. `exit 0` keeps even a missing interpreter from
# draining the node.
# `-S` skips site.py (~10-20 ms on every job start); the package's own directories are put on
# sys.path instead, as found when the hooks were installed.
_PY_HOOK = """#!/bin/sh
# slurm-hooks {hook}: written by `slurm-hooks install-hooks`; edit the config, not this file.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
{env}/usr/bin/timeout -k 2 {limit} {python} -S -c {code} >/dev/null 2>&1
exit 0
"""
# Straight to the hook module: argparse alone would cost ~12 ms per job start.
_ENTRY = "import sys; sys.path[:0] = {paths!r}; from slurm_hooks.hooks.{hook} import main; sys.exit(main())"

# Runs once per task, hundreds per job: a shell and `cat` cost ~1-2 ms, a Python start ~12-40 ms.
_TASK_PROLOG = """#!/bin/sh
# slurm-hooks task-prolog: prints the export lines the Prolog prepared for this job.
case "$SLURM_JOB_ID" in ''|*[!0-9]*) exit 0 ;; esac
cat {state_dir}/jobs/"$SLURM_JOB_ID"/env 2>/dev/null
exit 0
"""


def _import_paths() -> list[str]:
    """Where slurm_hooks and its dependencies live, for an interpreter started without site."""
    import sys

    import yaml

    import slurm_hooks

    here = [str(Path(slurm_hooks.__file__).parent.parent), str(Path(yaml.__file__).parent.parent)]
    return list(dict.fromkeys(here + [p for p in sys.path if p.endswith("site-packages")]))


def install_hooks(dest: Path, python: str, config: Config, config_path: str | None) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    env = f"export SLURM_HOOKS_CONFIG={shlex.quote(config_path)}\n" if config_path else ""
    paths = _import_paths()

    def py_hook(hook: str, budget_s: float) -> str:
        code = shlex.quote(_ENTRY.format(paths=paths, hook=hook))
        return _PY_HOOK.format(hook=hook, env=env, python=shlex.quote(python), code=code, limit=int(budget_s) + 5)

    scripts = {
        "prolog": py_hook("prolog", config.budgets.prolog_s),
        "epilog": py_hook("epilog", config.budgets.epilog_s),
        "epilog_slurmctld": py_hook("epilog_slurmctld", config.budgets.epilog_s),
        "task_prolog": _TASK_PROLOG.format(state_dir=shlex.quote(config.state_dir)),
    }
    written = []
    for name, text in scripts.items():
        path = dest / f"slurm-hooks-{name}"
        path.write_text(text)
        path.chmod(0o755)
        written.append(path)
    return written
