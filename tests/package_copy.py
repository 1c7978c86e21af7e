"""slurm_hooks copied where another user can import it: tests that run code as `nobody` (the
flight-dump reader, the spool pruner) cannot import it from a checkout in a directory only root
can enter, such as one made by `mktemp -d`."""

from __future__ import annotations

import shutil
from pathlib import Path

SOURCE = Path(__file__).parent.parent / "slurm_hooks"


def readable_package_copy(root: Path) -> Path:
    """A copy of the package under `root` (which other users can traverse); the directory to put
    on sys.path (or run in) for `import slurm_hooks` to find it."""
    shutil.copytree(SOURCE, root / "pkg" / "slurm_hooks", ignore=shutil.ignore_patterns("__pycache__", "examples"))
    return root / "pkg"
