"""Python tracebacks in a job log, read per rank's stream (log-signatures §8.26).

A traceback's lines carry no keyword worth scanning for (`File "...", line N`, `KeyError: 'x'`),
so the scan finds only where one starts (`Traceback (most recent call last):`, a logger's ERROR
line); this module reads on from there, once, in one pass over the file, and follows each
stream (srun task, torchrun `[defaultN]:`, c10 `[rankN]:` prefixes) on its own, so tracebacks
that several ranks print interleaved come apart. For each stream it keeps only its last block
(a traceback with the exceptions chained to it by `During handling of the above exception` or
`The above exception was the direct cause`) and what the stream printed after it: memory is a
few lines per stream, whatever the log holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import BinaryIO

from slurm_hooks.bundle import BundleFile
from slurm_hooks.timeline.longlines import decode, line_tail, tail_bytes
from slurm_hooks.timeline.prefixes import split_stream
from slurm_hooks.timeline.scan import MAX_LINE, line_terminator
from slurm_hooks.timeline.structured import record_streams

MAX_READ = 64 << 20  # bytes read from the first traceback a stream asks about
MAX_CHAIN = 8  # exceptions kept per block: the first is the cause
MAX_BLOCK_LINES = 2000  # a stream's lines inside one traceback before it is given up
MAX_TEXT = 400
_CHUNK = 1 << 20

# Python's header, or rich's (accelerate, typer, NeMo's CLI): `╭──── Traceback (most recent call last) ────╮`,
# its frames inside the box (`│ /x/train.py:802 in main │`), the exception line below the box's bottom
_HEADER = re.compile(
    r"^(\s*)(?:(?:traceback\s*:\s*)?Traceback \(most recent call last\):\s*$|╭─* ?Traceback \(most recent call last\) )"
)
_HEADER_WORDS = "Traceback (most recent call last)"  # in every header: a substring test spares the pattern
_FRAME = re.compile(r'^(\s*)File "(?P<file>[^"]{1,500})", line (?P<line>\d{1,9})')
_CHAINED = re.compile(
    r"^\s*(?:During handling of the above exception, another exception occurred:"
    r"|The above exception was the direct cause of the following exception:)\s*$"
)
# What a launcher or Slurm prints into an unlabelled stream: not the rank going on.
_NOT_THE_RANK = re.compile(r"^(?:srun: |slurmstepd: |[EWI]\d{4} \d\d:\d\d:\d\d\.\d+ \d+ .*torch/distributed/elastic)")

Stream = tuple[int | None, int | None, int | None]  # srun task, torchrun local rank, c10 [rankN]


@dataclass(frozen=True)
class Raised:
    """One exception line: `Type: message`, and the frame that raised it."""

    exc_type: str
    message: str
    frame: str | None  # "train.py:41"
    line_no: int
    offset: int
    text: str


@dataclass
class Block:
    """A stream's last traceback (or logged exception) and what the stream did after it."""

    stream: Stream
    start_line: int
    start_offset: int
    chain: list[Raised] = field(default_factory=list)
    went_on: bool = False  # training went on (a progress line) or a test run went on to its summary
    lines_after: int = 0  # lines of the stream after the block (launcher lines not counted)
    header_indent: int = 0
    frame_indent: int | None = None
    frame_line: str | None = None  # the last `File "...", line N` line: made a `file:N` only when something raises
    state: str = "frames"  # frames -> raised -> (chained -> frames ...) -> done
    stream_lines: int = 0


@dataclass(frozen=True)
class Start:
    line_no: int
    offset: int
    stream: Stream
    logged: Raised | None = None  # a logger's ERROR line: its own one-line block


Parse = Callable[[str], tuple[str, str] | None]  # an exception line -> (type, message)


def stream_of(line: str) -> tuple[Stream, str]:
    return split_stream(line)


def read_blocks(
    file: BundleFile,
    starts: list[Start],
    parse: Parse,
    went_on: Callable[[str], bool],
    notes: list[str],
    reports: Callable[[str], bool] = lambda _: False,
) -> list[Block]:
    """The last block of each stream that has a start, in one pass from the earliest start.
    `reports`: an exception that only reports another's (a parent's `CalledProcessError` after its
    child's traceback in the same stream): that block never hides the one before it."""
    if not starts:
        return []
    first = min(starts, key=lambda s: s.offset)
    logged = {s.line_no: s for s in starts if s.logged is not None}
    streams = {s.stream for s in starts}
    last: dict[Stream, Block] = {}
    before: dict[Stream, Block] = {}  # the block a stream's last one replaced, if it raised
    with file.open() as fh:
        term = line_terminator(fh)
        cut = False
        for line_no, offset, stream, body in _bodies(fh, _lines(fh, first.offset, first.line_no, term), term):
            if offset - first.offset > MAX_READ:
                cut = True
                break
            if stream not in streams:
                continue
            if (start := logged.pop(line_no, None)) is not None:  # a record's lines share its line: once
                assert start.logged is not None
                last[stream] = Block(stream, line_no, offset, [start.logged], state="done")
                continue
            header = _HEADER.match(body) if _HEADER_WORDS in body else None
            block = last.get(stream)
            if header and (block is None or block.state != "chained"):
                if block is not None and block.chain:
                    before[stream] = block
                last[stream] = Block(stream, line_no, offset, header_indent=len(header.group(1)))
                continue
            if block is not None:
                _step(block, body, line_no, offset, header is not None, parse, went_on)
    if cut:
        notes.append(f"{file.rel}: tracebacks read for {MAX_READ >> 20} MiB from line {first.line_no}; the rest unread")
    kept = [before.get(b.stream, b) if b.chain and reports(_said(b.chain[0])) else b for b in last.values()]
    return [b for b in kept if b.chain]


def _said(raised: Raised) -> str:
    return f"{raised.exc_type}: {raised.message}" if raised.message else raised.exc_type


def _step(
    b: Block, body: str, line_no: int, offset: int, header: bool, parse: Parse, went_on: Callable[[str], bool]
) -> None:
    """One more line of a block's stream."""
    stripped = body.strip()
    if b.state == "done":
        if stripped and not _NOT_THE_RANK.match(body):
            b.lines_after += 1
            b.went_on = b.went_on or went_on(body)
        return
    b.stream_lines += 1
    if b.stream_lines > MAX_BLOCK_LINES:
        b.state = "done"
        return
    if b.state == "chained":
        if header:
            b.state, b.frame_indent, b.frame_line = "frames", None, None
        elif stripped:
            b.state = "done"
        return
    if b.state == "raised":
        if _CHAINED.match(body) and len(b.chain) < MAX_CHAIN:
            b.state = "chained"
        elif stripped:  # a message's further lines, or what the rank printed next
            b.state = "done"
            _step(b, body, line_no, offset, header, parse, went_on)
        return
    indent = len(body) - len(body.lstrip())
    if stripped.startswith('File "') and _FRAME.match(body):  # the common line: a frame, its text kept for later
        b.frame_indent, b.frame_line = indent, body
        return
    limit = b.frame_indent if b.frame_indent is not None else b.header_indent + 1
    if stripped and indent < limit and (got := parse(stripped)) is not None:
        exc_type, message = got
        b.chain.append(Raised(exc_type, message, _frame(b.frame_line), line_no, offset, stripped[:MAX_TEXT]))
        b.state = "raised"


def _frame(line: str | None) -> str | None:
    """`train.py:41` of a `File "/x/train.py", line 41, in f` line."""
    frame = _FRAME.match(line) if line is not None else None
    return f"{frame.group('file').rsplit('/', 1)[-1]}:{frame.group('line')}" if frame else None


def _bodies(
    fh: BinaryIO, lines: Iterator[tuple[int, int, bytes]], term: bytes
) -> Iterator[tuple[int, int, Stream, str]]:
    """(line number, offset, stream, body) of each line, a JSON or logfmt record's lines each (§8.35);
    a record past the line cap has its tail read too (by pread: `fh`'s offset stays), the exception
    at the end of a long `exc_info` included."""
    for line_no, offset, raw in lines:
        stream, body = split_stream(decode(raw))  # _lines keeps a line's first MAX_LINE bytes only
        tail = partial(_after_head, fh, offset, term) if len(raw) >= MAX_LINE else None
        subs = record_streams(stream, body, tail)  # a record of blank lines has none
        for sub_stream, sub in subs if subs is not None else [(stream, body)]:
            yield line_no, offset, sub_stream, sub


def _after_head(fh: BinaryIO, offset: int, term: bytes) -> tuple[str, bool]:
    """(the end of the line at `offset` after its MAX_LINE head, no more than a tail's (longlines.py),
    whether it is all of what follows the head)."""
    keep = tail_bytes(MAX_LINE)
    end = line_tail(fh, offset + MAX_LINE - keep - 1, keep + 1, term)  # one byte more: is there a gap?
    return decode(end[-keep:]), len(end) <= keep


def _lines(fh: BinaryIO, offset: int, line_no: int, term: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(line number, offset, bytes) from `offset`, which starts line `line_no`; a long line's head only."""
    fh.seek(offset)
    buf, skipping = b"", False  # skipping: the line `buf` ends in had its head given, the rest is dropped
    while chunk := fh.read(_CHUNK):
        *whole, buf = (buf + chunk).split(term)  # the lines of a chunk at C speed; the last may go on
        for raw in whole:
            if not skipping:
                yield line_no, offset, raw[:MAX_LINE]
            skipping = False
            line_no += 1
            offset += len(raw) + 1
        if len(buf) > MAX_LINE:  # an over-long line: keep its head, skip to its end
            if not skipping:
                yield line_no, offset, buf[:MAX_LINE]
            skipping = True
            offset, buf = offset + len(buf), b""
    if buf and not skipping:
        yield line_no, offset, buf[:MAX_LINE]
