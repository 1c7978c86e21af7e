"""This node's kernel messages in the job's time window: the journal if the node keeps one, else /dev/kmsg;
where the config names a file of this node's kernel lines (`kernel_log_file`), that file alone."""

from __future__ import annotations

import errno
import os
import subprocess
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.core.times import parse_iso

MAX_BYTES = 16 << 20  # a kernel window beyond this is a storm; its start is what matters


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
    cluster's stand-in where several nodes share one kernel ring buffer."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self, start: datetime, end: datetime, boot: datetime | None) -> tuple[str | None, str]:
        lo, hi = start - WINDOW.before, end + WINDOW.after
        kept: list[str] = []
        size, rotated = 0, False
        for path in (self.path + ".1", self.path):
            try:
                with open(path, encoding="utf-8", errors="replace") as lines:
                    rotated = rotated or path != self.path
                    for line in lines:
                        stamp = parse_iso(line.split(" ", 1)[0])
                        if stamp is not None and lo <= stamp <= hi and size < MAX_BYTES:
                            kept.append(line if line.endswith("\n") else line + "\n")
                            size += len(line)
            except FileNotFoundError:
                if path == self.path and not rotated:  # FILE alone may be missing: just rotated
                    return None, f"none ({self.path}: No such file or directory)"
            except OSError as exc:
                return None, f"none ({path}: {exc.strerror})"
        return "".join(kept), self.path


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
        while size < MAX_BYTES:
            try:
                record = os.read(fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten while reading: go on with the next record
                    continue
                break  # EAGAIN: the end of the buffer
            if not record:
                break
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
