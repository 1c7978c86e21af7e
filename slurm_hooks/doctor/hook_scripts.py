"""The doctor's `hooks` check: are the installed hook scripts this install's, with this config?"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from slurm_hooks.config import Config
from slurm_hooks.doctor.checks import DoctorDeps, Finding
from slurm_hooks.hooks.install import hook_files


def _installed_args(prolog: Path) -> tuple[str, str | None]:
    """The interpreter and config path an installed Prolog script was written with."""
    python, config = "", None
    for line in prolog.read_text(errors="replace").splitlines():
        words = shlex.split(line, comments=True) if line.strip() else []
        if words[:1] == ["export"] and words[1].startswith("SLURM_HOOKS_CONFIG="):
            config = words[1].split("=", 1)[1]
        elif words[:1] == ["/usr/bin/timeout"] and len(words) > 4:
            python = words[4]
    return python, config


def _paths_of(python: str, deps: DoctorDeps) -> list[str] | str:
    """The hooks' interpreter's import paths for slurm_hooks, or why it cannot import it."""
    code = "import json; from slurm_hooks.hooks.install import import_paths; print(json.dumps(import_paths()))"
    try:
        out = deps.run([python, "-I", "-c", code], 30.0)  # -I: not the cwd's slurm_hooks
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    if out.returncode != 0:
        return out.stderr.decode(errors="replace").strip().splitlines()[-1:][0] if out.stderr else "failed"
    paths = json.loads(out.stdout)
    return [str(p) for p in paths] if isinstance(paths, list) else "unexpected output"


def check_hooks(hooks_dir: Path, config: Config, deps: DoctorDeps) -> Finding:
    prolog = hooks_dir / "slurm-hooks-prolog"
    install = f"slurm-hooks install-hooks --dest {hooks_dir}"
    if not prolog.is_file():
        return Finding(
            "hooks",
            "warn",
            f"no hook scripts in {hooks_dir}",
            f"{install}, then add {hooks_dir}/slurm.conf.snippet to slurm.conf (or --hooks-dir DIR)",
        )
    python, config_file = _installed_args(prolog)
    if config_file:
        install += f" --config {config_file}"
    if not os.access(python, os.X_OK):
        return Finding(
            "hooks",
            "fail",
            f"the hooks run {python or '(no interpreter found)'}, which is not there",
            f"{install} --python /path/to/venv/bin/python",
        )
    paths = _paths_of(python, deps)
    if isinstance(paths, str):
        return Finding(
            "hooks",
            "fail",
            f"the hooks' interpreter {python} cannot run this slurm_hooks: {paths}",
            f"reinstall slurm-hooks into that environment (make install), then {install}",
        )
    expected = hook_files(hooks_dir, python, config, config_file, paths)
    differ = [
        str(p.relative_to(hooks_dir))
        for p, text in expected.items()
        if not p.is_file() or p.read_text(errors="replace") != text
    ]
    if differ:
        return Finding(
            "hooks",
            "fail",
            f"{', '.join(differ)} in {hooks_dir} differ from this install and config",
            f"{install} --python {python}",
        )
    return Finding("hooks", "ok", f"{len(expected)} files in {hooks_dir} match this install ({python})")
