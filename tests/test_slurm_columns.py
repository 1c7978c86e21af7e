"""Columns of sacct rows: the fast reading gives exactly what parse_record gives, or declines."""

from __future__ import annotations

import io
from dataclasses import astuple

from slurm_hooks.slurm.accounting import MAX_RECORD, parse_rows
from slurm_hooks.slurm.client import SEP
from slurm_hooks.slurm.columns import Columns, fast_columns, of_rows, whole_lines
from tests.test_slurm_accounting import line


def rows_of(cols: Columns) -> list[tuple[object, ...]]:
    return list(zip(*cols, strict=True))


def parsed(text: str) -> list[tuple[object, ...]]:
    return [astuple(row) for row in parse_rows(io.BytesIO(text.encode()))]


def test_whole_rows_read_as_parse_record_reads_them() -> None:
    text = line("101", "slurm-hooks/v1 label=app_segfault") + line("102", state="COMPLETED", tres="cpu=4") + line("7")
    lines, others = whole_lines(text, SEP)
    cols = fast_columns(lines, SEP)
    assert others == [] and cols is not None
    assert rows_of(cols) == parsed(text)
    assert cols.n_gpus == [8, 0, 8] and cols.elapsed_s == [3600] * 3


def test_lines_that_cannot_be_rows_are_set_apart_in_runs() -> None:
    multi = line("102", comment="first\nsecond\nthird")
    text = line("101") + multi + line("103") + "\x00garbage\n" + line("104") + "an unfinished li"
    lines, others = whole_lines(text, SEP)
    assert [row.split(SEP)[0] for row in lines] == ["101", "103", "104"]
    assert others == [multi, "\x00garbage\n", "an unfinished li"]


def test_a_line_longer_than_one_read_goes_the_careful_way() -> None:
    long = line("102", comment="x" * MAX_RECORD)
    lines, others = whole_lines(line("101") + long, SEP)
    assert len(lines) == 1 and others == [long]


def test_it_declines_what_is_not_a_whole_row() -> None:
    assert fast_columns([line("101").rstrip("\n")], SEP) is not None
    other_end = line("101").rstrip("\n")[: -len("101")] + "102"  # the right field count, another job's end
    assert fast_columns([line("100").rstrip("\n"), other_end], SEP) is None
    assert fast_columns([line("x1").rstrip("\n")], SEP) is None  # not a job id
    assert fast_columns([line("١٢").rstrip("\n")], SEP) is None  # digits, but not ASCII ones
    assert fast_columns([line("101").rstrip("\n").replace(f"{SEP}3600{SEP}", f"{SEP}{SEP}")], SEP) is None


def test_rows_from_any_backend_become_the_same_columns() -> None:
    text = line("101", "slurm-hooks/v1 label=app_segfault") + line("102")
    rows = list(parse_rows(io.BytesIO(text.encode())))
    cols = fast_columns(whole_lines(text, SEP)[0], SEP)
    assert of_rows(rows) == cols
    assert of_rows([]) == Columns(*([] for _ in Columns._fields))
