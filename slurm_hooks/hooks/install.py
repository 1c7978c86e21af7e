"""Write the scripts Slurm runs as hooks. Slurm gives hooks no PATH: every path here is absolute.

Under `dest` (docs/operators/install.md):
  slurm-hooks-prolog, -task_prolog, -epilog, -epilog_slurmctld   what slurm.conf names
  prolog.d/50-slurm-hooks, epilog.d/50-slurm-hooks               for `Prolog=/etc/slurm/prolog.d/*`
                                                                 and SUNK's run-parts (no dots)
  slurm.conf.snippet                                             the slurm.conf lines for these
`hook_files` is the one source of that text: `slurm-hooks doctor` compares an install against it
and tests/test_sunk.py the SUNK ConfigMaps.
"""

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
# The flight-recorder fragment exists only with `flight_recorder: on` (a builtin test costs nothing
# otherwise); it runs in a subshell, so even a damaged one cannot fail the task.
_TASK_PROLOG = """#!/bin/sh
# slurm-hooks task-prolog: prints the export lines the Prolog prepared for this job.
case "$SLURM_JOB_ID" in ''|*[!0-9]*) exit 0 ;; esac
cat {state_dir}/jobs/"$SLURM_JOB_ID"/env 2>/dev/null
[ -f {state_dir}/jobs/"$SLURM_JOB_ID"/flight ] && ( . {state_dir}/jobs/"$SLURM_JOB_ID"/flight ) 2>/dev/null
exit 0
"""

# Slurm runs a Prolog glob serially in reverse name order and skips the rest after a failure;
# run-parts takes names of [A-Za-z0-9_-] only. The entry only hands over to the hook script, so it
# stays right wherever the package's Python lives (SUNK mounts it from a ConfigMap).
RUN_PARTS_NAME = "50-slurm-hooks"
_RUN_PARTS_ENTRY = """#!/bin/sh
# slurm-hooks {hook}, run from {hook}.d/ (Slurm's Prolog/Epilog glob, SUNK's run-parts).
[ -x {target} ] || exit 0
exec {target}
"""

_SNIPPET = """# slurm-hooks in slurm.conf: written by `slurm-hooks install-hooks --dest {dest}`.
# Slurm gives hooks no PATH: every path is absolute, and every script exits 0 on its own failure.
PrologFlags=Alloc,Contain
Prolog={dest}/slurm-hooks-prolog
TaskProlog={dest}/slurm-hooks-task_prolog
Epilog={dest}/slurm-hooks-epilog
# Returns at once unless `annotator: epilog_slurmctld`; kept so switching is a config change.
EpilogSlurmctld={dest}/slurm-hooks-epilog_slurmctld
# Slurm's last resort (it drains the node); above the hooks' own limits ({longest} s here).
PrologEpilogTimeout={timeout}
# Keeps users' --comment in accounting next to our AdminComment.
AccountingStoreFlags=job_comment
# With other prolog/epilog scripts, use globs instead and copy {dest}/prolog.d/{name} and
# {dest}/epilog.d/{name} into those directories:
#   Prolog=/etc/slurm/prolog.d/*
#   Epilog=/etc/slurm/epilog.d/*
"""


def import_paths() -> list[str]:
    """Where slurm_hooks and its dependencies live, for an interpreter started without site."""
    import sys

    import yaml

    import slurm_hooks

    here = [str(Path(slurm_hooks.__file__).parent.parent), str(Path(yaml.__file__).parent.parent)]
    return list(dict.fromkeys(here + [p for p in sys.path if p.endswith("site-packages")]))


def _limit(budget_s: float) -> int:
    return int(budget_s) + 5


def hook_files(
    dest: Path, python: str, config: Config, config_path: str | None, paths: list[str] | None = None
) -> dict[Path, str]:
    """Every file install-hooks writes under `dest`, with its text; the Prolog comes first.
    `paths`: the `python`'s import_paths(), when that is not the interpreter running this."""
    env = f"export SLURM_HOOKS_CONFIG={shlex.quote(config_path)}\n" if config_path else ""
    paths = import_paths() if paths is None else paths

    def py_hook(hook: str, budget_s: float) -> str:
        code = shlex.quote(_ENTRY.format(paths=paths, hook=hook))
        return _PY_HOOK.format(hook=hook, env=env, python=shlex.quote(python), code=code, limit=_limit(budget_s))

    budgets = config.budgets
    longest = _limit(max(budgets.prolog_s, budgets.epilog_s)) + 2  # `timeout -k 2`
    files = {
        dest / "slurm-hooks-prolog": py_hook("prolog", budgets.prolog_s),
        dest / "slurm-hooks-epilog": py_hook("epilog", budgets.epilog_s),
        dest / "slurm-hooks-epilog_slurmctld": py_hook("epilog_slurmctld", budgets.epilog_s),
        dest / "slurm-hooks-task_prolog": _TASK_PROLOG.format(state_dir=shlex.quote(config.state_dir)),
    }
    for hook in ("prolog", "epilog"):
        target = shlex.quote(str(dest / f"slurm-hooks-{hook}"))
        files[dest / f"{hook}.d" / RUN_PARTS_NAME] = _RUN_PARTS_ENTRY.format(hook=hook, target=target)
    files[dest / "slurm.conf.snippet"] = _SNIPPET.format(
        dest=dest, name=RUN_PARTS_NAME, longest=longest, timeout=max(120, longest * 2)
    )
    return files


def install_hooks(dest: Path, python: str, config: Config, config_path: str | None) -> list[Path]:
    written = []
    for path, text in hook_files(dest, python, config, config_path).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o644 if path.name.endswith(".snippet") else 0o755)
        written.append(path)
    return written
