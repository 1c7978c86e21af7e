"""Find candidate lines in large files fast, with memory bounded whatever the file holds.

The rule pack's keywords are literals that every matching line must contain. ripgrep searches
for all of them at once (Aho-Corasick/SIMD, several times grep's speed) and hands back only the
few lines that can match; Python's `re` then runs the full rules on those lines alone. Where no
`rg` binary is found, a pure-Python streaming scan does the same job more slowly.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

MAX_LINE = 8192  # bytes of one line we keep; the rest of a longer line is dropped
_READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class Hit:
    line_no: int  # 1-based
    offset: int  # byte offset of the line's start
    text: str  # at most MAX_LINE bytes of it, decoded leniently


class Scanner(Protocol):
    def scan(self, path: Path, keywords: list[str]) -> Iterator[Hit]: ...


def read_bounded_line(stream: IO[bytes], limit: int = MAX_LINE) -> tuple[bytes, bool]:
    """One line, cut at `limit` bytes (the rest is consumed, not kept); (b"", True) at EOF."""
    line = stream.readline(limit)
    if not line:
        return b"", True
    if line.endswith(b"\n"):
        return line, False
    # Over-long line (or the last line without a newline): drop the remainder in bounded chunks.
    while True:
        rest = stream.readline(_READ_CHUNK)
        if not rest or rest.endswith(b"\n"):
            return line, False


def decode(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace").rstrip("\r\n")


def find_rg() -> str | None:
    """`rg` beside this interpreter (the venv's ripgrep wheel) first: hooks run with no PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg") or next((p for p in ("/usr/bin/rg", "/usr/local/bin/rg") if os.access(p, os.X_OK)), None)


class RipgrepScanner:
    def __init__(self, rg: str) -> None:
        self.rg = rg

    def scan(self, path: Path, keywords: list[str]) -> Iterator[Hit]:
        cmd = [self.rg, "--no-config", "--text", "--fixed-strings", "--line-number", "--byte-offset",
               "--no-filename", "--no-heading", "--color=never", "--no-mmap", f"--max-columns={MAX_LINE}",
               "--max-columns-preview"]
        for kw in keywords:
            cmd += ["-e", kw]
        cmd += ["--", str(path)]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as proc:
            assert proc.stdout is not None
            try:
                while True:
                    raw, eof = read_bounded_line(proc.stdout, MAX_LINE + 256)
                    if eof:
                        break
                    line_no, offset, text = raw.split(b":", 2)
                    yield Hit(int(line_no), int(offset), decode(text))
            finally:
                proc.kill()


class PythonScanner:
    """Fallback with the same results: streams the file, bounded line length."""

    def scan(self, path: Path, keywords: list[str]) -> Iterator[Hit]:
        needle = re.compile(b"|".join(re.escape(k.encode()) for k in keywords))
        with open(path, "rb") as fh:
            line_no = offset = 0
            while True:
                start = fh.tell()
                raw, eof = read_bounded_line(fh)
                if eof:
                    return
                line_no += 1
                offset = start
                if needle.search(raw):
                    yield Hit(line_no, offset, decode(raw))


def default_scanner() -> Scanner:
    rg = find_rg()
    return RipgrepScanner(rg) if rg else PythonScanner()
