"""Backend selection: pyslurm only when it imports and matches the running Slurm; otherwise the CLI,
with one log line, never an exception."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest

from slurm_hooks.config import Config, SlurmSettings
from slurm_hooks.slurm.backend import choose_backend, open_slurm
from slurm_hooks.slurm.cli_backend import SlurmCli
from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm
from slurm_hooks.slurm.pyslurm_matrix import matching_tag, slurm_line

ROOT = Path(__file__).parent.parent


def pyslurm_module(version: str) -> ModuleType:
    module = ModuleType("pyslurm")
    module.__version__ = version  # type: ignore[attr-defined]
    return module


def broken() -> ModuleType:
    raise ImportError("libslurm.so.38: cannot open shared object file")


def missing() -> ModuleType:
    raise ModuleNotFoundError("No module named 'pyslurm'", name="pyslurm")


class Lines:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict]] = []

    def info(self, event: str, **kv) -> None:
        self.lines.append(("info", event, kv))

    def warning(self, event: str, **kv) -> None:
        self.lines.append(("warning", event, kv))

    def error(self, event: str, **kv) -> None:
        self.lines.append(("error", event, kv))


def slurm_2205() -> str:
    return "22.05.8"


def test_auto_takes_a_matching_pyslurm() -> None:
    choice = choose_backend("auto", lambda: pyslurm_module("22.5.3"), slurm_2205)
    assert choice.backend == "pyslurm" and choice.module is not None
    assert "22.5.3" in choice.reason and "22.05.8" in choice.reason


@pytest.mark.parametrize("wanted", ["auto", "pyslurm"])
def test_mismatch_falls_back_and_names_the_tag_to_build(wanted: str) -> None:
    choice = choose_backend(wanted, lambda: pyslurm_module("25.11.2"), slurm_2205)
    assert (choice.backend, choice.module, choice.fell_back) == ("cli", None, True)
    assert "built for Slurm 25.11" in choice.reason and "v22.5.3" in choice.reason


@pytest.mark.parametrize("wanted", ["auto", "pyslurm"])
def test_broken_import_falls_back(wanted: str) -> None:
    choice = choose_backend(wanted, broken, slurm_2205)
    assert choice.backend == "cli" and choice.fell_back and "ImportError: libslurm.so.38" in choice.reason


def test_missing_pyslurm_is_quiet_under_auto_and_loud_when_asked_for() -> None:
    auto = choose_backend("auto", missing, slurm_2205)
    assert (auto.backend, auto.fell_back) == ("cli", False) and "not installed" in auto.reason
    assert choose_backend("pyslurm", missing, slurm_2205).fell_back


def test_a_dependency_of_pyslurm_missing_is_broken_not_missing() -> None:
    def needs_other() -> ModuleType:
        raise ModuleNotFoundError("No module named 'packaging'", name="packaging")

    choice = choose_backend("auto", needs_other, slurm_2205)
    assert choice.fell_back and "packaging" in choice.reason


def test_unknown_running_slurm_falls_back() -> None:
    def scontrol_gone() -> str:
        raise FileNotFoundError("scontrol")

    choice = choose_backend("pyslurm", lambda: pyslurm_module("22.5.3"), scontrol_gone)
    assert choice.backend == "cli" and "running Slurm version unknown" in choice.reason


def test_cli_imports_nothing() -> None:
    def must_not_import() -> ModuleType:
        raise AssertionError("imported pyslurm although slurm.backend is cli")

    assert choose_backend("cli", must_not_import, slurm_2205).backend == "cli"


def test_open_slurm_logs_one_line_a_warning_on_fallback() -> None:
    config = Config(slurm=SlurmSettings(backend="pyslurm"))
    log = Lines()
    slurm = open_slurm(config, log, choose_backend("pyslurm", broken, slurm_2205))
    assert isinstance(slurm, SlurmCli)
    assert [(level, event, kv["backend"]) for level, event, kv in log.lines] == [
        ("warning", "slurm_backend_fallback", "cli")
    ]
    log = Lines()
    chosen = open_slurm(config, log, choose_backend("pyslurm", lambda: pyslurm_module("22.5.3"), slurm_2205))
    assert isinstance(chosen, SlurmPyslurm)
    assert [(level, event, kv["backend"]) for level, event, kv in log.lines] == [("info", "slurm_backend", "pyslurm")]


@pytest.mark.parametrize(
    ("slurm", "tag"),
    [
        ("22.05.8", "v22.5.3"),
        ("24.11.5", "v24.11.0"),
        ("25.05.3", "v25.5.0"),
        ("slurm 25.11.0", "v25.11.2"),
        ("26.05.5", "none published"),
    ],
)
def test_matrix(slurm: str, tag: str) -> None:
    assert matching_tag(slurm) == tag


def test_pyslurm_version_names_its_slurm_line() -> None:
    assert slurm_line("22.5.3") == "22.05" and slurm_line("25.11.2") == "25.11"


def test_the_prolog_never_imports_pyslurm(tmp_path: Path) -> None:
    """A pyslurm that leaves a mark when imported; the Prolog runs with slurm.backend: pyslurm."""
    fake = tmp_path / "site" / "pyslurm"
    fake.mkdir(parents=True)
    mark = tmp_path / "imported"
    (fake / "__init__.py").write_text(f"open({str(mark)!r}, 'w').close()\n__version__ = '22.5.3'\n")
    config = tmp_path / "config.yaml"
    config.write_text(
        f"state_dir: {tmp_path / 'state'}\nlog_file: {tmp_path / 'hooks.log'}\nslurm: {{backend: pyslurm}}\n"
    )
    code = textwrap.dedent("""
        import sys
        from slurm_hooks.hooks import prolog
        from tests.fakes import GB200, RecordedGpu
        rc = prolog.main({"SLURM_JOB_ID": "91"}, gpu=RecordedGpu(GB200))
        sys.exit(rc or ("pyslurm" in sys.modules))
    """)
    env = {
        **os.environ,
        "SLURM_HOOKS_CONFIG": str(config),
        "SLURM_HOOKS_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{ROOT}",
    }
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "state" / "jobs" / "91" / "node.json").exists()  # the Prolog did run
    assert not mark.exists()
    # and the planted module is importable, so the check above could fail
    probe = subprocess.run([sys.executable, "-c", "import pyslurm"], env=env, timeout=60)
    assert probe.returncode == 0 and mark.exists()
