"""Calls side by side in forked children: answers in order, and nothing lost to a child that fails."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable

from slurm_hooks.core.forked import run_side_by_side

HERE = os.getpid()


def _same(value: object) -> object:
    return value


def _pid_and(value: int) -> Callable[[], tuple[int, int]]:
    return lambda: (os.getpid(), value)


def test_the_first_call_runs_here_and_the_others_in_children_each_answer_in_its_place() -> None:
    notes: list[str] = []
    got = run_side_by_side([_pid_and(i) for i in range(3)], _same, _same, notes)
    assert [value for _, value in got] == [0, 1, 2]
    pids = [pid for pid, _ in got]
    assert pids[0] == HERE and HERE not in pids[1:] and len(set(pids)) == 3
    assert notes == []


def test_what_send_makes_is_what_crosses_and_receive_makes_it_whole() -> None:
    got = run_side_by_side([lambda: {"a": 1}, lambda: {"b": 2}], lambda d: sorted(d.items()), dict, [])
    assert got == [{"a": 1}, {"b": 2}]  # the first never crosses: it is not sent at all


def _fails_away(how: Callable[[], None]) -> Callable[[], str]:
    def call() -> str:
        if os.getpid() != HERE:
            how()
        return "done here"

    return call


def _raise() -> None:
    raise RuntimeError("the child broke")


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_child_that_raises_or_dies_has_its_call_run_here_and_the_notes_say_so() -> None:
    notes: list[str] = []
    got = run_side_by_side([lambda: "first", _fails_away(_raise), _fails_away(_killed)], _same, _same, notes)
    assert got == ["first", "done here", "done here"]
    assert notes[0].startswith("scan worker 1: RuntimeError: the child broke;")
    assert notes[1].startswith("scan worker 2: ended (signal 9) without an answer;")
    assert all(n.endswith("its share was scanned again in the main process") for n in notes)


def test_an_answer_receive_cannot_read_is_done_again_here() -> None:
    def receive(sent: object) -> str:
        if sent == "from a child":
            raise ValueError("not a share")
        return str(sent)

    def call() -> str:
        return "from a child" if os.getpid() != HERE else "from here"

    notes: list[str] = []
    assert run_side_by_side([call, call], _same, receive, notes) == ["from here", "from here"]
    assert notes and "answered what could not be read (ValueError)" in notes[0]


def test_with_another_thread_running_nothing_is_forked() -> None:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, daemon=True)
    thread.start()
    try:
        got = run_side_by_side([_pid_and(0), _pid_and(1)], _same, _same, [])
    finally:
        stop.set()
        thread.join()
    assert [pid for pid, _ in got] == [HERE, HERE]
