"""Blocks of sacct output read independently give exactly the rows of one sequential read."""

from __future__ import annotations

import io
import tempfile
from collections.abc import Iterable
from dataclasses import astuple

from hypothesis import given
from hypothesis import strategies as st

from slurm_hooks.report.blocks import Unit, loaded, read_unit, spans, units
from slurm_hooks.slurm.accounting import parse_rows
from slurm_hooks.slurm.client import SEP
from tests.test_slurm_accounting import line

_text = st.text(alphabet=st.sampled_from("ab |\n\x1f\x00é7"), max_size=300)
_line = st.one_of(
    st.builds(lambda j: line(str(j)), st.integers(1, 10**6)),
    st.builds(lambda j, c: line(str(j), comment=c), st.integers(1, 10**6), _text),  # newlines, separators
    st.builds(lambda j, a: line(str(j), admin=a), st.integers(1, 10**6), _text),
    st.builds(lambda t: t + "\n", _text),  # not a row at all
)


def sequential(data: bytes) -> tuple[list[tuple[object, ...]], int]:
    rows = list(parse_rows(io.BytesIO(data)))
    return sorted(astuple(r) for r in rows if r.job_id), sum(not r.job_id for r in rows)


def in_blocks(data: bytes, block: int, longest: int) -> tuple[list[tuple[object, ...]], int]:
    return counted(units(io.BytesIO(data), SEP.encode(), block, longest), -1)


def in_spans(data: bytes, block: int, window: int) -> tuple[list[tuple[object, ...]], int]:
    with tempfile.TemporaryFile() as file:
        file.write(data)
        file.seek(0)
        return counted(spans(file, SEP.encode(), block, window), file.fileno())


def counted(parts: Iterable[Unit], fd: int) -> tuple[list[tuple[object, ...]], int]:
    rows, unreadable = [], 0
    for unit in parts:
        columns, bad = read_unit(loaded(unit, fd), SEP)
        rows += [row for cols in columns for row in zip(*cols, strict=True)]
        unreadable += bad
    return sorted(rows), unreadable


@given(st.lists(_line, max_size=40), st.text(alphabet="ab\x1f", max_size=20), st.integers(16, 700))
def test_blocks_read_as_one_sequential_read(lines: list[str], tail: str, block: int) -> None:
    data = ("".join(lines) + tail).encode()
    assert in_blocks(data, block, longest=block * 3) == sequential(data)
    assert in_spans(data, block, window=max(16, block // 3)) == sequential(data)  # a saved file, by offsets


def test_a_huge_multi_line_comment_is_read_record_by_record_and_blocks_resume_after_it() -> None:
    huge = "x" * 300_000 + "\n" + "y" * 500_000
    data = "".join([line("1"), line("2", comment=huge), line("3"), line("4", comment="a\nb")] * 3).encode()
    kinds = [type(unit) for unit in units(io.BytesIO(data), SEP.encode(), block=4096, longest=64 << 10)]
    assert list in kinds and kinds[-1] is bytes  # record by record through the comment, then blocks again
    assert in_blocks(data, 4096, 64 << 10) == sequential(data)
    assert in_spans(data, 4096, 1024) == sequential(data)  # no whole row in a window: read as a stream
    cut = [row for row in in_blocks(data, 4096, 64 << 10)[0] if row[0] == "2"]
    assert len(cut) == 3 and all(str(row[13]).endswith("\0truncated") for row in cut)


def test_a_window_starting_inside_a_line_never_cuts_there() -> None:
    # Job 9's comment holds what looks like a whole row of job 7 and goes on to a second line: a
    # window that begins where that look-alike begins must not cut after it.
    prefix = SEP.join(line("9").split(SEP)[:14]) + SEP
    first = prefix + line("7")
    data = (first + f"more{SEP}9\n" + line("10") * 3).encode()
    assert [row[0] for row in sequential(data)[0]] == ["10", "10", "10", "9"]  # one record across two lines
    assert in_spans(data, block=len(first), window=len(first) - len(prefix)) == sequential(data)
