"""A Slurm call in a forked child (slurm/bounded.py), with real forks: what comes back when the call
returns, raises, hangs (also holding the GIL, as libslurm does) or dies, and that no process is left."""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from slurm_hooks.core.proc import kill_all
from slurm_hooks.slurm.bounded import call_forked
from slurm_hooks.slurm.client import JobRecord, NotInAccountingYet, SlurmError

SLACK_S = 1.0  # fork, kill and reap, on a loaded 2-core machine


def children() -> set[int]:
    """This process's live and zombie children (the tests fork from the main thread)."""
    me = os.getpid()
    return {int(pid) for pid in Path(f"/proc/{me}/task/{me}/children").read_text().split()}


@pytest.fixture(autouse=True)
def nothing_left_behind() -> None:
    before = children()
    yield
    assert children() == before  # every child reaped: no zombie, none still running


def test_the_result_comes_back_as_plain_data() -> None:
    record = JobRecord(job_id="7", state="FAILED", comment='Alice "quoted" \x1f text')
    assert call_forked("job", lambda: record, 5.0) == record
    assert call_forked("nothing", lambda: None, 5.0) is None


def test_the_call_runs_in_another_process() -> None:
    assert call_forked("pid", os.getpid, 5.0) != os.getpid()


def test_an_answer_larger_than_the_pipe_buffer_arrives_whole() -> None:
    big = "x" * (4 << 20)
    assert call_forked("big", lambda: big, 10.0) == big


def test_a_slurm_error_comes_back_as_itself() -> None:
    def absent() -> None:
        raise NotInAccountingYet("no accounting record for job 7 yet")

    with pytest.raises(NotInAccountingYet, match="no accounting record for job 7 yet"):
        call_forked("pyslurm db.Jobs.load", absent, 5.0)


def test_any_other_exception_becomes_a_slurm_error_naming_the_call() -> None:
    def broken() -> None:
        raise ValueError("Unable to contact slurm controller")

    with pytest.raises(SlurmError) as caught:
        call_forked("pyslurm Job.load", broken, 5.0)
    assert type(caught.value) is SlurmError
    assert str(caught.value) == "pyslurm Job.load: ValueError: Unable to contact slurm controller"


def hold_the_gil() -> None:
    """Catastrophic backtracking: one C call (re's matcher) that keeps the GIL for minutes, as
    libslurm's retries do inside pyslurm; a thread or a signal handler could not stop it."""
    re.match(r"(a*)*b", "a" * 64)


@pytest.mark.parametrize("hang", [lambda: time.sleep(600), hold_the_gil], ids=["sleeping", "holding-the-gil"])
def test_a_hung_call_is_killed_after_the_budget(hang) -> None:
    t0 = time.monotonic()
    with pytest.raises(SlurmError, match=r"^pyslurm Job.load did not answer within 0.5s$"):
        call_forked("pyslurm Job.load", hang, 0.5)
    assert 0.5 <= time.monotonic() - t0 < 0.5 + SLACK_S


def test_what_a_hung_call_started_dies_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild"

    def start_and_hang() -> None:
        helper = subprocess.Popen(["sleep", "600"])
        pid_file.write_text(str(helper.pid))
        time.sleep(600)

    with pytest.raises(SlurmError, match="did not answer"):
        call_forked("helper", start_and_hang, 1.0)
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting for whoever inherited it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def die(sig: signal.Signals) -> None:
    faulthandler.disable()  # pytest's, inherited: it would print a traceback for the SIGSEGV
    os.kill(os.getpid(), sig)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSEGV])
def test_a_call_that_kills_itself_is_a_slurm_error(sig: signal.Signals) -> None:
    t0 = time.monotonic()
    with pytest.raises(SlurmError, match=rf"^pyslurm Job.load: killed by signal {int(sig)} \(.+\) before answering$"):
        call_forked("pyslurm Job.load", lambda: die(sig), 30.0)
    assert time.monotonic() - t0 < SLACK_S  # known at once, not at the end of the budget


def test_a_call_that_exits_is_a_slurm_error() -> None:
    with pytest.raises(SlurmError, match=r"^scontrol: exited 3 before answering$"):
        call_forked("scontrol", lambda: os._exit(3), 30.0)


def test_the_hook_running_out_of_time_kills_the_call_in_flight() -> None:
    """The hook's guard calls kill_all when its own budget ends; a child then waiting must go too."""
    timer = threading.Timer(0.3, kill_all)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(SlurmError, match="killed by signal 9"):
            call_forked("pyslurm Job.load", lambda: time.sleep(600), 30.0)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 0.3 + SLACK_S
