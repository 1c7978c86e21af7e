"""Which crashes are NCCL teardown: after an NCCL/IB failure on the same rank, shortly; never an old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import write_bundle

JOB = {
    "job_id": "1",
    "state": "FAILED",
    "exit_code": "139:0",
    "start_time": "2026-03-01T00:00:00+00:00",
    "end_time": "2026-03-01T04:00:00+00:00",
    "nodes": ["n1", "n2"],
}
FAILURE = (
    " 5: [rank5]:[E{t} ProcessGroupNCCL.cpp:2268] [PG ID 0 PG GUID 0(default_pg) Rank 5]  failure detected by "
    "watchdog at work sequence id: 120049 PG status: last enqueued work: 120051, last completed work: 120048\n"
)
CRASH = " 5: [rank5]:[2026-03-01 03:00:05] step 9000 loss 1.2\n 5: [rank5]:Fatal Python error: Segmentation fault\n"


@pytest.mark.parametrize(
    ("failure_at", "first_fault"),
    [
        ("301 03:00:00.1", None),  # 5 s before: the crash is the failure's teardown, not a fault of its own
        ("301 01:00:00.1", "segfault"),  # two hours before: the crash is a fault of its own
    ],
)
def test_a_crash_after_a_failure_on_its_rank(tmp_path: Path, pack, failure_at: str, first_fault: str | None) -> None:
    log = (
        " 0: using world size: 8\n"
        + FAILURE.format(t=failure_at)
        + CRASH
        + "srun: error: n2: task 5: Segmentation fault\n"
    )
    got = diagnose(load_bundle(write_bundle(tmp_path, JOB, {"job.out": log})), pack)
    assert got.first_fault is not None
    assert (got.first_fault["source"] == "job.json") == (first_fault is None), got.summary
    if first_fault:
        assert (got.label, got.root_node, got.root_rank, got.first_fault["kind"]) == (
            "app_segfault",
            "n2",
            5,
            first_fault,
        )
