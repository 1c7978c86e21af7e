"""Counting a window's jobs on every CPU: a year of a large cluster is millions of sacct rows.

This process cuts sacct's output into blocks that read independently (report/blocks.py) and hands
them to worker processes (a saved file's blocks by their offsets, which each worker reads itself;
sacct's pipe's blocks through the queue), which read them with the same parser as every other
reader, classify and count them; their tallies merge into one. At most IN_FLIGHT blocks per worker wait at any
time, so memory stays bounded whatever the row count. With one CPU, one worker does it all.

The rows hold text any user writes (Comment, and AdminComment where another tool lets users write
it), so the parse runs only in workers bound by WorkerBounds (docs/design.md, "Untrusted input is
parsed in a bounded child"): an address space of their forked image plus `memory_mb`, and CPU
seconds per block (RLIMIT_CPU's soft limit moved on before each block, so a year of rows is never
cut short, while one block that costs more ends its worker with SIGXCPU). A worker stopped by
either ends the report with one line that says which (ReportInputError), never a traceback.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import resource
import signal
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from typing import IO

from slurm_hooks.core.nogc import no_cycle_collector
from slurm_hooks.core.sandbox import MEMORY_EXIT, cap_memory, death
from slurm_hooks.report.aggregate import ANY_TIME, Tally, Window
from slurm_hooks.report.blocks import BLOCK, Unit, batches, in_bounds, loaded, read_unit, spans, units
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.read import Filters, JobReader
from slurm_hooks.slurm.client import AccountingRow
from slurm_hooks.slurm.columns import Columns

IN_FLIGHT = 2  # blocks queued per worker


@dataclass(frozen=True)
class WorkerBounds:
    """What one worker may cost. A block is 1 MiB of rows (blocks.BLOCK), read in ~20 ms and a
    few MiB of columns; a record read alone is at most blocks.LONGEST (4 MiB). Both are far inside
    these, which only a parser gone wrong, or input built to make it go wrong, reaches."""

    memory_mb: int = 1024  # address space past the image the worker was forked with (malloc arenas, a thread stack)
    # CPU seconds one block may take: rows parse in milliseconds, but a block of 300 distinct
    # 99,999-node lists costs ~10 s to expand (tests/test_hostile_scale.py): room for a cluster that size
    block_cpu_s: int = 120


WORKER_BOUNDS = WorkerBounds()


class ReportInputError(ValueError):
    """A worker was stopped by its bounds: the input could not be read within them (report/run.py
    prints this as one line, exit 1)."""


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


def count_stream(
    stream: IO[bytes], sep: str, counting: Counting, workers: int, bounds: WorkerBounds = WORKER_BOUNDS
) -> Tally:
    """The tally of every row of sacct output in `stream` (fields separated by `sep`), counted by
    `workers` (at least one) processes bound by `bounds`."""
    workers = max(1, workers)
    fork = multiprocessing.get_context("fork")  # workers inherit the setup and the open file
    todo: Queue[Unit | None] = fork.Queue(maxsize=workers * IN_FLIGHT)
    done: Queue[Tally | str] = fork.Queue()
    fd = stream.fileno() if _regular_file(stream) else -1
    args = (counting, sep, fd, todo, done, bounds)
    procs = [fork.Process(target=_work, args=args, daemon=True) for _ in range(workers)]
    for proc in procs:
        proc.start()
    try:
        for part in (spans if fd >= 0 else units)(stream, sep.encode()):  # a file's blocks go by offset
            _handed(todo, part, procs, bounds, done)
        for _ in procs:
            _handed(todo, None, procs, bounds, done)
        total = _answer(done, procs, bounds)  # the first part is the total's start: one merge fewer, in this process
        for _ in procs[1:]:
            total.merge(_answer(done, procs, bounds))
    finally:
        for proc in procs:
            proc.kill()  # a no-op for those done; none stays behind when this process stops early
            proc.join()
        todo.cancel_join_thread()  # what a dead worker left queued is never read: do not wait to send it
    return total


def _handed(
    todo: Queue[Unit | None],
    unit: Unit | None,
    procs: Sequence[BaseProcess],
    bounds: WorkerBounds,
    done: Queue[Tally | str],
) -> None:
    while True:
        try:
            return todo.put(unit, timeout=1)
        except queue.Full:
            _check(procs, bounds, done)


def _answer(done: Queue[Tally | str], procs: Sequence[BaseProcess], bounds: WorkerBounds) -> Tally:
    while True:
        try:
            answer = done.get(timeout=1)
        except queue.Empty:
            _check(procs, bounds, done)
            continue
        if isinstance(answer, str):
            raise RuntimeError(f"report worker: {answer}")
        return answer


def _check(procs: Sequence[BaseProcess], bounds: WorkerBounds, done: Queue[Tally | str]) -> None:
    dead = [proc.exitcode for proc in procs if proc.exitcode not in (None, 0)]
    if not dead:
        return
    if dead[0] in (MEMORY_EXIT, -signal.SIGXCPU):  # stopped by its bounds: the input's doing, said in one line
        raise ReportInputError(
            f"input not read: a report worker was {death(dead[0])} (bounds: {bounds.memory_mb} MiB past its"
            f" image, {bounds.block_cpu_s} CPU s a block of {BLOCK >> 20} MiB)"
        )
    try:  # what the worker said before it went, if anything (another's tally is of no use now)
        said = done.get(timeout=0.5)
    except queue.Empty:
        said = ""
    raise RuntimeError(f"report worker died (exit {dead[0]})" + (f": {said}" if isinstance(said, str) and said else ""))


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


def _work(
    counting: Counting, sep: str, fd: int, todo: Queue[Unit | None], done: Queue[Tally | str], bounds: WorkerBounds
) -> None:
    """A worker: bound itself, count every unit until told to stop, then hand back one tally."""
    cap_memory(bounds.memory_mb)
    gc.disable()  # see core.nogc
    reader, tally = counting.reader(), counting.tally()
    try:
        while (unit := todo.get()) is not None:
            _cpu_for_a_block(bounds.block_cpu_s)
            _count(*read_unit(loaded(unit, fd), sep), reader, counting, tally)
    except MemoryError:  # past RLIMIT_AS: the exit status says so (putting a message could need memory)
        os._exit(MEMORY_EXIT)
    except Exception as exc:  # the parent raises it; a traceback here would be lost
        done.put(f"{type(exc).__name__}: {str(exc)[:500]}")
        sys.exit(
            1
        )  # not 0: the parent, still handing out blocks, must see this worker is gone (the queue is flushed first)
    tally.exposure.fold()  # here, on every CPU: the parent merges nodes, not node lists
    done.put(tally)


def _cpu_for_a_block(cpu_s: int) -> None:
    """RLIMIT_CPU's soft limit `cpu_s` past the CPU time used so far; the hard one is left as it
    is, so it can be moved on before the next block."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(usage.ru_utime + usage.ru_stime) + 1 + cpu_s
    resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
