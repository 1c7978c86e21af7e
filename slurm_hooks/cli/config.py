"""The configuration a subcommand runs with, shared by every command module of the package.

Loaded at the call, not at import: the hooks' subcommands (Prolog, TaskProlog) sit on every job start.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from slurm_hooks.config import Config


def cli_config(path: str | None = None, strict: bool = True) -> Config:
    """The configuration; a bad one is said in one line, then fatal (exit 2) or replaced by defaults."""
    from slurm_hooks.config import Config, ConfigError, load_config

    try:
        return load_config(Path(path) if path else None)
    except ConfigError as exc:
        print(f"slurm-hooks: {exc}" + ("" if strict else "; using defaults"), file=sys.stderr)
        if strict:
            raise SystemExit(2) from None
        return Config()
