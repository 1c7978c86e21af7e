"""A long line's tail beside its head (log-signatures §8.24).

A line longer than `limits.line_bytes` keeps its head for the rules, and its tail too: a crash
header may sit after a progress bar's last `\r`, past the first KiBs of the physical line. The
tail is read with pread, so the file's offset stays where its reader (perhaps ripgrep, reading
the same descriptor) left it; the work is the long line's own length, at most TAIL_SEARCH.
"""

from __future__ import annotations

import os
from typing import BinaryIO

TAIL_SEARCH = 64 << 20  # bytes read past a long line's head for its tail; a longer line keeps its head only
_CHUNK = 1 << 20


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def line_tail(fh: BinaryIO, offset: int, keep: int, term: bytes = b"\n") -> bytes:
    """The last `keep` bytes of the over-long line that starts at `offset`; b"" past TAIL_SEARCH or
    without a file descriptor."""
    try:
        fd = fh.fileno()
    except (AttributeError, OSError, ValueError):
        return b""
    pos, tail = offset + keep, b""
    while pos - offset < TAIL_SEARCH:
        chunk = os.pread(fd, _CHUNK, pos)
        if not chunk:
            return tail
        end = chunk.find(term)
        tail = (tail + (chunk if end < 0 else chunk[:end]))[-keep:]
        if end >= 0:
            return tail
        pos += len(chunk)
    return b""


def tail_bytes(keep: int) -> int:
    """Of the `keep` bytes kept of an over-long line, how many are its tail (the rest is its head)."""
    return keep // 4


def with_tail(head: bytes, tail: bytes, keep: int) -> str:
    """Head and tail of a long line as one text of at most `keep` bytes, the tail read as a `\r`
    segment of its own."""
    if not tail:
        return decode(head[:keep])
    return decode(head[: max(keep - len(tail) - 1, 0)]) + "\r" + decode(tail)
