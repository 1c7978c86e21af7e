"""Companions, not cut-offs (log-signatures §8.36, issue 28 item 8).

A device or kernel line seconds from a rank's exception or crash that names its node is that
failure's cause (a fatal Xid, a link fault) or its companion (Xid 13, 31, 43: the application's own
fault as the GPU saw it), never a reason to say `unknown`; what bounds the candidate faults is the
first timeout report (§8.2), not any earlier event. Xid lines: log-signatures §3 (gpud, public
dmesg); the link line: mlx5_core's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import write_bundle

JOB = {
    "job_id": "28008",
    "state": "FAILED",
    "exit_code": "1:0",
    "derived_exit_code": "1:0",
    "start_time": "2026-12-02T12:00:00+00:00",
    "end_time": "2026-12-02T13:10:00+00:00",
    "timezone": "UTC",
    "log_timezone": "UTC",
    "nodes": ["n1", "n2"],
}
STEPS = "".join(f"{r}: [2026-12-02 12:48:40] rank {r} step 3 loss 2.5\n" for r in range(4))
EXCEPTION = (
    "2: [rank2]:Traceback (most recent call last):\n"
    '2: [rank2]:  File "/workspace/train.py", line 188, in main\n'
    "2: [rank2]:    loss = train_step(model, batch)\n"
    "2: [rank2]:RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
CRASH = "srun: error: n2: task 2: Segmentation fault (core dumped)\n"
TIMEOUTS = "".join(
    f"{r}: [rank{r}]:[E1202 12:58:4{r}.5 ProcessGroupNCCL.cpp:685] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7243, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 "
    "milliseconds before timing out.\n"
    for r in (0, 1, 3)
)
END = (
    "srun: error: n2: task 2: Exited with exit code 1\nsrun: error: n1: tasks 0-1: Aborted (core dumped)\n"
    "srun: error: n2: task 3: Aborted (core dumped)\n"
)
APP_XIDS = {
    13: "NVRM: Xid (PCI:0000:3b:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on "
    "(GPC 7, TPC 1, SM 0): Out Of Range Address",
    31: "NVRM: Xid (PCI:0000:3b:00): 31, pid=16108, name=python3, Ch 00000010, intr 10000000. MMU Fault: ENGINE "
    "GRAPHICS",
    43: "NVRM: Xid (PCI:0000:3b:00): 43, pid=16108, name=python3, Ch 00000010",
}
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."
LINK_DOWN = "mlx5_core 0000:03:00.0 mlx5_0: Port: 1 Link DOWN"


def _diagnose(tmp_path: Path, pack, log: str, kernel_line: str, at: str):
    kernel = {"n2": f"2026-12-02T{at}.000000+00:00 n2 kernel: {kernel_line}\n"}
    return diagnose(load_bundle(write_bundle(tmp_path, JOB, {"job.out": log}, kernel=kernel)), pack)


@pytest.mark.parametrize("xid", sorted(APP_XIDS))
@pytest.mark.parametrize("at", ["12:48:38", "12:48:43"], ids=["before", "after"])
@pytest.mark.parametrize("failure", [EXCEPTION, CRASH], ids=["exception", "crash"])
def test_an_application_xid_travels_with_the_ranks_error(tmp_path: Path, pack, xid: int, at: str, failure: str) -> None:
    got = _diagnose(tmp_path, pack, STEPS + failure + TIMEOUTS + END, APP_XIDS[xid], at)
    label = "app_exception" if failure is EXCEPTION else "app_segfault"
    assert (got.label, got.root_node, got.root_rank) == (label, "n2", 2), got.summary
    assert [c["kind"] for c in got.details.get("companions", [])] == ["xid"], got.details
    assert got.details["confidence"]["level"] == "high", got.details["confidence"]


@pytest.mark.parametrize(
    ("line", "label"), [(XID79, "gpu_xid"), (LINK_DOWN, "fabric_error")], ids=["fatal_xid", "link_down"]
)
@pytest.mark.parametrize("failure", [EXCEPTION, CRASH], ids=["exception", "crash"])
def test_a_device_fault_seconds_before_the_ranks_error_is_its_cause(
    tmp_path: Path, pack, line: str, label: str, failure: str
) -> None:
    """The rank's exception or crash on the node whose kernel logged the fault is its consequence."""
    got = _diagnose(tmp_path, pack, STEPS + failure + TIMEOUTS + END, line, "12:48:38")
    assert (got.label, got.root_node) == (label, "n2"), got.summary
    assert got.details["confidence"]["level"] == "high", got.details["confidence"]


@pytest.mark.parametrize("xid", sorted(APP_XIDS))
@pytest.mark.parametrize("timeouts", [TIMEOUTS, ""], ids=["timeouts", "no_timeouts"])
def test_an_earlier_application_xid_bounds_nothing(tmp_path: Path, pack, xid: int, timeouts: str) -> None:
    """An Xid 13 forty minutes before the rank's exception does not cut the candidates off: the first
    timeout report does (§8.2)."""
    got = _diagnose(tmp_path, pack, STEPS + EXCEPTION + timeouts + END, APP_XIDS[xid], "12:10:00")
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n2", 2), got.summary


WATCHDOG_CUDA = (  # c10d's words (microsoft/TRELLIS.2#90), then the rank's abort
    "2: [rank2]:[E1202 12:48:41.012111423 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 2] Process "
    "group watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered\n"
    "2: [rank2]:terminate called after throwing an instance of 'c10::DistBackendError'\n"
    "srun: error: n2: task 2: Aborted (core dumped)\n"
)
XID48 = (
    "NVRM: Xid (PCI:0000:3b:00): 48, pid=16108, name=python3, An uncorrectable double bit error (DBE) has been "
    "detected on GPU in the framebuffer at partition 6, subpartition 0."
)


@pytest.mark.parametrize(
    ("line", "label"), [(APP_XIDS[31], "app_exception"), (XID48, "gpu_xid")], ids=["xid31", "xid48"]
)
def test_the_watchdogs_cuda_error_is_the_ranks_own(tmp_path: Path, pack, line: str, label: str) -> None:
    """The CUDA error c10d's watchdog logs before the rank aborts is the rank's own error: with an
    application Xid it decides; after a fatal Xid it is that Xid's consequence."""
    got = _diagnose(tmp_path, pack, STEPS + WATCHDOG_CUDA + END, line, "12:48:39")
    assert (got.label, got.root_node, got.root_rank) == (label, "n2", 2), got.summary
    assert got.details["confidence"]["level"] == "high", got.details["confidence"]
