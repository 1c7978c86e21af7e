"""sacct's output in blocks that can be read independently, and reading one block.

A block ends right after a line that is a whole row by itself, where accounting.records has
nothing pending, so every block reads exactly as it would inside the whole stream. Finding that
line costs a look at the last few lines of each block, not a look at every row. Where no such
line comes for LONGEST bytes (a huge multi-line comment), this process reads on record by record
until one does, and hands those records on as a batch.
"""

from __future__ import annotations

import io
import itertools
import os
from collections.abc import Iterator
from typing import IO

from slurm_hooks.slurm.accounting import MAX_RECORD, parse_record, records, whole_row
from slurm_hooks.slurm.client import AccountingRow
from slurm_hooks.slurm.columns import Columns, fast_columns, of_rows, whole_lines

BLOCK = 1 << 20  # 4k rows: its columns stay in the CPU cache through the passes over them (4 MiB: 10% slower)
LONGEST = 4 * MAX_RECORD  # carried without a whole row in sight before reading record by record
LOOK_BACK = 64  # lines looked at for a block's end
BATCH = 20_000  # records handed on at a time while reading record by record
MAX_ELAPSED_S = 10 * 366 * 86400  # a row's ElapsedRaw past ten years is no job's
MAX_NODES = 1 << 20  # NNodes: more than any cluster has
MAX_GPUS = 1 << 24  # GPUs of one job: 16 a node on MAX_NODES
MAX_ID_DIGITS = 20  # a job id is a 32-bit number (64 with a federation's bits): longer is no job's

WINDOW = 256 << 10  # read at a block's end to find its cut: longer than any line records reads whole
Span = tuple[int, int]  # a block of a regular file, by byte offsets: the worker reads it itself
Block = bytes | list[tuple[bytes, bool]]  # whole lines, or records already cut apart
Unit = Block | Span


def units(stream: IO[bytes], bsep: bytes, block: int = BLOCK, longest: int = LONGEST) -> Iterator[Block]:
    """The stream's Blocks, in order, read here (sacct's pipe; a file whose windows found no cut)."""
    source = _Prefixed(stream)
    carry = b""
    while data := source.read(block):
        data = carry + data
        end = _last_row_end(data, bsep)
        if end:
            yield data[:end]
            carry = data[end:]
        elif len(data) < longest:
            carry = data
        else:
            source.unread(data)
            carry = b""
            yield from _record_by_record(source, bsep)
    if carry:
        yield carry


def spans(file: IO[bytes], bsep: bytes, block: int = BLOCK, window: int = WINDOW) -> Iterator[Unit]:
    """A regular file's blocks as Spans, each cut after a whole row as `units` cuts: this process
    reads only a window at each block's end, and the workers read their blocks with pread, so a
    block crosses no pipe. Where a window holds no whole row (a huge record), the rest is read as
    `units` reads it."""
    fd, pos = file.fileno(), file.tell()
    size = os.fstat(fd).st_size
    while size - pos > block:
        at = max(pos, pos + block - window)
        end = _last_row_end(os.pread(fd, pos + block - at, at), bsep, at == pos)
        if not end:
            file.seek(pos)
            yield from units(file, bsep, block)
            return
        yield pos, at + end
        pos = at + end
    if pos < size:
        yield pos, size


def loaded(unit: Unit, fd: int) -> Block:
    """A Span's bytes, read from the file (`fd`, shared with the parent: pread moves no offset)."""
    return os.pread(fd, unit[1] - unit[0], unit[0]) if isinstance(unit, tuple) else unit


def read_unit(unit: Block, sep: str) -> tuple[list[Columns], int]:
    """The unit's rows as columns, and how many of its records could not be read."""
    if isinstance(unit, list):
        slow, unreadable = _parsed(unit, sep)
        return [slow], unreadable
    text = unit.decode("utf-8", "replace")  # as per record: no UTF-8 sequence spans a newline
    lines, others = whole_lines(text, sep)
    try:
        cols = fast_columns(lines, sep)
    except ValueError:  # a number int() refuses (past sys.int_info's digit limit): row by row below
        cols = None
    if cols is None:  # a line with a row's field count that is not one: read it all the careful way
        others, cols = [text], of_rows([])
    # A whole row leaves nothing pending (accounting.records), so the lines between rows read alike alone.
    cut_apart = [record for other in others for record in records(io.BytesIO(other.encode()), sep.encode())]
    slow, unreadable = _parsed(cut_apart, sep)
    return [cols, slow], unreadable


def batches(rows: Iterator[AccountingRow]) -> Iterator[tuple[Columns, int]]:
    """Rows from any backend as columns, BATCH at a time, and how many of them were unreadable."""
    while batch := list(itertools.islice(rows, BATCH)):
        yield _readable(batch)


def _parsed(cut_apart: list[tuple[bytes, bool]], sep: str) -> tuple[Columns, int]:
    rows, refused = [], 0
    for record, cut in cut_apart:
        try:
            rows.append(parse_record(record, cut, sep))
        except ValueError:  # a number of thousands of digits (int()'s limit): this row, not the report
            refused += 1
    cols, unreadable = _readable(rows)
    return cols, unreadable + refused


def in_bounds(cols: Columns) -> tuple[Columns, int]:
    """The rows whose numbers can be counted, and how many could not: ElapsedRaw, NNodes and the
    GPU count are never negative (a negative duration would count negative node-hours) nor past
    what any cluster runs (a 400-digit one would overflow the hours' floats); a job id is at most
    MAX_ID_DIGITS digits (the job-id samples turn it into an int)."""
    checks = ((cols.elapsed_s, MAX_ELAPSED_S), (cols.n_nodes, MAX_NODES), (cols.n_gpus, MAX_GPUS))
    if not cols.job_id or (
        all(min(col) >= 0 and max(col) <= top for col, top in checks) and max(map(len, cols.job_id)) <= MAX_ID_DIGITS
    ):
        return cols, 0  # the common case, checked in C
    keep = [
        0 <= e <= MAX_ELAPSED_S and 0 <= n <= MAX_NODES and 0 <= g <= MAX_GPUS and len(j) <= MAX_ID_DIGITS
        for j, e, n, g in zip(cols.job_id, cols.elapsed_s, cols.n_nodes, cols.n_gpus, strict=True)
    ]
    return Columns._make(list(itertools.compress(col, keep)) for col in cols), keep.count(False)


def _readable(rows: list[AccountingRow]) -> tuple[Columns, int]:
    readable = [row for row in rows if row.job_id]
    return of_rows(readable), len(rows) - len(readable)


def _last_row_end(data: bytes, bsep: bytes, starts_a_line: bool = True) -> int:
    end = data.rfind(b"\n") + 1
    for _ in range(LOOK_BACK):
        if end <= 0:
            return 0
        start = data.rfind(b"\n", 0, end - 1) + 1
        if start == 0 and not starts_a_line:
            return 0  # the window's first line may have begun before it
        line = data[start:end]
        if len(line) <= MAX_RECORD and whole_row(line, bsep):  # records reads it as one piece: a whole row
            return end
        end = start
    return 0


def _record_by_record(source: _Prefixed, bsep: bytes) -> Iterator[Block]:
    batch: list[tuple[bytes, bool]] = []
    for record, cut in records(source, bsep):
        batch.append((record, cut))
        if whole_row(record, bsep):  # a record ended on its end marker: nothing is pending
            break
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


class _Prefixed:
    """The stream, after bytes given back to it (what block reading read ahead of a long record)."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.head, self.at = stream, b"", 0

    def unread(self, data: bytes) -> None:
        self.head, self.at = data + self.head[self.at :], 0

    def read(self, n: int) -> bytes:
        if self.at >= len(self.head):
            return self.stream.read(n)
        out = self.head[self.at : self.at + n]
        self.at += len(out)
        return out

    def readline(self, limit: int) -> bytes:
        if self.at >= len(self.head):
            return self.stream.readline(limit)
        newline = self.head.find(b"\n", self.at, self.at + limit)
        take = newline + 1 - self.at if newline >= 0 else min(limit, len(self.head) - self.at)
        line = self.head[self.at : self.at + take]
        self.at += take
        if newline < 0 and len(line) < limit:  # the line goes on in the stream
            line += self.stream.readline(limit - len(line))
        return line
