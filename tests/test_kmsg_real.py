"""kmsg-follow on real parts: this machine's /dev/kmsg, and a tmpfs that really fills up.

Each test skips, saying why, where this machine does not allow it (a container without
CAP_SYSLOG or without the device; no CAP_SYS_ADMIN to mount); test_kmsg_follow.py covers the
same behaviour with a fake ring buffer and an injected ENOSPC everywhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from slurm_hooks.collect.kernel import FileKernelLog
from slurm_hooks.collect.kmsg_device import DevKmsg
from slurm_hooks.collect.kmsg_follow import Follower
from slurm_hooks.collect.kmsg_output import OutputFile
from slurm_hooks.core.times import parse_iso
from tests.epilog_fakes import RecordingLog
from tests.kmsg_fakes import FakeKmsg


def real_kmsg() -> DevKmsg:
    try:
        return DevKmsg()
    except OSError as exc:
        pytest.skip(f"/dev/kmsg is not readable here ({exc.strerror}); the fake ring buffer covers it")


def copy(device: DevKmsg | FakeKmsg, out: Path, log: RecordingLog | None = None) -> Follower:
    f = Follower(device, OutputFile(str(out)), f"{out}.state", "here", 8 << 20, log or RecordingLog())
    while f.step():
        pass
    return f


def test_this_machines_ring_buffer_is_copied_once_with_wall_times_since_boot(tmp_path: Path) -> None:
    out, device = tmp_path / "kernel.log", real_kmsg()
    try:
        first = copy(device, out)
    finally:
        device.close()
    stamps = [parse_iso(line.split(" ", 1)[0]) for line in out.read_text().splitlines()]
    boot = datetime.fromtimestamp(first.device.booted_at(), timezone.utc)
    assert stamps and first.state.written == len(stamps) and first.state.seq >= 0
    # booted_at is sampled per batch and moves by microseconds as NTP slews the wall clock
    assert all(s is not None and boot - timedelta(seconds=1) <= s <= datetime.now(timezone.utc) for s in stamps)
    before = out.read_bytes()
    again = DevKmsg()  # a restart: the ring is read from its start again
    try:
        second = copy(again, out)
    finally:
        again.close()
    assert out.read_bytes()[: len(before)] == before and second.state.seq >= first.state.seq
    assert second.state.written - first.state.written == len(out.read_bytes().splitlines()) - len(stamps)


def test_a_line_written_to_the_kernel_reaches_the_epilogs_window(tmp_path: Path) -> None:
    out, device = tmp_path / "kernel.log", real_kmsg()
    marker = f"slurm-hooks test marker {uuid.uuid4()}"
    try:
        copy(device, out)
        try:
            with open("/dev/kmsg", "w") as kmsg:
                kmsg.write(f"{marker}\n")
        except OSError as exc:
            pytest.skip(f"/dev/kmsg is not writable here ({exc.strerror}): no line of our own to look for")
        written = datetime.now(timezone.utc)
        deadline = time.monotonic() + 5
        while marker not in out.read_text() and time.monotonic() < deadline:
            device.wait(0.5)
            copy(device, out)
    finally:
        device.close()
    text, _ = FileKernelLog(str(out)).read(written, written, None)
    found = [line for line in (text or "").splitlines() if line.endswith(marker)]
    assert len(found) == 1, out.read_text()[-2000:]
    stamp = parse_iso(found[0].split(" ", 1)[0])
    assert stamp is not None and abs((stamp - written).total_seconds()) < 1.0  # usec -> wall time is right


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.decode().strip()}); FillingDisk covers it")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_really_full_disk_leaves_the_file_whole_and_writing_resumes(tiny_disk: Path) -> None:
    out, kmsg, log = tiny_disk / "kernel.log", FakeKmsg(time.time()), RecordingLog()
    kmsg.log("before the disk filled")
    f = copy(kmsg, out, log)
    filler = tiny_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while os.write(fd, b"x" * 512):
            pass
    except OSError:
        pass  # ENOSPC: the disk is full
    finally:
        os.close(fd)
    before = out.read_bytes()
    for i in range(40):  # more than the last free bytes: a write ends part way, then ENOSPC
        kmsg.log(f"while full {i} " + "y" * 100)
    while f.step():
        pass
    assert out.read_bytes() == before and f.state.dropped == 40
    os.unlink(filler)
    kmsg.log("after space came back")
    while f.step():
        pass
    assert out.read_text().splitlines()[-1].endswith("kernel: after space came back")
    assert log.events("error") == ["kmsg_output_failed"]


def test_the_command_runs_until_sigterm_and_says_what_it_did(tmp_path: Path) -> None:
    real_kmsg().close()
    out, log = tmp_path / "kmsg" / "kernel.log", tmp_path / "follow.log"
    argv = [sys.executable, "-m", "slurm_hooks", "kmsg-follow", "--output", str(out), "--log-file", str(log)]
    proc = subprocess.Popen([*argv, "--host", "n1"])
    deadline = time.monotonic() + 10
    while not (out.exists() and out.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    events = [json.loads(line)["event"] for line in log.read_text().splitlines()]
    assert events[0] == "kmsg_follow_start" and events[-1] == "kmsg_follow_stop"
    assert out.read_text().splitlines()[0].split(" ")[1:3] == ["n1", "kernel:"]


def test_the_command_without_a_readable_device_says_why_and_exits_2(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "slurm_hooks", "kmsg-follow", "--output", str(tmp_path / "k.log")]
    done = subprocess.run([*argv, "--kmsg", str(tmp_path / "absent")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "No such file or directory" in done.stderr and "CAP_SYSLOG" in done.stderr
