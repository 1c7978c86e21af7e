"""Many accounting rows as one list per field: how the report reads a million of them.

`fast_columns` reads lines of sacct output that are each one whole row (nearly every line) with a
few calls that each run over all of them in C: one split, then a slice per field. It answers None
when any of them is not a whole row (a damaged line, a comment holding the separator), and the
caller reads that block record by record (accounting.records and parse_record), which gives the
same values: `of_rows` turns those rows into columns too. Lines that cannot be rows by their field
count (`whole_lines` sets them apart) are read record by record in any case.
"""

from __future__ import annotations

from itertools import compress, repeat
from operator import attrgetter, ne
from typing import NamedTuple

from slurm_hooks.slurm.accounting import FIELDS, MAX_RECORD, gpu_count
from slurm_hooks.slurm.client import AccountingRow

_WIDTH = len(FIELDS)
_LONG = MAX_RECORD // 4  # characters: even in four-byte UTF-8 such a line is one piece for records


class Columns(NamedTuple):
    """Row i is every list's item i; the fields are AccountingRow's."""

    job_id: list[str]
    state: list[str]
    exit_code: list[str]
    derived_exit_code: list[str]
    start: list[str]
    end: list[str]
    elapsed_s: list[int]
    node_list: list[str]
    n_nodes: list[int]
    n_gpus: list[int]
    partition: list[str]
    user: list[str]
    account: list[str]
    comment: list[str]
    admin_comment: list[str]


_ROW = attrgetter(*Columns._fields)


def of_rows(rows: list[AccountingRow]) -> Columns:
    if not rows:
        return Columns(*([] for _ in Columns._fields))
    return Columns(*(list(col) for col in zip(*map(_ROW, rows), strict=True)))


def whole_lines(text: str, sep: str) -> tuple[list[str], list[str]]:
    """`text`'s lines that have a row's number of fields, and the runs of other lines between them
    (a comment with a newline spans lines, none of them with a row's field count; a line longer
    than accounting.records reads in one piece is cut there, so it goes that way too)."""
    lines = text.split("\n")
    tail = lines.pop()  # after the last newline: a line sacct had not finished
    counts = list(map(str.count, lines, repeat(sep, len(lines))))
    longest = max(map(len, lines), default=0)
    if counts.count(_WIDTH - 1) == len(lines) and longest < _LONG and not tail:
        return lines, []  # the common case, checked in C
    n = len(lines)
    odd = list(compress(range(n), map(ne, counts, repeat(_WIDTH - 1))))
    if longest >= _LONG:
        odd = sorted({*odd, *(i for i, line in enumerate(lines) if len(line) >= _LONG)})
    if tail:
        lines.append(tail)
        odd.append(n)
    rows: list[str] = []
    runs: list[list[str]] = []
    at = 0  # the first line not placed yet
    for i in odd:  # few: lines of multi-line comments, damaged lines
        if i > at or not runs:
            rows.extend(lines[at:i])
            runs.append([])
        runs[-1].append(lines[i] + "\n" if i < n else lines[i])
        at = i + 1
    rows.extend(lines[at:n])
    return rows, ["".join(run) for run in runs]


def fast_columns(lines: list[str], sep: str) -> Columns | None:
    """Lines with a row's number of fields as columns; None unless every one is a whole row."""
    flat = sep.join(lines).split(sep)
    job_id = flat[0::_WIDTH]
    if job_id != flat[_WIDTH - 1 :: _WIDTH] or not all(map(str.isdigit, job_id)) or not "".join(job_id).isascii():
        return None  # the first field is the job id, and the end marker repeats it
    try:  # as parse_record reads them; a value int() refuses (even "") sends the block the careful way
        elapsed, n_nodes = list(map(int, flat[6::_WIDTH])), list(map(int, flat[8::_WIDTH]))
    except ValueError:
        return None
    return Columns(
        job_id,
        flat[1::_WIDTH],
        flat[2::_WIDTH],
        flat[3::_WIDTH],
        flat[4::_WIDTH],
        flat[5::_WIDTH],
        elapsed,
        flat[7::_WIDTH],
        n_nodes,
        list(map(gpu_count, flat[9::_WIDTH])),
        flat[10::_WIDTH],
        flat[11::_WIDTH],
        flat[12::_WIDTH],
        flat[14::_WIDTH],
        flat[13::_WIDTH],
    )
