"""Counting a window's jobs on every CPU: a year of a large cluster is millions of sacct rows.

This process cuts sacct's output into blocks that read independently (report/blocks.py) and hands
them to worker processes (a saved file's blocks by their offsets, which each worker reads itself;
sacct's pipe's blocks through the queue), which read them with the same parser as every other
reader, classify and count them; their tallies merge into one. At most IN_FLIGHT blocks per worker wait at any
time, so memory stays bounded whatever the row count. With one CPU the same steps run here.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import IO

from slurm_hooks.core.nogc import no_cycle_collector
from slurm_hooks.report.aggregate import ANY_TIME, Tally, Window
from slurm_hooks.report.blocks import Unit, batches, in_bounds, loaded, read_unit, spans, units
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.read import Filters, JobReader
from slurm_hooks.slurm.client import AccountingRow
from slurm_hooks.slurm.columns import Columns

IN_FLIGHT = 2  # blocks queued per worker


@dataclass(frozen=True)
class Counting:
    """Everything a worker needs to count its part of the stream as this process would."""

    labels: tuple[str, ...]
    rack_pattern: str
    trust_comment: bool
    filters: Filters
    spool: SpoolView
    details_limit: int
    window: Window = ANY_TIME  # jobs that ended outside it are counted apart (live and --input alike)
    cluster: str = ""

    def reader(self) -> JobReader:
        return JobReader(self.labels, self.rack_pattern, self.trust_comment, self.filters.node)

    def tally(self) -> Tally:
        return Tally(self.spool, self.details_limit, self.filters.label, self.window, self.cluster)


def count_rows(rows: Iterable[AccountingRow], counting: Counting) -> Tally:
    """The tally of rows read by any Slurm backend, in this process."""
    tally, reader = counting.tally(), counting.reader()
    with no_cycle_collector():
        for cols, unreadable in batches(iter(rows)):
            _count([cols], unreadable, reader, counting, tally)
    return tally


def count_stream(stream: IO[bytes], sep: str, counting: Counting, workers: int) -> Tally:
    """The tally of every row of sacct output in `stream` (fields separated by `sep`)."""
    total = counting.tally()
    if workers <= 1:
        reader = counting.reader()
        with no_cycle_collector():
            for unit in units(stream, sep.encode()):
                _count(*read_unit(unit, sep), reader, counting, total)
        return total
    fork = multiprocessing.get_context("fork")  # workers inherit the setup and the open file
    todo: Queue[Unit | None] = fork.Queue(maxsize=workers * IN_FLIGHT)
    done: Queue[Tally | str] = fork.Queue()
    fd = stream.fileno() if _regular_file(stream) else -1
    procs = [fork.Process(target=_work, args=(counting, sep, fd, todo, done), daemon=True) for _ in range(workers)]
    for proc in procs:
        proc.start()
    try:
        for part in (spans if fd >= 0 else units)(stream, sep.encode()):  # a file's blocks go by offset
            _handed(todo, part, procs)
        for _ in procs:
            _handed(todo, None, procs)
        total = _answer(done, procs)  # the first part is the total's start: one merge fewer, in this process
        for _ in procs[1:]:
            total.merge(_answer(done, procs))
    finally:
        for proc in procs:
            proc.kill()  # a no-op for those done; none stays behind when this process stops early
            proc.join()
        todo.cancel_join_thread()  # what a dead worker left queued is never read: do not wait to send it
    return total


def _handed(todo: Queue[Unit | None], unit: Unit | None, procs: Sequence[BaseProcess]) -> None:
    while True:
        try:
            return todo.put(unit, timeout=1)
        except queue.Full:
            _check(procs)


def _answer(done: Queue[Tally | str], procs: Sequence[BaseProcess]) -> Tally:
    while True:
        try:
            answer = done.get(timeout=1)
        except queue.Empty:
            _check(procs)
            continue
        if isinstance(answer, str):
            raise RuntimeError(f"report worker: {answer}")
        return answer


def _check(procs: Sequence[BaseProcess]) -> None:
    dead = [proc.exitcode for proc in procs if proc.exitcode not in (None, 0)]
    if dead:
        raise RuntimeError(f"report worker died (exit {dead[0]})")


def _count(parts: list[Columns], unreadable: int, reader: JobReader, counting: Counting, tally: Tally) -> None:
    tally.unreadable(unreadable)
    for part in parts:
        cols, out_of_range = in_bounds(part)
        tally.unreadable(out_of_range)
        jobs = reader.jobs(cols)
        picked = counting.filters.apply(jobs)
        tally.outside["filtered_out"] += len(jobs.records) - len(picked.records)
        tally.add(picked)


def _regular_file(stream: IO[bytes]) -> bool:
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError):  # io.BytesIO and the like have no file number
        return False


def _work(counting: Counting, sep: str, fd: int, todo: Queue[Unit | None], done: Queue[Tally | str]) -> None:
    """A worker: count every unit until told to stop, then hand back one tally."""
    gc.disable()  # see core.nogc
    reader, tally = counting.reader(), counting.tally()
    try:
        while (unit := todo.get()) is not None:
            _count(*read_unit(loaded(unit, fd), sep), reader, counting, tally)
    except Exception as exc:  # the parent raises it; a traceback here would be lost
        done.put(f"{type(exc).__name__}: {exc}")
        return
    tally.exposure.fold()  # here, on every CPU: the parent merges nodes, not node lists
    done.put(tally)
