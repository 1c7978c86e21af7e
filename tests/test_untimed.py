"""Untimed lines take their neighbours' stamps: each line is parsed once, the answer as if each
line's windows were read on their own."""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import datetime, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_hooks.timeline.clocks import ClockContext, log_time
from slurm_hooks.timeline.longlines import decode
from slurm_hooks.timeline.prefixes import strip_prefixes
from slurm_hooks.timeline.scan import MAX_LINE
from slurm_hooks.timeline.untimed import Neighbours

CTX = ClockContext(reference=datetime(2026, 1, 5, 12, tzinfo=timezone.utc))


def _windows_read_alone(data: bytes, term: bytes, offset: int, task: int | None, window: int):
    """The answer for one line, reading its two windows from the file as they stand (the old way)."""

    def nearest(lines: Iterable[bytes]) -> datetime | None:
        fallback = None
        for raw in lines:
            pre = strip_prefixes(decode(raw[:MAX_LINE]))
            stamp = log_time(pre.body, CTX)
            if stamp is None:
                continue
            if task is None or pre.task == task:
                return stamp
            fallback = fallback or stamp
        return fallback

    start = max(0, offset - window)
    before = data[start:offset].split(term)
    if start > 0:
        before = before[1:]  # cut mid-line
    after = data[offset : offset + window].split(term)[1:-1]
    return nearest(reversed(before)), nearest(after)


def _line(task: int | None, minute: int | None, filler: int) -> str:
    label = f"{task}: " if task is not None else ""
    stamp = f"[2026-01-05 10:{minute:02d}:00] " if minute is not None else ""
    return f"{label}{stamp}{'x' * filler}"


LINES = st.lists(
    st.builds(
        _line,
        st.one_of(st.none(), st.integers(0, 3)),
        st.one_of(st.none(), st.integers(0, 59)),
        st.one_of(st.integers(0, 20), st.integers(100, 400)),  # some lines longer than a small window
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=400, deadline=None)
@given(LINES, st.sampled_from([b"\n", b"\r"]), st.integers(16, 300), st.data())
def test_each_line_gets_the_stamps_its_own_windows_hold(lines, term, window, data) -> None:
    """Every line of the file asked, in order: window edges fall on every kind of byte."""
    blob = term.join(s.encode() for s in lines) + data.draw(st.sampled_from([term, b""]))
    offset, asked = 0, []
    for s in lines:
        asked.append((offset, data.draw(st.one_of(st.none(), st.integers(0, 3)))))
        offset += len(s.encode()) + 1
    neighbours = Neighbours(io.BytesIO(blob), term, CTX, window)
    for offset, task in asked:
        assert neighbours.around(offset, task) == _windows_read_alone(blob, term, offset, task, window)


def test_a_window_that_starts_at_the_files_first_byte_holds_its_first_line() -> None:
    first = b"0: [2026-01-05 10:01:00] a"
    blob = first + b"\n" + b"0: b\n"
    got = Neighbours(io.BytesIO(blob), b"\n", CTX, len(first) + 1).around(len(first) + 1, 0)
    assert got[0] == datetime(2026, 1, 5, 10, 1, tzinfo=timezone.utc)


def test_a_line_whose_end_is_the_windows_last_byte_plus_one_is_outside_it() -> None:
    """The window is `window` bytes from the line's start: a line ending on the byte after is cut,
    even when the file has been read further (for a line before)."""
    first, own, stamped = b"0: [2026-01-05 10:01:00] a", b"0: x", b"0: [2026-01-05 10:02:00] b"
    blob = first + b"\n" + own + b"\n" + stamped + b"\n"
    at = len(first) + 1
    window = len(own) + 1 + len(stamped)  # the stamped line's terminator is the first byte past it
    for width, seen in ((window, False), (window + 1, True)):
        neighbours = Neighbours(io.BytesIO(blob), b"\n", CTX, width)
        assert (neighbours.around(at, 0)[1] is not None) is seen
        assert _windows_read_alone(blob, b"\n", at, 0, width)[1] is not None if seen else True


def test_a_thousand_crash_lines_together_have_the_file_read_about_once() -> None:
    """Each of 1,000 untimed lines among 1,000 stamped ones gets the stamps around it, and the file is
    read about once (their windows overlap), not twice a line."""
    lines = []
    for i in range(1000):
        lines += [_line(i % 4, i % 60, 10), f"{i % 4}: Fatal Python error: Segmentation fault"]
    blob = ("\n".join(lines) + "\n").encode()
    reads = []

    class Counted(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            got = super().read(size)
            reads.append(len(got))
            return got

    neighbours = Neighbours(Counted(blob), b"\n", CTX, 1 << 12)
    offset = 0
    for i, line in enumerate(lines):
        if i % 2:
            task = (i // 2) % 4
            assert neighbours.around(offset, task) == _windows_read_alone(blob, b"\n", offset, task, 1 << 12)
        offset += len(line) + 1
    assert sum(reads) <= len(blob) + (1 << 12)
