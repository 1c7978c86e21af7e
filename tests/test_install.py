"""install-hooks: scripts that run with no PATH, run-parts entries, and the slurm.conf snippet."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_hooks.config import Config
from slurm_hooks.hooks.install import RUN_PARTS_NAME, hook_files, install_hooks

ROOT = Path(__file__).resolve().parent.parent
HOST = ROOT / "tests/fixtures/hosts/real-h200"


def snippet_settings(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


@pytest.fixture
def installed(tmp_path: Path) -> tuple[Path, Path]:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"host_root: {HOST}\nstate_dir: {tmp_path}/state\nlog_file: {tmp_path}/hooks.log\nncore_sources: []\n"
    )
    install_hooks(tmp_path / "hooks", sys.executable, Config(state_dir=str(tmp_path / "state")), str(cfg))
    return tmp_path / "hooks", tmp_path


def run_bare(argv: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    """As slurmd runs a hook: no PATH, no HOME, cwd elsewhere."""
    return subprocess.run(argv, env=env, cwd="/", capture_output=True, text=True, timeout=60)


def test_prolog_runs_without_path_and_task_prolog_prints_its_exports(installed: tuple[Path, Path]) -> None:
    hooks, tmp = installed
    assert run_bare([str(hooks / "slurm-hooks-prolog")], SLURM_JOB_ID="11").returncode == 0
    facts = json.loads((tmp / "state/jobs/11/node.json").read_text())
    assert (facts["gpu_model"], facts["cdmm"]) == ("NVIDIA H200", "off")
    out = run_bare([str(hooks / "slurm-hooks-task_prolog")], SLURM_JOB_ID="11").stdout
    assert "export SLURM_HOOKS_NVIDIA_DRIVER=580.159.04\n" in out


@pytest.mark.skipif(shutil.which("run-parts") is None, reason="run-parts (debianutils) is not installed")
def test_prolog_d_entry_runs_under_run_parts_as_sunk_does(installed: tuple[Path, Path]) -> None:
    hooks, tmp = installed
    run_parts = shutil.which("run-parts")
    assert run_parts is not None
    listed = run_bare([run_parts, "--test", str(hooks / "prolog.d")]).stdout.split()
    assert listed == [str(hooks / "prolog.d" / RUN_PARTS_NAME)]  # run-parts skips names with dots
    assert run_bare([run_parts, "--exit-on-error", str(hooks / "prolog.d")], SLURM_JOB_ID="12").returncode == 0
    assert (tmp / "state/jobs/12/env").is_file()


def test_a_missing_interpreter_still_exits_0(tmp_path: Path) -> None:
    install_hooks(tmp_path, str(tmp_path / "no-such-python"), Config(), None)
    for name in ("slurm-hooks-prolog", "slurm-hooks-epilog", f"prolog.d/{RUN_PARTS_NAME}"):
        assert run_bare([str(tmp_path / name)], SLURM_JOB_ID="13").returncode == 0


def test_snippet_names_every_hook_by_absolute_path_above_their_limits(installed: tuple[Path, Path]) -> None:
    hooks, _ = installed
    settings = snippet_settings((hooks / "slurm.conf.snippet").read_text())
    assert settings["PrologFlags"] == "Alloc,Contain"
    for key in ("Prolog", "TaskProlog", "Epilog", "EpilogSlurmctld"):
        assert Path(settings[key]).is_absolute() and Path(settings[key]).stat().st_mode & 0o111, key
    budgets = Config().budgets
    assert int(settings["PrologEpilogTimeout"]) > max(budgets.prolog_s, budgets.epilog_s) + 7


def test_shipped_snippet_is_what_make_install_writes() -> None:
    dest = Path("/opt/slurm-hooks/hooks")
    files = hook_files(dest, "/opt/slurm-hooks/venv/bin/python", Config(), None)
    assert (ROOT / "deploy/slurm.conf.snippet").read_text() == files[dest / "slurm.conf.snippet"]
