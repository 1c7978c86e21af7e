"""SIGKILL told apart by who sent it, and SIGABRT that is teardown (log-signatures §8.32, §8.4).

The OOM killer leaves its line; Slurm's teardown (a time limit, KillOnBadExit after another task's
failure) is a consequence, never the root; a person's scancel leaves CANCELLED; a SIGKILL nothing
explains is `unknown`, at low confidence, with its candidates. srun's `Killed`, torchrun's `-9`
(torch 2.13) and the DataLoader's `killed by signal: Killed.` (torch 2.13) were run here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import BUNDLES, write_bundle

JOB = {
    "job_id": "28004",
    "state": "FAILED",
    "exit_code": "137:0",
    "derived_exit_code": "0:9",
    "start_time": "2026-12-02T12:40:00+00:00",
    "end_time": "2026-12-02T13:00:00+00:00",
    "timezone": "UTC",
    "log_timezone": "UTC",
    "nodes": ["n1", "n2"],
}
STEPS = "".join(f"{r}: [2026-12-02 12:48:40] rank {r} step 3 loss 2.5\n" for r in range(4))
KILLED = "srun: error: n2: task 2: Killed\nsrun: error: n1: tasks 0-1: Exited with exit code 1\n"
TORCHRUN_KILLED = (
    "1: E1202 12:48:42.765000 17093 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: -9) "
    "local_rank: 0 (pid: 17109) of binary: /opt/slurm-hooks-torch/bin/python3.11\n"
    "1:   traceback : Signal 9 (SIGKILL) received by PID 17109\n"
)
SHELL_KILLED = (  # `srun bash -c "python ..."`: the shell's word (a real run here) and srun's 128 + 9
    '2: bash: line 1: 16496 Killed                  python -c "import os,signal; os.kill(os.getpid(), signal.SIGKILL)"\n'
    "srun: error: n2: task 2: Exited with exit code 137\n"
)
WORKER_KILLED = "2: RuntimeError: DataLoader worker (pid 16954) is killed by signal: Killed. \n"
OOM_KERNEL = (
    "2026-12-02T12:48:41.000000+00:00 n2 kernel: Memory cgroup out of memory: Killed process 16108 (python) "
    "total-vm:81234000kB, anon-rss:60123400kB, file-rss:0kB, shmem-rss:0kB, UID:2001 pgtables:120000kB "
    "oom_score_adj:0\n"
)


def _diagnose(tmp_path: Path, pack, logs: str, kernel: str | None = None, **job: str):
    bundle = write_bundle(tmp_path, {**JOB, **job}, {"job.out": logs}, kernel={"n2": kernel} if kernel else None)
    return diagnose(load_bundle(bundle), pack)


def test_the_oom_killer_sent_it(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, pack, STEPS + KILLED, OOM_KERNEL)
    assert (got.label, got.root_node) == ("oom_killed", "n2"), got.summary
    assert got.details["killed_by"] == {"sender": "oom_killer"}
    assert got.details["signal"] == "SIGKILL"


def test_a_person_sent_it(tmp_path: Path, pack) -> None:
    """scancel: Slurm records CANCELLED (by uid); the kill is the person's."""
    log = STEPS + "slurmstepd: error: *** JOB 28004 ON n1 CANCELLED AT 2026-12-02T12:48:45 ***\n" + KILLED
    got = _diagnose(tmp_path, pack, log, state="CANCELLED", exit_code="0:0", derived_exit_code="0:9")
    assert (got.label, got.root_node, got.root_rank) == ("cancelled", None, None), got.summary
    assert got.details["killed_by"] == {"sender": "person"}


def test_slurm_sent_it_at_the_time_limit(tmp_path: Path, pack) -> None:
    log = STEPS + "slurmstepd: error: *** JOB 28004 ON n1 CANCELLED AT 2026-12-02T12:48:45 DUE TO TIME LIMIT ***\n"
    got = _diagnose(tmp_path, pack, log + KILLED, state="TIMEOUT", exit_code="0:0")
    assert got.label == "time_limit", got.summary
    assert got.details["killed_by"] == {"sender": "slurm"}


@pytest.mark.parametrize(
    "crash",
    [
        "srun: error: n2: task 2: Segmentation fault (core dumped)\n",
        "2: bash: line 1: 16108 Bus error               python train.py\n",
    ],
)
def test_slurm_teardown_after_another_task_failed_is_never_the_root(tmp_path: Path, pack, crash: str) -> None:
    """KillOnBadExit: srun kills the other tasks after task 2 crashed; their `Killed` is a consequence."""
    log = STEPS + crash + "srun: Terminating StepId=28004.0\nsrun: error: n1: tasks 0-1: Killed\n"
    got = _diagnose(tmp_path, pack, log + "srun: error: n2: task 3: Killed\n", exit_code="1:0", derived_exit_code="0:9")
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", "n2", 2), got.summary
    assert "killed_by" not in got.details


@pytest.mark.parametrize(
    "report",
    [KILLED, TORCHRUN_KILLED, WORKER_KILLED, SHELL_KILLED, ""],  # "": only Slurm's record says 137 / 0:9
    ids=["srun", "torchrun", "dataloader", "bash-wrapper", "slurm-record"],
)
def test_nothing_names_the_sender(tmp_path: Path, pack, report: str) -> None:
    got = _diagnose(tmp_path, pack, STEPS + report, exit_code="1:0", derived_exit_code="1:0") if report else None
    if got is not None:  # the log alone says it: Slurm's record shows only the script's exit 1
        assert got.details.get("killed_by", {}).get("sender") == "unknown", got.details
    got = _diagnose(tmp_path, pack, STEPS + report)
    assert (got.label, got.root_node, got.root_rank) == ("unknown", None, None), got.summary
    assert got.details["signal"] == "SIGKILL"
    assert got.details["killed_by"] == {"sender": "unknown", "candidates": ["oom_killer", "slurm", "person"]}
    assert got.details["confidence"]["level"] == "low"
    assert {c["label"] for c in got.details["candidates"]} >= {"oom_killed", "cancelled"}


def test_the_real_sigkill_recording_says_who_it_could_have_been(pack) -> None:
    """r07: a real torch job on the dev cluster whose rank 1 was SIGKILLed by its own script."""
    path = BUNDLES / "r07-srun-python-sigkill"
    got = diagnose(load_bundle(path), pack)
    assert got.label == json.loads((path / "expected.json").read_text())["label"] == "unknown"
    assert got.details["killed_by"]["sender"] == "unknown"
    assert got.details["confidence"]["level"] == "low"


TIMEOUTS = "".join(
    f"{r}: [rank{r}]:[E1202 12:58:40.5 ProcessGroupNCCL.cpp:685] [Rank {r}] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=7243, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600020 "
    "milliseconds before timing out.\n"
    for r in (0, 1, 3)
)


@pytest.mark.parametrize(
    "abort",
    [
        "1: Aborted (core dumped)\n",
        "1: terminate called after throwing an instance of 'c10::DistBackendError'\n",
        "1: bash: line 1: 16108 Aborted                 (core dumped) python train.py\n",
        "srun: error: n1: task 1: Aborted (core dumped)\n",
        "1: Fatal Python error: Aborted\n1: \n1: Thread 0x00007f1c2effd640 (most recent call first):\n",
    ],
)
def test_an_abort_after_the_watchdog_is_its_teardown(tmp_path: Path, pack, abort: str) -> None:
    """SIGABRT that follows a rank's watchdog timeout is the watchdog's own teardown (§8.4): not a crash."""
    log = STEPS + TIMEOUTS + abort + "srun: error: n1: task 0: Aborted (core dumped)\n"
    got = _diagnose(tmp_path, pack, log, exit_code="134:0", derived_exit_code="0:6")
    assert got.label == "nccl_timeout", got.summary


def test_a_sigbus_in_a_save_window_is_a_checkpoint_crash(tmp_path: Path, pack) -> None:
    log = (
        STEPS
        + "2: [2026-12-02 12:48:41] saving checkpoint at iteration 3 to /ckpt\n"
        + "2: Fatal Python error: Bus error\n2: \n"
        + "2: Current thread 0x00007fb7d2dc2b80 (most recent call first):\n"
        + "srun: error: n2: task 2: Bus error (core dumped)\nsrun: error: n1: tasks 0-1: Exited with exit code 1\n"
    )
    got = _diagnose(tmp_path, pack, log, exit_code="1:0", derived_exit_code="0:7")
    assert (got.label, got.root_node, got.root_rank) == ("checkpoint_segfault", "n2", 2), got.summary
    assert got.details["signal"] == "SIGBUS"
