"""This node's kernel messages in the job's time window: the journal if the node keeps one, else /dev/kmsg;
where the config names a file of this node's kernel lines (`kernel_log_file`), that file alone."""

from __future__ import annotations

import errno
import os
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import BinaryIO, Protocol

from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.core.safeio import open_regular
from slurm_hooks.core.times import parse_iso

MAX_BYTES = 16 << 20  # a kernel window beyond this is a storm; its start is what matters
# bytes read per Epilog: of kernel_log_file and FILE.1 (the newest; kmsg-follow keeps 2 x 8 MiB),
# of /dev/kmsg (a ring buffer of at most 32 MiB)
READ_MAX = 64 << 20
LINE_MAX = 16 << 10  # a journal line is one kernel record (kmsg_record.MAX_TEXT); longer is not one


@dataclass(frozen=True)
class KernelWindow:
    """Kernel lines are node-wide: a wide margin before the start takes in the previous job's
    crash; after the end, the teardown of this job still prints."""

    before: timedelta = timedelta(seconds=2)
    after: timedelta = timedelta(seconds=10)


WINDOW = KernelWindow()  # the one setting; README "Multi-node jobs" quotes it


class KernelLog(Protocol):
    def read(self, start: datetime, end: datetime, boot: datetime | None) -> tuple[str | None, str]:
        """(the lines of [start - before, end + after], where they came from); None: no source."""
        ...


class HostKernelLog:
    """The kernel this hook runs on: `journalctl -k` first, then the /dev/kmsg ring buffer."""

    def __init__(self, timeout_s: float, kmsg: str = "/dev/kmsg") -> None:
        self.timeout_s = timeout_s
        self.kmsg = kmsg

    def read(self, start: datetime, end: datetime, boot: datetime | None) -> tuple[str | None, str]:
        text = from_journal(start, end, self.timeout_s)
        if text is not None:
            return text, "journal"
        if boot is None:
            return None, "none (no journal; no boot time to place /dev/kmsg records)"
        if (text := from_kmsg(start, end, boot, self.kmsg)) is not None:
            return text, "/dev/kmsg"
        return None, f"none (no journal; {self.kmsg} unreadable)"


class FileKernelLog:
    """A file of `journalctl -k -o short-iso-precise` lines for this node alone: `slurm-hooks
    kmsg-follow`'s (which rotates it to FILE.1, read first), a log forwarder's copy, or the dev
    cluster's stand-in where several nodes share one kernel ring buffer.

    Whoever can write its directory can put anything at either name: each is opened without
    following a link, without blocking, and read only if it is a regular file (a FIFO or a link to
    /dev/zero is refused, said in the source); at most READ_MAX bytes of the two, the newest (the
    job just ended), in lines of at most LINE_MAX bytes (a longer one is no journal line: dropped)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self, start: datetime, end: datetime, boot: datetime | None) -> tuple[str | None, str]:
        opened: list[tuple[str, BinaryIO]] = []
        try:
            for path in (self.path, self.path + ".1"):  # newest first: it gets the read budget first
                try:
                    opened.append((path, open_regular(path)))
                except FileNotFoundError:
                    pass  # FILE alone may be missing (just rotated), or FILE.1 (never rotated)
                except OSError as exc:
                    return None, f"none ({path}: {exc.strerror or exc})"
            if not opened:
                return None, f"none ({self.path}: No such file or directory)"
            spans, left = [], READ_MAX  # (file, from, to): each file's newest bytes, FILE's first
            for _, fh in opened:
                size = os.fstat(fh.fileno()).st_size
                spans.append((fh, max(0, size - left), size))
                left -= size - spans[-1][1]
            kept: list[str] = []
            for fh, at, to in reversed(spans):  # FILE.1's lines before FILE's
                _window_lines(fh, at, to, start - WINDOW.before, end + WINDOW.after, kept)
        except OSError as exc:
            return None, f"none ({self.path}: {exc.strerror or exc})"
        finally:
            for _, fh in opened:
                fh.close()
        return "".join(kept), self.path


def _window_lines(fh: BinaryIO, at: int, to: int, lo: datetime, hi: datetime, kept: list[str]) -> None:
    """Lines stamped in [lo, hi] of bytes [at, to) of `fh` (a regular file) onto `kept`; a line
    begun before `at` is not one (what was appended after `to` is the next Epilog's)."""
    whole = at == 0 or os.pread(fh.fileno(), 1, at - 1) == b"\n"
    fh.seek(at)
    left, held = to - at, sum(map(len, kept))
    while left > 0 and held < MAX_BYTES:
        raw = fh.readline(min(LINE_MAX, left))
        if not raw:
            break
        left -= len(raw)
        if not whole:  # the share began inside a line: that part is no line
            whole = raw.endswith(b"\n")
            continue
        if not raw.endswith(b"\n") and left > 0:  # longer than LINE_MAX: skip to its end
            while left > 0 and (rest := fh.readline(min(LINE_MAX, left))):
                left -= len(rest)
                if rest.endswith(b"\n"):
                    break
            continue
        line = raw.decode("utf-8", errors="replace")
        stamp = parse_iso(line.split(" ", 1)[0])
        if stamp is not None and lo <= stamp <= hi:
            kept.append(line if line.endswith("\n") else line + "\n")
            held += len(line)


def kernel_log_for(kernel_log_file: str, timeout_s: float) -> KernelLog:
    """The configured file where the config names one, else the kernel this hook runs on."""
    return FileKernelLog(kernel_log_file) if kernel_log_file else HostKernelLog(timeout_s)


def from_journal(start: datetime, end: datetime, timeout_s: float) -> str | None:
    argv = [
        "journalctl",
        "-k",
        "-q",
        "--no-pager",
        "-o",
        "short-iso-precise",
        "--since",
        f"@{int((start - WINDOW.before).timestamp())}",
        "--until",
        f"@{int((end + WINDOW.after).timestamp())}",
    ]
    try:
        out = run_bounded(argv, timeout_s, env=TOOL_ENV)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout[:MAX_BYTES].decode(errors="replace")
    return text if out.returncode == 0 and text.strip() else None


def from_kmsg(start: datetime, end: datetime, boot: datetime, path: str = "/dev/kmsg") -> str | None:
    """The ring buffer as raw `[seconds] message` lines (boot time in the node facts converts them)."""
    lo = (start - WINDOW.before - boot).total_seconds()
    hi = (end + WINDOW.after - boot).total_seconds()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    lines: list[str] = []
    size = 0
    try:
        read = 0
        while size < MAX_BYTES and read < READ_MAX:  # a device that never ends is no ring buffer
            try:
                record = os.read(fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while reading: go on with the next record
                    continue
                break  # EAGAIN: the end of the buffer
            if not record:
                break
            read += len(record)
            head, _, message = record.decode(errors="replace").partition(";")
            fields = head.split(",")
            if len(fields) < 3 or not fields[2].isdigit():
                continue
            seconds = int(fields[2]) / 1e6
            if lo <= seconds <= hi:
                line = f"[{seconds:12.6f}] {message.splitlines()[0] if message else ''}\n"
                lines.append(line)
                size += len(line)
    finally:
        os.close(fd)
    return "".join(lines)
