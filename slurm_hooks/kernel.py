"""This node's kernel messages in the job's time window: the journal if the node keeps one, else /dev/kmsg."""

from __future__ import annotations

import errno
import os
import subprocess
from datetime import datetime, timedelta

from slurm_hooks.proc import TOOL_ENV, run_bounded

MAX_BYTES = 16 << 20  # a kernel window beyond this is a storm; its start is what matters
# Kernel lines are node-wide: a wide window before the start takes in the previous job's crash;
# after the end, the teardown of this job still prints.
BEFORE = timedelta(seconds=2)
AFTER = timedelta(seconds=10)


def from_journal(start: datetime, end: datetime, timeout_s: float) -> str | None:
    argv = ["journalctl", "-k", "-q", "--no-pager", "-o", "short-iso-precise",
            "--since", f"@{int((start - BEFORE).timestamp())}", "--until", f"@{int((end + AFTER).timestamp())}"]
    try:
        out = run_bounded(argv, timeout_s, env=TOOL_ENV)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = out.stdout[:MAX_BYTES].decode(errors="replace")
    return text if out.returncode == 0 and text.strip() else None


def from_kmsg(start: datetime, end: datetime, boot: datetime, path: str = "/dev/kmsg") -> str | None:
    """The ring buffer as raw `[seconds] message` lines (boot time in the node facts converts them)."""
    lo = (start - BEFORE - boot).total_seconds()
    hi = (end + AFTER - boot).total_seconds()
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
