"""A pyslurm that is broken, or built for another Slurm, inside a real Epilog: the CLI takes over,
the job is annotated, the node stays up, and one log line says why."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm
SEGV = 'srun python3 -c "import ctypes; ctypes.string_at(0)"'


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    dc.require_cluster()
    dc.require_pyslurm()
    yield
    dc.configure()


@contextlib.contextmanager
def planted_pyslurm(init: str) -> Iterator[None]:
    """Swap the hooks' real pyslurm package for one whose __init__ is `init`; put it back after."""
    site = Path(
        subprocess.run(
            [dc.HOOKS_PYTHON, "-c", "import pyslurm, os; print(os.path.dirname(pyslurm.__file__))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    aside = site.with_name("pyslurm.real")
    site.rename(aside)
    try:
        site.mkdir()
        (site / "__init__.py").write_text(init)
        yield
    finally:
        shutil.rmtree(site, ignore_errors=True)
        aside.rename(site)


@pytest.mark.parametrize(
    ("init", "reason"),
    [
        ("raise ImportError('deliberately broken pyslurm')\n", "ImportError: deliberately broken pyslurm"),
        ("__version__ = '25.11.2'\n", "pyslurm 25.11.2 is built for Slurm 25.11, this is Slurm {running}"),
    ],
)
def test_epilog_falls_back_to_the_cli(init: str, reason: str) -> None:
    dc.configure(extra="slurm: {backend: pyslurm}\n")
    with planted_pyslurm(init):
        job = dc.submit(SEGV)
        assert dc.wait(job) == "FAILED"
        fields = dc.wait_annotated(job)
    assert fields["label"] in ("app_segfault", "cdmm_checkpoint_segfault")
    assert dc.node_state() == "idle"  # the Epilog exited 0: no drain
    epilog = [json.loads(line) for line in dc.hook_log(job) if '"hook": "epilog"' in line]
    fallbacks = [e for e in epilog if e["event"] == "slurm_backend_fallback"]
    reason = reason.format(running=dc.slurm_line())
    assert len(fallbacks) == 1 and reason in fallbacks[0]["reason"] and fallbacks[0]["backend"] == "cli", epilog
    assert any(e["event"] == "epilog_done" for e in epilog)
