"""Prolog and TaskProlog without Slurm: state files, modes, sanitising, and never hurting the node."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_hooks.facts.gpu import GpuQueryError, _Worker
from slurm_hooks.hooks import prolog, task_prolog
from slurm_hooks.hooks.jobenv import export_lines, sanitise
from tests.fakes import GB200, RecordedGpu

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


@pytest.fixture
def config(tmp_path: Path, monkeypatch) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"host_root: {HOSTS / 'gb200-cdmm-driver'}\nstate_dir: {tmp_path / 'state'}\n"
        f"log_file: {tmp_path / 'hooks.log'}\nncore_sources: [{{type: file, path: /etc/ncore-release}}]\n"
    )
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(path))
    return path


def log_lines(tmp_path: Path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]


def test_prolog_writes_state_for_the_job(tmp_path: Path, config: Path) -> None:
    gid = 2345 if os.geteuid() == 0 else os.getgid()
    rc = prolog.main({"SLURM_JOB_ID": "77", "SLURM_JOB_GID": str(gid)}, gpu=RecordedGpu(GB200))
    assert rc == 0
    job = tmp_path / "state/jobs/77"
    for path, mode in ((job, 0o750), (job / "env", 0o640), (job / "node.json", 0o640)):
        assert stat.S_IMODE(path.stat().st_mode) == mode
        assert path.stat().st_gid == gid  # the job's group can read, other users cannot
    facts = json.loads((job / "node.json").read_text())
    assert facts["cdmm"] == "on" and facts["ncore_version"] == "3.6.2"
    env = (job / "env").read_text()
    assert "export SLURM_HOOKS_CDMM=on\n" in env and "export SLURM_HOOKS_CHECKPOINT_SYNC=1\n" in env
    assert "export SLURM_HOOKS_NVIDIA_DRIVER=580.95.05\n" in env
    assert log_lines(tmp_path)[-1]["event"] == "facts_recorded"


def test_task_prolog_prints_the_exports(tmp_path: Path, config: Path, capsys, monkeypatch) -> None:
    prolog.main({"SLURM_JOB_ID": "78"}, gpu=RecordedGpu(GB200))
    monkeypatch.setenv("SLURM_JOB_ID", "78")
    assert task_prolog.main(str(tmp_path / "state")) == 0
    assert "export SLURM_HOOKS_GPU_MODEL=NVIDIA GB200\n" in capsys.readouterr().out
    monkeypatch.setenv("SLURM_JOB_ID", "../../etc")
    assert task_prolog.main(str(tmp_path / "state")) == 0
    assert capsys.readouterr().out == ""


def test_values_are_sanitised_for_slurms_literal_parsing() -> None:
    assert sanitise("3.6.2\nexport LD_PRELOAD=/tmp/x.so") == "3.6.2"
    assert sanitise("a; rm -rf / $(id) `x` \"q\" 'q'") == "a_ rm -rf / __id_ _x_ _q_ _q_"
    assert len(sanitise("9" * 1000)) == 128
    lines = export_lines({"ncore_version": "evil\rexport X=1", "cdmm": "off", "gpu_count": 4}).splitlines()
    assert all(line.startswith("export SLURM_HOOKS_") for line in lines)
    assert "export SLURM_HOOKS_NCORE_VERSION=evil" in lines  # first line only, as Slurm would read it
    assert not any("CHECKPOINT_SYNC" in line for line in lines)


def test_unwritable_state_dir_exits_0_and_logs(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"state_dir: /proc/slurm-hooks-cannot-exist\nlog_file: {tmp_path / 'hooks.log'}\n")
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(path))
    assert prolog.main({"SLURM_JOB_ID": "79"}, gpu=RecordedGpu(GB200)) == 0
    failed, why, metrics = log_lines(tmp_path)[-3:]
    assert failed["event"] == "hook_failed" and "slurm-hooks-cannot-exist" in failed["error"]
    # its counters live in the same state dir; the log says why they were not written
    assert why["event"] == "metrics_write_failed" and "slurm-hooks-cannot-exist" in why["file"] and why["error"]
    assert metrics["event"] == "metrics_not_written"


def test_invalid_config_with_no_good_copy_runs_in_shadow_mode_and_says_so(tmp_path: Path, monkeypatch) -> None:
    from slurm_hooks.config import DEFAULT_PATH, Config

    path = tmp_path / "c.yaml"
    path.write_text("budgets: {prolog_s: soon}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_JOB")}
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "prolog"],
        capture_output=True,
        text=True,
        env={**env, "SLURM_HOOKS_CONFIG": str(path), "SLURM_HOOKS_CACHE_DIR": str(tmp_path / "cache")},
        timeout=60,
    )
    assert out.returncode == 0
    # With the defaults the log goes to the default log file (root) or, where that is not writable, stderr.
    default_log = Path(Config().log_file)
    text = out.stderr + (default_log.read_text() if default_log.exists() and os.access(default_log, os.R_OK) else "")
    lines = [json.loads(line) for line in text.splitlines() if str(path) in line]
    assert lines and lines[-1]["event"] == "config_invalid" and "budgets.prolog_s" in lines[-1]["error"]
    assert "shadow mode" in lines[-1]["using"]  # never the default mode `all`, which the site did not choose
    assert str(path) != DEFAULT_PATH


def test_a_hung_gpu_query_is_cut_off_by_the_budget(tmp_path: Path, config: Path) -> None:
    config.write_text(config.read_text() + "budgets: {prolog_s: 1}\n")
    code = (
        "import sys; from slurm_hooks.hooks import prolog; from tests.fakes import HangingGpu;"
        "sys.exit(prolog.main({'SLURM_JOB_ID': '81'}, gpu=HangingGpu()))"
    )
    start = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=Path(__file__).parent.parent
    )
    assert out.returncode == 0 and time.monotonic() - start < 10
    assert log_lines(tmp_path)[-1]["event"] == "budget_exceeded"


def test_each_nvml_call_has_its_own_timeout() -> None:
    worker = _Worker()
    with pytest.raises(GpuQueryError, match=r"sleep did not answer within 0\.2s"):
        worker.call(0.2, time.sleep, 5)
    with pytest.raises(GpuQueryError, match="failed"):
        _Worker().call(1, int, "not a number")


def test_task_prolog_defaults_are_the_configs() -> None:
    from slurm_hooks.config import DEFAULT_PATH, Config

    assert Config().state_dir == task_prolog.DEFAULT_STATE_DIR  # one default (slurm_hooks/core/layout.py)
    assert DEFAULT_PATH == task_prolog.DEFAULT_CONFIG


def test_task_prolog_reads_state_dir_from_the_config(tmp_path: Path, config: Path, capsys, monkeypatch) -> None:
    prolog.main({"SLURM_JOB_ID": "82"}, gpu=RecordedGpu(GB200))  # writes under the config's state_dir
    monkeypatch.setenv("SLURM_JOB_ID", "82")
    assert task_prolog.main() == 0
    assert "export SLURM_HOOKS_CDMM=on\n" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("state_dir: /srv/hooks", "/srv/hooks"),
        ("state_dir: '/srv/my hooks'  # quoted", "/srv/my hooks"),
        ('state_dir: "/srv/q"', "/srv/q"),
        ("state_dir: relative/dir", "/run/slurm-hooks"),  # never a path relative to the task's cwd
        ("  state_dir: /nested/not/top-level", "/run/slurm-hooks"),
        ("log_file: /x", "/run/slurm-hooks"),
    ],
)
def test_task_prolog_state_dir_line(tmp_path: Path, line: str, expected: str) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"# site config\nspool_dir: /var/spool/x\n{line}\n")
    assert task_prolog.configured_state_dir({"SLURM_HOOKS_CONFIG": str(path)}) == expected
    assert task_prolog.configured_state_dir({"SLURM_HOOKS_CONFIG": str(tmp_path / "absent")}) == "/run/slurm-hooks"


def test_task_prolog_does_not_block_on_a_fifo_for_a_config(tmp_path: Path) -> None:
    """A FIFO (or device) where the config should be: the default state dir at once, never a hang
    (each task of every job runs this)."""
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    code = "from slurm_hooks.hooks import task_prolog; import sys; print(task_prolog.configured_state_dir(dict(SLURM_HOOKS_CONFIG=sys.argv[1])))"
    out = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "/run/slurm-hooks", out.stderr


def test_task_prolog_imports_neither_the_config_module_nor_yaml(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(f"state_dir: {tmp_path}\n")
    code = (
        "import sys; from slurm_hooks.hooks import task_prolog; task_prolog.main();"
        "print(sorted(m for m in ('slurm_hooks.config', 'yaml') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SLURM_HOOKS_CONFIG": str(path), "SLURM_JOB_ID": "83"},
    )
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stderr


def test_a_gid_that_is_not_ascii_digits_is_ignored_not_fatal(tmp_path: Path, config: Path) -> None:
    from tests.fakes import GB200, RecordedGpu

    assert prolog.main({"SLURM_JOB_ID": "82", "SLURM_JOB_GID": "²"}, gpu=RecordedGpu(GB200)) == 0
    assert log_lines(tmp_path)[-1]["event"] == "facts_recorded"
    assert prolog.main({"SLURM_JOB_ID": "8²"}, gpu=RecordedGpu(GB200)) == 0
    assert log_lines(tmp_path)[-1]["event"] == "no_job_id"
