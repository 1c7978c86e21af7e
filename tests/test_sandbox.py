"""The one door for untrusted bytes (core/sandbox.py): a parse in a forked child, bounded in memory,
CPU and wall time, as the input's owner; the parent gets the answer or a one-line reason, whatever
the child does."""

from __future__ import annotations

import os
import resource
import signal
import stat
import time
from pathlib import Path

import pytest

from slurm_hooks.core.sandbox import Bounds, Owner, Parsed, run_parse

BOUNDS = Bounds(memory_mb=128, cpu_s=1, wall_s=20)
NOBODY = 65534


def _spin() -> None:
    while True:
        pass


def test_the_answer_crosses_as_plain_data() -> None:
    got = run_parse(lambda: {"label": "x", "n": [1, 2.5, None, True]}, BOUNDS)
    assert got == Parsed(value={"label": "x", "n": [1, 2.5, None, True]}) and got.ok


def test_a_parse_past_its_memory_is_killed_and_says_so() -> None:
    started = time.monotonic()
    got = run_parse(lambda: len(bytearray(1 << 30)), BOUNDS)  # 1 GiB, eight times what it may add
    assert got.reason == "killed: memory limit" and time.monotonic() - started < 10


def test_the_memory_limit_counts_from_the_image_as_forked() -> None:
    """The child shares the parent's pages and RLIMIT_AS counts them: `memory_mb` is what it may add."""
    ballast = bytearray(256 << 20)  # the parent is larger than the child may grow by
    got = run_parse(lambda: len(bytearray(32 << 20)), BOUNDS)
    assert got.value == 32 << 20 and len(ballast) == 256 << 20


def test_a_parse_past_its_cpu_time_is_killed_and_says_so() -> None:
    started = time.monotonic()
    got = run_parse(_spin, BOUNDS)
    assert got.reason == "killed: cpu time" and time.monotonic() - started < 15


def test_a_parse_past_its_deadline_is_killed_and_says_so() -> None:
    started = time.monotonic()
    got = run_parse(lambda: time.sleep(3600), Bounds(memory_mb=64, cpu_s=60, wall_s=0.5))
    assert got.reason == "timed out after 0.5 s" and time.monotonic() - started < 5


def test_what_the_child_forks_dies_with_it_at_the_deadline(tmp_path: Path) -> None:
    """The scan's workers are the child's children: a deadline kill must not leave them running."""
    pid_file = tmp_path / "grandchild"

    def forks() -> None:
        if (pid := os.fork()) == 0:
            time.sleep(3600)
            os._exit(0)
        pid_file.write_text(str(pid))
        time.sleep(3600)

    assert run_parse(forks, Bounds(memory_mb=64, cpu_s=60, wall_s=1)).reason == "timed out after 1 s"
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(grandchild):
        time.sleep(0.05)
    assert not _alive(grandchild)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.parametrize(
    ("crash", "reason"),
    [
        (lambda: os.kill(os.getpid(), signal.SIGSEGV), "killed: signal 11"),
        (lambda: os._exit(3), "exit 3"),
        (lambda: [][1], "IndexError: list index out of range"),
        (lambda: object(), "TypeError: Object of type object is not JSON serializable"),
    ],
    ids=["segfault", "exit", "raises", "not-data"],
)
def test_a_child_that_crashes_costs_its_answer_only(crash: object, reason: str) -> None:
    got = run_parse(crash, BOUNDS)  # type: ignore[arg-type]
    assert got.reason == reason and got.value is None
    assert run_parse(lambda: "and the next parse runs", BOUNDS).value == "and the next parse runs"


def test_a_crashing_child_writes_no_core_file() -> None:
    """SIGSEGV and SIGXCPU dump core where core_pattern says: never the hook's memory, and never raised again."""
    got = run_parse(lambda: resource.getrlimit(resource.RLIMIT_CORE), BOUNDS)
    assert got.value == [0, 0]


def _pipe_to_parent(before: set[int]) -> int:
    """The child's write end of its answer pipe, found the way code running in it could find it:
    the one write-only pipe that was not open before run_parse."""
    (fd,) = [fd for fd in _open_fds() - before if _writable(fd) and stat.S_ISFIFO(os.fstat(fd).st_mode)]
    return fd


def _open_fds() -> set[int]:
    return set(map(int, os.listdir("/proc/self/fd")))


def _writable(fd: int) -> bool:
    import fcntl

    try:
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY
    except OSError:
        return False


@pytest.mark.parametrize(
    "answer",
    [
        b"not json",
        b'{"ok": 1, "and": 2}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"ok": ' + b"9" * 10_000 + b"}",
        b"x" * 5000,
    ],
    ids=["garbage", "extra-key", "deep", "huge-int", "too-long"],
)
def test_a_child_that_answers_what_we_never_send_gives_a_bad_result(answer: bytes) -> None:
    """A child that parsed hostile bytes may be the attacker's: its answer is data, checked, capped."""

    before = _open_fds()

    def forged() -> None:
        os.write(_pipe_to_parent(before), answer)
        os._exit(0)

    assert run_parse(forged, Bounds(memory_mb=64, cpu_s=5, wall_s=10, result_bytes=4096)).reason == "bad result"


def test_as_root_the_parse_runs_as_the_inputs_owner_with_no_groups() -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root")
    got = run_parse(lambda: [os.getresuid(), os.getresgid(), os.getgroups()], BOUNDS, Owner(NOBODY, NOBODY))
    assert got.value == [[NOBODY] * 3, [NOBODY] * 3, []]
    assert run_parse(lambda: os.geteuid(), BOUNDS, Owner(0, 0)).value == 0  # a root-owned input: nobody to become


def test_as_the_owner_the_child_holds_none_of_roots_descriptors_but_those_kept(tmp_path: Path) -> None:
    """A parse run as the input's owner is the owner's to subvert: it must not inherit an open
    root-only file (the hook log, a spool directory) to write through. Only `keep` stays open;
    and a root group on the input never becomes the child's group."""
    if os.geteuid() != 0:
        pytest.skip("dropping to another user needs root")
    secret, given = tmp_path / "root-only", tmp_path / "given"
    secret.write_text("x")
    given.write_text("y")
    held, kept = os.open(secret, os.O_RDWR), os.open(given, os.O_RDONLY)
    try:

        def open_fds() -> list[object]:
            return [sorted(int(n) for n in os.listdir("/proc/self/fd")), os.getresgid()[0]]

        fds, gid = run_parse(open_fds, BOUNDS, Owner(NOBODY, 0), keep=(kept,)).value  # type: ignore[misc]
    finally:
        os.close(held)
        os.close(kept)
    assert kept in fds and held not in fds
    assert gid == 65534
