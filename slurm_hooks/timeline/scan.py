"""Find candidate lines in large files fast, with memory and work bounded whatever the file holds.

The rule pack's keywords are literals that every matching line must contain. ripgrep searches
for all of them at once (Aho-Corasick/SIMD, several times grep's speed) and hands back only the
few lines that can match; RE2 then runs the full rules on those lines alone. The pure-Python
streaming scan does the same job more slowly: where no `rg` is found, where ripgrep fails (its
exit status is checked; a line too long for its memory limit aborts it), and for files whose
lines end in a bare CR, which ripgrep would read as one line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

from slurm_hooks.rules.pattern import BytesNeedle, literal_needle
from slurm_hooks.timeline.longlines import decode, line_tail, tail_bytes, with_tail

MAX_LINE = 8192  # default bytes of one line we keep (config `limits.line_bytes`); the rest is dropped
_OMITTED = b" [... omitted end of long line]"  # what rg prints after the head of a line past --max-columns
RG_MEMORY = 128 << 20  # address space of the rg child: a 2 GiB line aborts it instead of filling RAM
_CHUNK = 1 << 20
SMALL_FILE = 1 << 20  # bytes up to which a file is scanned in-process: a kernel log, a node's short log
_SNIFF = 1 << 16


@dataclass(frozen=True)
class Hit:
    line_no: int  # 1-based
    offset: int  # byte offset of the line's start
    text: str  # at most line_bytes bytes of it, decoded leniently


class Scanner(Protocol):
    def scan(
        self, fh: BinaryIO, keywords: Sequence[str], notes: list[str], after_line: int = 0, from_offset: int = 0
    ) -> Iterator[Hit]:
        """Lines of `fh` holding any keyword, after line `after_line` (which starts at byte
        `from_offset`); what went wrong is appended to `notes`."""
        ...


class ScanFailed(Exception):
    """ripgrep ended with an error (status >= 2, or a signal): its answer is incomplete."""


def line_terminator(fh: BinaryIO) -> bytes:
    """b"\\r" for a file whose head has bare CRs and no LF (old Mac, some progress loggers), else b"\\n"."""
    fh.seek(0)
    head = fh.read(_SNIFF)
    fh.seek(0)
    return b"\r" if b"\n" not in head and b"\r" in head else b"\n"


def find_rg() -> str | None:
    """`rg` beside this interpreter (the venv's ripgrep wheel) first: hooks run with no PATH."""
    beside = Path(sys.executable).parent / "rg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg") or next((p for p in ("/usr/bin/rg", "/usr/local/bin/rg") if os.access(p, os.X_OK)), None)


class RipgrepScanner:
    def __init__(self, rg: str, line_bytes: int = MAX_LINE, memory: int = RG_MEMORY) -> None:
        self.rg = rg
        self.line_bytes = line_bytes
        self.memory = memory

    def _limit_memory(self) -> None:  # runs in the child before exec
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (self.memory, self.memory))

    def scan(
        self, fh: BinaryIO, keywords: Sequence[str], notes: list[str], after_line: int = 0, from_offset: int = 0
    ) -> Iterator[Hit]:
        """Raises ScanFailed (after the hits it could give) when rg did not finish cleanly."""
        with tempfile.TemporaryFile() as patterns, tempfile.TemporaryFile() as errors:
            # Keywords through a file: no argv limit, and NUL bytes allowed.
            patterns.write(b"\n".join(k.encode() for k in keywords) + b"\n")
            patterns.flush()
            cmd = [
                self.rg,
                "--no-config",
                "--text",
                "--fixed-strings",
                "--line-number",
                "--byte-offset",
                "--no-filename",
                "--no-heading",
                "--color=never",
                "--threads=1",
                f"--max-columns={self.line_bytes}",
                "--max-columns-preview",
                f"--file=/dev/fd/{patterns.fileno()}",
                "-",
            ]
            fh.seek(from_offset)  # rg reads stdin from here: its line 1 is our line `after_line`
            base = max(after_line - 1, 0)
            with subprocess.Popen(
                cmd,
                stdin=fh,
                stdout=subprocess.PIPE,
                stderr=errors,
                pass_fds=(patterns.fileno(),),
                preexec_fn=self._limit_memory,
            ) as proc:
                assert proc.stdout is not None
                finished = False
                try:
                    for raw in proc.stdout:  # rg cuts each line at line_bytes (--max-columns)
                        parts = raw[: self.line_bytes + 256].split(b":", 2)
                        if (
                            len(parts) == 3
                            and parts[0].isdigit()
                            and parts[1].isdigit()
                            and (line_no := base + int(parts[0])) > after_line
                        ):
                            at, text = from_offset + int(parts[1]), parts[2].rstrip(b"\r\n")
                            tail = b""
                            if text.endswith(_OMITTED):  # a long line: its keyword may be in the tail
                                keep = tail_bytes(self.line_bytes)
                                text, tail = text[: -len(_OMITTED)], line_tail(fh, at, keep)
                            yield Hit(line_no, at, with_tail(text, tail, self.line_bytes))
                    finished = True
                finally:
                    if not finished:
                        proc.kill()  # the caller stopped early (or failed): not rg's failure
                rc = proc.wait()
            if rc not in (0, 1):  # 0: lines found, 1: none
                errors.seek(0)
                said = errors.read(300).decode(errors="replace").strip().splitlines()
                how = f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}"
                raise ScanFailed(f"{how}" + (f": {said[0]}" if said else ""))


class PythonScanner:
    """Same results as ripgrep: streams the file in chunks, keeps at most `line_bytes` of a line."""

    def __init__(self, line_bytes: int = MAX_LINE) -> None:
        self.line_bytes = line_bytes
        self.needles: dict[tuple[str, ...], BytesNeedle] = {}  # a bundle's 1,152 kernel logs share one

    def scan(
        self, fh: BinaryIO, keywords: Sequence[str], notes: list[str], after_line: int = 0, from_offset: int = 0
    ) -> Iterator[Hit]:
        """Hits after line `after_line`, reading from `from_offset` (the start of that line)."""
        key = tuple(keywords)
        if (needle := self.needles.get(key)) is None:
            if len(self.needles) >= 8:  # a few keyword sets in a run (each kind, each after a flood)
                self.needles.clear()
            needle = self.needles[key] = literal_needle(list(keywords))
        term = line_terminator(fh)
        fh.seek(from_offset)
        line_no, offset, keep = max(after_line - 1, 0), from_offset, self.line_bytes
        buf, skipping = b"", False  # skipping: inside an over-long line whose head was already looked at
        while chunk := fh.read(_CHUNK):
            buf += chunk
            start = 0
            if skipping:
                if (end := buf.find(term)) < 0:
                    offset, buf = offset + len(buf), b""
                    continue
                skipping, start = False, end + 1
            last = buf.rfind(term)
            # Whole lines: from keyword to keyword (RE2 over the buffer), counting the lines between;
            # the work is the hits', not the lines'.
            while last >= start and (m := needle.search(buf, start, last + 1)) is not None:
                head = buf.rfind(term, start, m.start()) + 1 or start
                end = buf.find(term, m.start())
                line_no += buf.count(term, start, head) + 1
                raw = buf[head : min(end, head + keep)]
                tail = buf[max(end - tail_bytes(keep), head + keep) : end] if end - head > keep else b""  # §8.24
                if line_no > after_line and (m.end() <= head + keep or needle.search(raw) or needle.search(tail)):
                    yield Hit(line_no, offset + head, with_tail(raw, tail, keep))
                start = end + 1
            if last >= start:
                line_no += buf.count(term, start, last + 1)
                start = last + 1
            while (end := buf.find(term, start)) >= 0 or len(buf) - start > keep:
                line_no += 1
                raw = buf[start : min(end, start + keep) if end >= 0 else start + keep]
                if end >= 0:  # the line's end is in the buffer: its tail too, when it is longer than `keep`
                    tail = buf[max(end - tail_bytes(keep), start + keep) : end] if end - start > keep else b""
                else:
                    tail = line_tail(fh, offset + start, tail_bytes(keep), term) if line_no > after_line else b""
                if line_no > after_line and (needle.search(raw) or needle.search(tail)):
                    yield Hit(line_no, offset + start, with_tail(raw, tail, keep))
                if end < 0:  # over-long line: the rest of it is read, never kept
                    skipping, start = True, len(buf)
                    break
                start = end + 1
            offset, buf = offset + start, buf[start:]
        if buf and not skipping and line_no + 1 > after_line and needle.search(buf[:keep]):
            yield Hit(line_no + 1, offset, decode(buf[:keep]))


class ResilientScanner:
    """ripgrep where it can answer and pays off; the Python scanner where it cannot (said in `notes`)
    and for small files, where starting a process costs more than the scan (bench/scale.py)."""

    def __init__(self, rg: str | None, line_bytes: int = MAX_LINE, small_bytes: int = SMALL_FILE) -> None:
        self.rg = RipgrepScanner(rg, line_bytes) if rg else None
        self.python = PythonScanner(line_bytes)
        self.small_bytes = small_bytes

    def scan(
        self, fh: BinaryIO, keywords: Sequence[str], notes: list[str], after_line: int = 0, from_offset: int = 0
    ) -> Iterator[Hit]:
        small = os.fstat(fh.fileno()).st_size - from_offset <= self.small_bytes
        if self.rg is None or small or line_terminator(fh) != b"\n":
            yield from self.python.scan(fh, keywords, notes, after_line, from_offset)
            return
        try:
            for hit in self.rg.scan(fh, keywords, notes, after_line, from_offset):
                yield hit
                after_line, from_offset = hit.line_no, hit.offset  # where to resume if rg fails
            return
        except (ScanFailed, OSError) as exc:  # OSError: rg could not even start (ENOSPC for its keyword file, EMFILE)
            notes.append(f"ripgrep failed ({exc}); the Python scanner read on from line {after_line + 1}")
        yield from self.python.scan(fh, keywords, notes, after_line, from_offset)


def default_scanner(line_bytes: int = MAX_LINE) -> Scanner:
    return ResilientScanner(find_rg(), line_bytes)
