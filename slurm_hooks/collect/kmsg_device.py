"""The kernel's /dev/kmsg as kmsg-follow reads it, behind one small Protocol (tests feed a fake stream).

One read() of /dev/kmsg returns one record, `prio,seq,usec,flags;text\\n` and ` KEY=value` lines;
EPIPE means the ring buffer overwrote records this reader had not read yet (the kernel then moves
the reader to the oldest record left); EAGAIN (non-blocking) means no new record yet.
"""

from __future__ import annotations

import os
import select
import time
from typing import Protocol

RECORD_MAX = 16384  # a read with a buffer shorter than the record fails with EINVAL; printk caps it at 8 KiB
BOOT_ID = "/proc/sys/kernel/random/boot_id"


class KmsgDevice(Protocol):
    def read(self) -> bytes | None:
        """One record; None when there is none yet. BrokenPipeError: records were overwritten unread."""
        ...

    def wait(self, timeout_s: float) -> None:
        """Until a record may be there, or `timeout_s`."""
        ...

    def boot_id(self) -> str:
        """This boot's id: sequence numbers start again at 0 on every boot."""
        ...

    def booted_at(self) -> float:
        """Wall-clock seconds since the epoch at which the record clock (usec) was 0."""
        ...


class DevKmsg:
    """The real /dev/kmsg (reading it needs CAP_SYSLOG where kernel.dmesg_restrict=1)."""

    def __init__(self, path: str = "/dev/kmsg") -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)

    def read(self) -> bytes | None:
        try:
            return os.read(self.fd, RECORD_MAX)
        except BlockingIOError:
            return None

    def wait(self, timeout_s: float) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        poller.poll(timeout_s * 1000)

    def boot_id(self) -> str:
        try:
            with open(BOOT_ID, encoding="ascii") as f:
                return f.read(64).strip()
        except OSError:
            return ""  # then a restart cannot tell a reboot apart: it starts over (duplicates, never gaps)

    def booted_at(self) -> float:
        # The record stamp is the kernel's local_clock(), which, like CLOCK_MONOTONIC, does not run
        # in suspend. REALTIME - MONOTONIC, sampled now, has microseconds and follows NTP steps;
        # /proc/stat's btime is the same difference cut to whole seconds (a second off against
        # the job window's 2 s margin).
        return time.clock_gettime(time.CLOCK_REALTIME) - time.clock_gettime(time.CLOCK_MONOTONIC)

    def close(self) -> None:
        os.close(self.fd)
