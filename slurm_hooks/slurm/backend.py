"""Which implementation of the Slurm Protocol a hook or command gets: the one place that decides.

`slurm.backend` in the config: `cli` (scontrol/sacct/sacctmgr), `pyslurm` (libslurm in-process), or
`auto`: pyslurm when it imports and was built for the running Slurm's major.minor, else the CLI.
A pyslurm that is missing, broken or built for another Slurm never fails a hook: the CLI takes over
and one log line says why.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.slurm.pyslurm_matrix import TAGS, major_minor, matching_tag, slurm_line

if TYPE_CHECKING:
    from slurm_hooks.config import Config
    from slurm_hooks.core.hooklog import Log
    from slurm_hooks.slurm.client import Slurm


@dataclass(frozen=True)
class Choice:
    backend: str  # cli | pyslurm: what is active
    reason: str  # why, in words an operator can act on
    wanted: str  # what the config asked for
    module: ModuleType | None = None  # the imported pyslurm, when it is active
    missing: bool = False  # pyslurm not installed at all: the normal case for `auto` on most sites

    @property
    def fell_back(self) -> bool:
        """pyslurm was asked for, or is installed but unusable: worth a warning."""
        return self.backend == "cli" and self.wanted != "cli" and (self.wanted == "pyslurm" or not self.missing)


# What an operator can do about it: Slurm 26.05 (sid's) has no pyslurm release yet (pyslurm_matrix.TAGS)
_NOT_INSTALLED = f"pip install slurm-hooks[pyslurm] for this Slurm; there is none after Slurm {max(TAGS)} yet"


def running_slurm_version(timeout_s: float) -> str:
    """'22.05.8', from `scontrol --version` (the installed Slurm, which libslurm belongs to)."""
    out = run_bounded(["scontrol", "--version"], timeout_s, env=TOOL_ENV)
    return out.stdout.decode(errors="replace").split()[-1]


def choose_backend(wanted: str, import_pyslurm: Callable[[], ModuleType], slurm_version: Callable[[], str]) -> Choice:
    if wanted == "cli":
        return Choice("cli", "slurm.backend is cli", wanted)
    try:
        module = import_pyslurm()
        built_for = slurm_line(str(module.__version__))
    except ModuleNotFoundError as exc:
        if exc.name != "pyslurm":  # pyslurm is there but something it needs is not: broken
            return Choice("cli", f"pyslurm does not import (ModuleNotFoundError: {exc})", wanted)
        return Choice("cli", f"pyslurm is not installed ({_NOT_INSTALLED})", wanted, missing=True)
    except Exception as exc:
        return Choice("cli", f"pyslurm does not import ({type(exc).__name__}: {str(exc)[:160]})", wanted)
    try:
        running = slurm_version()
        same = major_minor(running) == major_minor(built_for)
    except Exception as exc:
        return Choice("cli", f"running Slurm version unknown ({type(exc).__name__}: {str(exc)[:160]})", wanted)
    if not same:
        return Choice(
            "cli",
            f"pyslurm {module.__version__} is built for Slurm {built_for}, this is Slurm {running}"
            f" (build pyslurm {matching_tag(running)})",
            wanted,
        )
    return Choice("pyslurm", f"pyslurm {module.__version__} matches Slurm {running}", wanted, module)


def select(config: Config) -> Choice:
    return choose_backend(
        config.slurm.backend,
        lambda: importlib.import_module("pyslurm"),
        lambda: running_slurm_version(config.budgets.command_s),
    )


def open_slurm(config: Config, log: Log | None = None, choice: Choice | None = None) -> Slurm:
    """The Slurm client for this run, and one log line saying which and why (a warning on fallback)."""
    from slurm_hooks.core.hooklog import HookLog
    from slurm_hooks.slurm.cli_backend import SlurmCli

    log = log or HookLog(config.log_file, "slurm-hooks")
    choice = choice or select(config)
    if choice.fell_back:
        log.warning("slurm_backend_fallback", backend=choice.backend, wanted=choice.wanted, reason=choice.reason)
    else:
        log.info("slurm_backend", backend=choice.backend, reason=choice.reason)
    if choice.module is not None:
        from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm

        return SlurmPyslurm(choice.module, config.budgets.command_s)
    return SlurmCli(config.budgets.command_s)
