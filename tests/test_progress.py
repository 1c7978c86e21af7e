"""Reading forward from a save marker for the marker's task's next training iteration (log-signatures §8.12)."""

from __future__ import annotations

from pathlib import Path

from slurm_hooks.bundle import load_bundle
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.progress import progress_after
from slurm_hooks.timeline.scan import PythonScanner
from tests.conftest import write_bundle

JOB = {
    "job_id": "1",
    "state": "FAILED",
    "start_time": "2026-03-01T00:00:00+00:00",
    "end_time": "2026-03-01T02:00:00+00:00",
}
LOG = (
    " 0: [2026-03-01 01:00:00] saving checkpoint at iteration 100 to /ckpt\n"
    " 1:  [2026-03-01 01:00:30] iteration      101/  1000 | lm loss: 2.0 |\n"
    " 0: some other line\n"
    " 0:  [2026-03-01 01:00:31] iteration      101/  1000 | lm loss: 2.0 |\n"
)


def _marker(tmp_path: Path, pack, log: str = LOG):
    bundle = load_bundle(write_bundle(tmp_path, JOB, {"job.out": log}))
    events = build_timeline(bundle, pack, PythonScanner()).events
    return bundle, next(e for e in events if pack.has(e.family, "save_start"))


def test_the_markers_own_task_went_on_training(tmp_path: Path, pack) -> None:
    bundle, marker = _marker(tmp_path, pack)
    found = progress_after(bundle.root, marker, pack.progress, bundle.job)
    assert found is not None
    line, when = found
    assert line == 4 and when is not None and when.isoformat() == "2026-03-01T01:00:31+00:00"


def test_nothing_before_the_limit_or_without_progress(tmp_path: Path, pack) -> None:
    bundle, marker = _marker(tmp_path, pack)
    assert progress_after(bundle.root, marker, pack.progress, bundle.job, until_line=4) is None
    bundle, marker = _marker(tmp_path / "b", pack, LOG.splitlines(keepends=True)[0] + " 0: crash\n")
    assert progress_after(bundle.root, marker, pack.progress, bundle.job) is None
