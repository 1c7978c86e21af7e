"""Retention asks Slurm (issue 27, design item 5): a job that has not ended keeps its dump directory
and its spool dir whatever their age, wherever it runs; Slurm is asked once per Epilog, and only
when a directory is old enough to go; when Slurm cannot say, nothing of a job it could not rule out
goes before bundle/retention.UNSURE_KEEP_DAYS, and the log says why.

The Epilog cases drive the real flow (hooks/epilog.run_epilog) with tests/epilog_fakes.FakeSlurm;
the backends' cases give SlurmCli recorded squeue answers and SlurmPyslurm a pyslurm-like module.
Under `make reliability` the hostile ones are rows of docs/reliability.md.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from slurm_hooks.bundle.retention import UNSURE_KEEP_DAYS, Running, prune_jobs
from slurm_hooks.config import Config, FlightRecorder
from slurm_hooks.flight.collect import prune_dumps
from slurm_hooks.slurm.cli_backend import UNFINISHED_MAX_BYTES, SlurmCli
from slurm_hooks.slurm.client import SlurmError
from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm
from tests.epilog_fakes import FakeSlurm
from tests.reliability import Row, record
from tests.test_epilog import Rig

DAY = 86400.0
RUNNING_ELSEWHERE, ENDED = "71", "72"  # job ids with dirs here and no state on this node


def _record(fault: str, checked: str, seconds: float) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(fault, checked, seconds, 30.0, [0], 0, 0, 0.0, where="unit", annotated="yes"))


def aged(path: Path, days: float) -> Path:
    """A job dir `days` old by retention's stamp (min(mtime, ctime): the mtime, set back)."""
    path.mkdir(parents=True, exist_ok=True)
    when = time.time() - days * DAY
    os.utime(path, (when, when))
    return path


def rig(tmp: Path, slurm: FakeSlurm | None = None) -> Rig:
    rig = Rig(tmp, "step 1\nall done\n", state="COMPLETED", exit_code="0:0",
              flight_recorder=FlightRecorder(mode="on", dir=str(tmp / "flight")))  # fmt: skip
    if slurm is not None:
        slurm.jobs, slurm.hosts = rig.slurm.jobs, rig.slurm.hosts
        rig.slurm = slurm
    return rig


def test_a_running_jobs_old_dirs_survive_retention_and_an_ended_ones_go(tmp_path: Path) -> None:
    """A job running on another node (no state here) whose dump dir and spool dir are past every
    retention: both stay, since Slurm says it has not ended; an ended job's go. One squeue for both passes."""
    r = rig(tmp_path)
    r.slurm.unfinished = {RUNNING_ELSEWHERE}
    for root in (tmp_path / "flight", tmp_path / "spool/jobs"):
        for job in (RUNNING_ELSEWHERE, ENDED):
            aged(root / job, 400)
    start = time.monotonic()
    r.run()
    _record(
        "a job still running on another node: its dump dir and spool dir are past every retention",
        "both kept (Slurm says it has not ended); an ended job's removed; squeue asked once per Epilog",
        time.monotonic() - start,
    )
    for root in (tmp_path / "flight", tmp_path / "spool/jobs"):
        assert (root / RUNNING_ELSEWHERE).is_dir(), root
        assert not (root / ENDED).exists(), root
    assert r.slurm.unfinished_asked == 1
    assert "retention_unsure" not in r.log.events()


def test_slurm_is_not_asked_when_nothing_is_old_enough(tmp_path: Path) -> None:
    r = rig(tmp_path)
    aged(tmp_path / "flight" / ENDED, 1)  # dumps are kept 3 days, bundles 30
    aged(tmp_path / "spool/jobs" / ENDED, 1)
    r.run()
    assert r.slurm.unfinished_asked == 0
    assert (tmp_path / "flight" / ENDED).is_dir() and (tmp_path / "spool/jobs" / ENDED).is_dir()


class NoSqueue(FakeSlurm):
    """slurmctld answers the job's lookup, then squeue fails (slurmctld restarting, a timeout)."""

    def unfinished_jobs(self) -> frozenset[str]:
        self.unfinished_asked += 1
        raise SlurmError("squeue did not answer within 10s")


@pytest.mark.parametrize("down", ["slurmctld", "squeue"])
def test_when_slurm_cannot_say_no_job_goes_before_the_hard_cap(tmp_path: Path, down: str) -> None:
    """Past retention but younger than UNSURE_KEEP_DAYS: kept, and the log says why; older: removed."""
    r = rig(tmp_path, NoSqueue() if down == "squeue" else None)
    r.slurm.ctld_up = down != "slurmctld"
    young, old = "81", "82"
    for root in (tmp_path / "flight", tmp_path / "spool/jobs"):
        aged(root / young, 40)  # past both retentions (3 and 30 days)
        aged(root / old, UNSURE_KEEP_DAYS + 1)
    start = time.monotonic()
    r.run()
    _record(
        f"Slurm cannot say which jobs have ended ({down} down) while old dump and spool dirs wait",
        f"dirs of jobs it could not rule out kept up to {UNSURE_KEEP_DAYS} days, older ones removed; the log says why",
        time.monotonic() - start,
    )
    for root in (tmp_path / "flight", tmp_path / "spool/jobs"):
        assert (root / young).is_dir(), root
        assert not (root / old).exists(), root
    unsure = r.log.first("retention_unsure")
    assert f"{UNSURE_KEEP_DAYS} days" in unsure["detail"]
    assert ("lookup" if down == "slurmctld" else "did not answer") in unsure["error"]
    assert r.slurm.unfinished_asked == (1 if down == "squeue" else 0)  # a slurmctld that failed the lookup is not asked


def test_a_job_with_state_here_is_kept_whatever_slurm_says(tmp_path: Path) -> None:
    """This node's own state outranks squeue's answer (a job whose Epilog has not ended here)."""
    aged(tmp_path / "jobs/91", 400)
    aged(tmp_path / "flight/91", 400)
    config = Config(
        state_dir=str(tmp_path / "state"), flight_recorder=FlightRecorder(mode="on", dir=str(tmp_path / "flight"))
    )
    report = prune_jobs(tmp_path, 30, 1024, time.time(), Running({"91"}, frozenset), time.monotonic() + 5)
    assert report.removed == [] and (tmp_path / "jobs/91").is_dir()
    assert prune_dumps(config, "91", time.time(), time.monotonic() + 5, ask=frozenset) == ""
    assert (tmp_path / "flight/91").is_dir()


class Squeue:
    """A recorded squeue: its argv are kept, its answer given."""

    def __init__(self, out: bytes, code: int = 0) -> None:
        self.out, self.code = out, code
        self.calls: list[Sequence[str]] = []

    def __call__(
        self, argv: Sequence[str], timeout_s: float, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(list(argv), self.code, self.out, b"squeue: error: oops\n")


def test_the_cli_reads_every_state_and_keeps_those_not_ended() -> None:
    """All states, filtered here: a state this code does not know (a later Slurm's) counts as unfinished."""
    squeue = Squeue(b"11 RUNNING\n12 COMPLETED\n13 PENDING\n14 STOPPED\n15 CANCELLED\n16 REVOKED\n17 NEW_STATE\n")
    assert SlurmCli(5.0, runner=squeue).unfinished_jobs() == {"11", "13", "14", "17"}
    assert squeue.calls == [["squeue", "-h", "-a", "-t", "all", "-o", "%A %T"]]


@pytest.mark.parametrize(
    ("out", "code"),
    [
        (b"", 1),  # slurmctld down: squeue exits 1
        (b"11 RUNNING\n12_[1-3] PENDING\n", 0),  # a line not in the asked shape: the list cannot be trusted
        (b"11 RUNNING\n" * (UNFINISHED_MAX_BYTES // 11 + 1), 0),  # past the bound: not read
    ],
)
def test_the_cli_raises_when_squeue_cannot_be_trusted(out: bytes, code: int) -> None:
    with pytest.raises(SlurmError):
        SlurmCli(5.0, runner=Squeue(out, code)).unfinished_jobs()


def _pyslurm(load: object) -> ModuleType:
    module = ModuleType("pyslurm")
    module.PyslurmError = RuntimeError  # type: ignore[attr-defined]
    module.Jobs = SimpleNamespace(load=load)  # type: ignore[attr-defined]
    return module


def test_pyslurm_reads_slurmctlds_table_and_falls_back_to_squeue() -> None:
    jobs = {21: SimpleNamespace(id=21, state="RUNNING"), 22: SimpleNamespace(id=22, state="FAILED")}
    cli = SlurmCli(5.0, runner=Squeue(b"31 SUSPENDED\n"))
    assert SlurmPyslurm(_pyslurm(lambda: jobs), 5.0, cli).unfinished_jobs() == {"21"}

    def refused() -> object:
        raise RuntimeError("Unable to contact slurm controller")

    assert SlurmPyslurm(_pyslurm(refused), 5.0, cli).unfinished_jobs() == {"31"}
