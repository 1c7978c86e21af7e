"""The report parses sacct's text, which users write into (Comment, AdminComment), only in workers
bound by RLIMIT_AS and a per-block RLIMIT_CPU (issue 27, design item 2: report inputs), on one CPU
as on many; a worker its bounds stop ends the report with one line (ReportInputError, a ValueError
that report/run.py prints), never a traceback, and never a machine eaten.

The probes are JobReaders injected through Counting.reader() (the worker builds its reader from
the Counting it is handed): one says the worker's limits, one allocates past them, one spins.
Under `make reliability` the hostile ones are rows of docs/reliability.md.
"""

from __future__ import annotations

import io
import json
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.report_scale import synthetic_rows
from slurm_hooks.config import Config
from slurm_hooks.diagnose import LABELS
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.parallel import WORKER_BOUNDS, Counting, ReportInputError, WorkerBounds, count_stream
from slurm_hooks.report.read import Filters, JobReader
from slurm_hooks.slurm.client import SEP
from slurm_hooks.slurm.columns import Columns
from tests.reliability import Row, record

ROWS = synthetic_rows(2_000)  # one block
TIGHT = WorkerBounds(memory_mb=256, block_cpu_s=1)


RACKS = Config().report.rack_pattern


class Said(Exception):
    """The probe's answer, through the worker's error channel."""


class Probe(JobReader):
    def __init__(self, what: str) -> None:
        super().__init__(LABELS, RACKS, False)
        self.what = what

    def jobs(self, cols: Columns) -> object:  # type: ignore[override]
        if self.what == "limits":  # said through the worker's error channel: its own view of its limits
            with open("/proc/self/statm", "rb") as fh:
                image = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            said = {"as": resource.getrlimit(resource.RLIMIT_AS), "cpu": resource.getrlimit(resource.RLIMIT_CPU)}
            used = resource.getrusage(resource.RUSAGE_SELF)
            raise Said(json.dumps({**said, "image": image, "cpu_used": used.ru_utime + used.ru_stime}))
        if self.what == "memory":  # a parse gone wrong on a record built for it: 8 GiB at once
            return bytearray(8 << 30)
        if self.what == "slow":  # a costly but bounded parse: 0.15 CPU seconds a call (a block makes two)
            began = time.process_time()
            while time.process_time() - began < 0.15:
                pass
            return super().jobs(cols)
        while True:  # "cpu": a parse that never ends
            pass


@dataclass(frozen=True)
class Probing(Counting):
    what: str = "limits"

    def reader(self) -> JobReader:
        return Probe(self.what)


def probing(tmp_path: Path, what: str) -> Probing:
    return Probing(LABELS, RACKS, False, Filters(), SpoolView(str(tmp_path), "annotate"), 0, what=what)


def _record(fault: str, checked: str, seconds: float) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(fault, checked, seconds, 30.0, [1], 0, 0, 0.0, where="unit", annotated="-"))


@pytest.mark.parametrize("workers", [1, 2])
def test_every_worker_is_bound(tmp_path: Path, workers: int) -> None:
    """RLIMIT_AS is the worker's image plus memory_mb; RLIMIT_CPU's soft limit block_cpu_s past what it used."""
    with pytest.raises(RuntimeError, match="Said") as raised:
        count_stream(io.BytesIO(ROWS), SEP, probing(tmp_path, "limits"), workers)
    said = json.loads(str(raised.value).split("Said: ", 1)[1])
    soft, hard = said["as"]
    assert soft == hard != resource.RLIM_INFINITY
    assert 0 < soft - said["image"] <= (WORKER_BOUNDS.memory_mb << 20)  # the image grew a little since
    cpu_soft = said["cpu"][0]
    assert said["cpu_used"] < cpu_soft <= said["cpu_used"] + WORKER_BOUNDS.block_cpu_s + 1


@pytest.mark.parametrize("workers", [1, 2])
def test_a_parse_past_its_memory_ends_the_report_in_one_line(tmp_path: Path, workers: int) -> None:
    start = time.monotonic()
    with pytest.raises(ReportInputError, match="memory limit") as raised:
        count_stream(io.BytesIO(ROWS), SEP, probing(tmp_path, "memory"), workers, TIGHT)
    _record(
        "a report row whose parse allocates 8 GiB (a parser gone wrong on a user's Comment)",
        "the worker stops at RLIMIT_AS; the report ends with one line (exit 1), no traceback, the machine untouched",
        time.monotonic() - start,
    )
    assert isinstance(raised.value, ValueError)  # report/run.py prints these as `slurm-hooks: <message>`
    assert "\n" not in str(raised.value)


def test_a_parse_that_never_ends_is_stopped_by_cpu_time(tmp_path: Path) -> None:
    start = time.monotonic()
    with pytest.raises(ReportInputError, match="cpu time"):
        count_stream(io.BytesIO(ROWS), SEP, probing(tmp_path, "cpu"), 2, TIGHT)
    seconds = time.monotonic() - start
    _record(
        "a report row whose parse never ends (a parser gone wrong on a user's Comment)",
        "the worker stops at its per-block RLIMIT_CPU; the report ends with one line (exit 1), no traceback",
        seconds,
    )


def test_a_long_report_is_never_cut_short_by_the_cpu_limit(tmp_path: Path) -> None:
    """The limit is per block: blocks of 0.3 CPU seconds each, 2.4 s or more in all on one worker
    against a limit of 1 s a block, are all counted."""
    rows = synthetic_rows(30_000)  # 8 blocks or so
    tally = count_stream(io.BytesIO(rows), SEP, probing(tmp_path, "slow"), 1, WorkerBounds(1024, block_cpu_s=1))
    assert tally.inputs["rows"] == 30_000


def test_a_worker_that_fails_early_ends_the_report_with_its_reason(tmp_path: Path) -> None:
    """A worker whose parse raises while blocks are still being handed out (the queue full): the
    report ends with the worker's own words, and never waits for a worker that is gone."""
    broken = Counting(LABELS, "", False, Filters(), SpoolView(str(tmp_path), "annotate"), 0)  # no `rack` group
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"report worker.*IndexError: no such group"):
        count_stream(io.BytesIO(synthetic_rows(30_000)), SEP, broken, 1)
    assert time.monotonic() - start < 60  # a guard against the hang this closes (it waited forever), not a speed claim
