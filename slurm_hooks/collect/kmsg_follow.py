"""`slurm-hooks kmsg-follow`: /dev/kmsg copied into a per-node file the Epilog reads (`kernel_log_file`).

For nodes where the Epilog has no journal and may not read /dev/kmsg (SUNK's slurmd pods): a
node-level collector writes journalctl's `short-iso-precise` lines (kmsg_record.py) into FILE,
rotated to FILE.1 before FILE passes `max_bytes` (kernel.py reads both), so the pair stays
under twice that. FILE.state records the boot, the last record's sequence number and FILE's
inode and size after that record; a restart trims FILE back to that size (lines written after
the last state, by a collector killed in between) and goes on after that sequence number, so no
line is written twice. Records the ring buffer overwrote unread (EPIPE) are counted and skipped;
a write that fails (a full disk) drops its records, counted, leaves FILE as it was, and the next
batch tries again: the collector never exits for a disk.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass

from slurm_hooks.collect.kmsg_device import KmsgDevice
from slurm_hooks.collect.kmsg_output import Output, OutputFile
from slurm_hooks.collect.kmsg_record import format_line, host_token, parse_record
from slurm_hooks.core.hooklog import Log
from slurm_hooks.core.safeio import atomic_write, read_small

BATCH_RECORDS = 2000  # records per write and state update; a storm is written in batches this size


@dataclass
class State:
    boot_id: str = ""
    seq: int = -1  # last record written (or dropped); -1: none yet this boot
    inode: int = 0
    size: int = 0  # FILE's size right after that record's line
    written: int = 0  # counters since this state began (this boot)
    dropped: int = 0  # records not written: the output failed (disk full)
    lost: int = 0  # records the ring buffer overwrote before they were read
    garbled: int = 0  # reads that were no record


def load_state(path: str) -> State | None:
    try:
        doc = json.loads(read_small(path, 4096))
        return State(**{k: v for k, v in doc.items() if k in State.__dataclass_fields__})
    except (OSError, ValueError, TypeError):
        return None


class Follower:
    """One step reads what the kernel has (a batch at most) and writes it; `run` repeats it."""

    def __init__(self, device: KmsgDevice, out: Output, state_path: str, host: str, max_bytes: int, log: Log) -> None:
        self.device, self.out, self.state_path, self.log = device, out, state_path, log
        self.host, self.max_bytes = host_token(host), max_bytes
        self.state = self._resume(load_state(state_path))
        self.failing = False  # the output failed last time: say so once, and once when it is back
        self.read_failing = False

    def _resume(self, saved: State | None) -> State:
        boot = self.device.boot_id()
        if saved is None or not boot or saved.boot_id != boot:
            self.log.info("kmsg_follow_start", boot_id=boot, resumed=False)
            return State(boot_id=boot)
        found = self.out.identity()
        if found and found[0] == saved.inode and found[1] > saved.size:
            self.out.trim(saved.size)  # written after the last state: read again from the kernel below
            self.log.info("kmsg_follow_trimmed", bytes=found[1] - saved.size)
        self.log.info("kmsg_follow_start", boot_id=boot, resumed=True, after_seq=saved.seq)
        return saved

    def _batch(self) -> tuple[list[str], int, bool]:
        """Lines of the records after state.seq, the last sequence number read, and whether the
        kernel may have more right now (the batch ended on its size, not on EAGAIN)."""
        lines: list[str] = []
        seq, booted_at, size = self.state.seq, self.device.booted_at(), 0
        for _ in range(BATCH_RECORDS):  # reads, not records: a device that only fails still yields
            if size >= self.max_bytes // 4:
                return lines, seq, True  # a batch never fills a file alone
            try:
                raw = self.device.read()
            except BrokenPipeError:
                self.log.warning("kmsg_overrun", after_seq=seq)  # the gap is counted at the next record
                continue
            except OSError as exc:  # not seen from a kernel; said once, and the next step tries again
                if not self.read_failing:
                    self.log.error("kmsg_read_failed", error=str(exc))
                self.read_failing = True
                return lines, seq, False
            self.read_failing = False
            if raw is None:
                return lines, seq, False
            record = parse_record(raw)
            if record is None:
                self.state.garbled += 1
                continue
            if record.seq <= seq:
                continue  # written before a restart
            if seq >= 0 and record.seq > seq + 1:
                self.state.lost += record.seq - seq - 1
            seq = record.seq
            if (line := format_line(record, booted_at, self.host)) is None:
                self.state.garbled += 1
                continue
            lines.append(line)
            size += len(line)
        return lines, seq, True

    def step(self) -> bool:
        """False when the kernel has no new record now."""
        lines, seq, more = self._batch()
        if not lines:
            self.state.seq = max(self.state.seq, seq)
            return more
        data = "".join(lines).encode()
        try:
            found = self.out.identity()
            if found and found[1] and found[1] + len(data) > self.max_bytes:
                self.out.rotate()
            inode, size = self.out.append(data)
        except OSError as exc:
            self.state.dropped += len(lines)
            self.state.seq = seq
            if not self.failing:
                self.log.error("kmsg_output_failed", error=str(exc), dropping=True)
            self.failing = True
            return True
        if self.failing:
            self.log.info("kmsg_output_back", dropped=self.state.dropped)
        self.failing = False
        self.state.seq, self.state.inode, self.state.size = seq, inode, size
        self.state.written += len(lines)
        self._save()
        return True

    def _save(self) -> None:
        try:
            atomic_write(self.state_path, json.dumps(asdict(self.state)) + "\n")
        except OSError as exc:
            self.log.warning("kmsg_state_not_saved", error=str(exc))

    def run(self, stopping: list[bool], idle_s: float = 1.0) -> None:
        """Until `stopping[0]` is set (a signal handler sets it)."""
        while not stopping[0]:
            if not self.step():
                self.device.wait(idle_s)
        self.log.info("kmsg_follow_stop", **asdict(self.state))


def main(output: str, max_bytes: int, host: str, kmsg: str, log: Log) -> int:
    """The collector until SIGTERM; 2 if /dev/kmsg cannot be read (a setup error, said on stderr)."""
    import signal
    import sys

    from slurm_hooks.collect.kmsg_device import DevKmsg

    try:
        device = DevKmsg(kmsg)
    except OSError as exc:
        log.error("kmsg_unreadable", path=kmsg, error=exc.strerror or str(exc))
        print(
            f"slurm-hooks kmsg-follow: {kmsg}: {exc.strerror or exc} (reading it needs root with CAP_SYSLOG and"
            " the device: deploy/sunk/kmsg-follow.yaml runs it privileged)",
            file=sys.stderr,
        )
        return 2
    stopping = [False]

    def stop(_signum: int, _frame: object) -> None:
        stopping[0] = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        os.makedirs(os.path.dirname(output) or ".", exist_ok=True)
    except OSError as exc:  # said here; each batch tries the file again
        log.warning("kmsg_output_dir", error=str(exc))
    try:
        Follower(device, OutputFile(output), output + ".state", host, max_bytes, log).run(stopping)
    finally:
        device.close()
    return 0
