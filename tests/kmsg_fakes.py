"""A kernel ring buffer in memory, as /dev/kmsg shows it to one reader, and an output whose disk fills up."""

from __future__ import annotations

import errno

from slurm_hooks.collect.kmsg_output import OutputFile


class FakeKmsg:
    """Records `prio,seq,usec,-;text`, the oldest overwritten past `capacity`; reading past an
    overwritten record raises BrokenPipeError once and goes on at the oldest left, as the kernel does."""

    def __init__(self, booted_at: float, boot_id: str = "boot-1", capacity: int = 10_000) -> None:
        self.records: list[tuple[int, bytes]] = []
        self.boot, self.booted, self.capacity = boot_id, booted_at, capacity
        self.next_seq, self.pos, self.waits = 0, 0, 0
        self.errors: list[OSError] = []  # raised by the next reads, in order

    def log(self, text: bytes | str, usec: int = 1_000_000, raw: bytes | None = None) -> int:
        """A record (or exactly `raw` as the bytes of one read); returns its sequence number."""
        seq = self.next_seq
        body = text.encode() if isinstance(text, str) else text
        self.records.append((seq, raw if raw is not None else b"6,%d,%d,-;%s\n SUBSYSTEM=x\n" % (seq, usec, body)))
        self.next_seq += 1
        del self.records[: max(0, len(self.records) - self.capacity)]
        return seq

    def reopen(self) -> FakeKmsg:
        """A new reader of the same ring (a restarted collector): it starts at the oldest record."""
        self.pos = self.records[0][0] if self.records else self.next_seq
        return self

    def read(self) -> bytes | None:
        if self.errors:
            raise self.errors.pop(0)
        if not self.records or self.pos >= self.next_seq:
            return None
        first = self.records[0][0]
        if self.pos < first:
            self.pos = first
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        raw = self.records[self.pos - first][1]
        self.pos += 1
        return raw

    def wait(self, timeout_s: float) -> None:
        self.waits += 1

    def boot_id(self) -> str:
        return self.boot

    def booted_at(self) -> float:
        return self.booted


class FillingDisk(OutputFile):
    """The real output file on a disk that can be full: while `full`, every write fails with ENOSPC."""

    full = False

    def append(self, data: bytes) -> tuple[int, int]:
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return super().append(data)
