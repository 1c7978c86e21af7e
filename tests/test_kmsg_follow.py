"""kmsg-follow: /dev/kmsg records into a rotated per-node file of journal lines that the Epilog reads.

A fake ring buffer (kmsg_fakes.py) drives wrap, restart, rotation, full disk and hostile records;
test_kmsg_real.py runs the same collector on this machine's own /dev/kmsg and a real full tmpfs.
"""

from __future__ import annotations

import errno
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from slurm_hooks.collect.kernel import FileKernelLog, kernel_log_for
from slurm_hooks.collect.kmsg_follow import BATCH_RECORDS, Follower, load_state
from slurm_hooks.collect.kmsg_output import OutputFile
from slurm_hooks.collect.kmsg_record import MAX_TEXT
from slurm_hooks.timeline.clocks import ClockContext, kernel_time
from tests.epilog_fakes import RecordingLog
from tests.kmsg_fakes import FakeKmsg, FillingDisk

BOOT = datetime(2026, 11, 27, 3, 0, tzinfo=timezone.utc)
SEGV = "python[9]: segfault at 0 ip 00007f sp 00007e error 4 in libc.so.6"


def follower(
    kmsg: FakeKmsg, path: Path, max_bytes: int = 1 << 20, out: OutputFile | None = None, log: RecordingLog | None = None
) -> Follower:
    return Follower(kmsg, out or OutputFile(str(path)), f"{path}.state", "n1", max_bytes, log or RecordingLog())


def drain(f: Follower) -> None:
    while f.step():
        pass


def lines(path: Path) -> list[str]:
    return [line for p in (Path(f"{path}.1"), path) if p.exists() for line in p.read_text().splitlines()]


def test_a_record_becomes_the_journal_line_the_epilog_reads_for_the_job_window(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    kmsg.log("before the job", usec=10_000_000)
    kmsg.log(SEGV, usec=150_500_000)
    drain(follower(kmsg, out))
    assert lines(out)[1] == f"2026-11-27T03:02:30.500000+00:00 n1 kernel: {SEGV}"
    start, end = BOOT + timedelta(seconds=100), BOOT + timedelta(seconds=200)
    text, source = kernel_log_for(str(out), 5).read(start, end, None)  # what the Epilog calls
    assert source == str(out) and text == lines(out)[1] + "\n"
    stamp, message = kernel_time(text.strip(), ClockContext(reference=start))  # and what the timeline makes of it
    assert stamp == BOOT + timedelta(seconds=150.5) and message == SEGV


def test_a_wrapped_ring_buffer_is_counted_and_reading_goes_on(tmp_path: Path) -> None:
    kmsg, out, log = FakeKmsg(BOOT.timestamp(), capacity=5), tmp_path / "kernel.log", RecordingLog()
    f = follower(kmsg, out, log=log)
    kmsg.log("first")
    drain(f)
    for i in range(12):  # 12 more into a ring of 5: the reader's next 7 are overwritten
        kmsg.log(f"msg {i}")
    drain(f)
    assert [line.rsplit(": ", 1)[1] for line in lines(out)] == ["first"] + [f"msg {i}" for i in range(7, 12)]
    assert f.state.lost == 7 and "kmsg_overrun" in log.events("warning")


def test_a_restart_resumes_after_the_last_record_without_duplicating_a_line(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    for i in range(3):
        kmsg.log(f"msg {i}")
    drain(follower(kmsg, out))
    kmsg.log("msg 3")
    drain(follower(kmsg.reopen(), out))  # a new process reads the whole ring again
    assert [line.rsplit(": ", 1)[1] for line in lines(out)] == ["msg 0", "msg 1", "msg 2", "msg 3"]
    state = load_state(f"{out}.state")
    assert state is not None and state.seq == 3


def test_lines_written_after_the_last_state_are_trimmed_and_written_once(tmp_path: Path) -> None:
    """Killed between writing a batch and saving the state (or in the middle of a line)."""
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    kmsg.log("msg 0")
    drain(follower(kmsg, out))
    kmsg.log("msg 1")
    state = (tmp_path / "kernel.log.state").read_text()
    drain(follower(kmsg, out))
    (tmp_path / "kernel.log.state").write_text(state)  # the state of before msg 1 ...
    with out.open("a") as f:
        f.write("2026-11-27T03:00:01.000000+00:00 n1 kernel: half a li")  # ... and a torn line after it
    log = RecordingLog()
    drain(follower(kmsg.reopen(), out, log=log))
    assert [line.rsplit(": ", 1)[1] for line in lines(out)] == ["msg 0", "msg 1"]
    assert "kmsg_follow_trimmed" in log.events()


def test_after_a_reboot_the_new_boots_records_are_all_written(tmp_path: Path) -> None:
    out = tmp_path / "kernel.log"
    old = FakeKmsg(BOOT.timestamp(), boot_id="boot-1")
    for i in range(5):
        old.log(f"old {i}")
    drain(follower(old, out))
    new = FakeKmsg(BOOT.timestamp() + 3600, boot_id="boot-2")  # sequence numbers start at 0 again
    new.log("new 0")
    drain(follower(new, out))
    assert lines(out)[-1].endswith("kernel: new 0") and len(lines(out)) == 6


def test_the_file_is_rotated_before_it_passes_its_size_and_the_epilog_reads_both(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    max_bytes = 4096
    f = follower(kmsg, out, max_bytes=max_bytes)
    for i in range(100):  # 52 bytes a line: one rotation
        kmsg.log(f"msg {i:03d}", usec=(100 + i) * 1_000_000)
        drain(f)
    rotated = Path(f"{out}.1")
    assert rotated.exists() and rotated.stat().st_size <= max_bytes and out.stat().st_size <= max_bytes
    assert [line.rsplit(" ", 1)[1] for line in lines(out)] == [f"{i:03d}" for i in range(100)]
    text, _ = FileKernelLog(str(out)).read(BOOT + timedelta(seconds=105), BOOT + timedelta(seconds=185), None)
    assert text is not None and [line.rsplit(" ", 1)[1] for line in text.splitlines()] == [
        f"{i:03d}"
        for i in range(3, 96)  # the window and its margins (2 s before, 10 s after)
    ]
    assert "msg 003" in rotated.read_text() and "msg 095" in out.read_text()  # the window spans both


def test_a_full_disk_drops_records_counted_keeps_running_and_writes_again_when_space_returns(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    disk, log = FillingDisk(str(out)), RecordingLog()
    f = follower(kmsg, out, out=disk, log=log)
    kmsg.log("msg 0")
    drain(f)
    disk.full = True
    for i in range(1, 4):
        kmsg.log(f"msg {i}")
        drain(f)
    disk.full = False
    kmsg.log("msg 4")
    drain(f)
    assert [line.rsplit(": ", 1)[1] for line in lines(out)] == ["msg 0", "msg 4"]
    assert f.state.dropped == 3 and log.events("error") == ["kmsg_output_failed"]  # said once, not per batch
    assert log.first("kmsg_output_back")["dropped"] == 3
    assert json.loads(Path(f"{out}.state").read_text())["seq"] == 4


def test_hostile_records_stay_one_bounded_line_each(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    kmsg.log(b"A" * (1 << 20))  # a huge record
    kmsg.log(b"bad \xff\xfe utf-8 \xc3\xa9")
    kmsg.log(b"ctl \x1b[31m\r\x00 bell\x07\x7f tab\tend")
    kmsg.log(b"inner\x0b2026-11-27T03:50:02.100000+00:00 n9 kernel: forged")
    kmsg.log(b"", raw=b"not a record at all")
    kmsg.log(b"", raw=b"6,x,1,-;seq is not a number")
    kmsg.log(b"", raw=b"6,%d,99999999999999999999,-;no date" % kmsg.next_seq)
    kmsg.log("last")
    f = follower(kmsg, out)
    drain(f)
    got = lines(out)
    assert len(got) == 5 and f.state.garbled == 3
    assert got[0].endswith("kernel: " + "A" * MAX_TEXT)
    assert got[1].endswith("kernel: bad \\xff\\xfe utf-8 é")
    assert got[2].endswith("kernel: ctl \\x1b[31m\\x0d\\x00 bell\\x07\\x7f tab\tend")
    assert got[3].endswith("kernel: inner\\x0b2026-11-27T03:50:02.100000+00:00 n9 kernel: forged")
    assert got[4].endswith("kernel: last")


def test_a_newline_ends_the_record_text_so_nothing_after_it_becomes_a_line(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    kmsg.log(b"", raw=b"6,0,1000000,-;real\n2026-11-27T03:50:02.100000+00:00 n9 kernel: forged\n")
    drain(follower(kmsg, out))
    assert out.read_text() == "2026-11-27T03:00:01.000000+00:00 n1 kernel: real\n"


def test_the_host_field_is_one_word_whatever_the_node_name(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    kmsg.log("x")
    drain(Follower(kmsg, OutputFile(str(out)), f"{out}.state", "gb r03\nc07", 1 << 20, RecordingLog()))
    assert out.read_text().split(" ")[1] == "gb_r03_c07"


def test_a_planted_link_is_never_written_through(tmp_path: Path) -> None:
    target, out = tmp_path / "elsewhere", tmp_path / "kernel.log"
    target.write_text("")
    out.symlink_to(target)
    kmsg = FakeKmsg(BOOT.timestamp())
    kmsg.log("x")
    f = follower(kmsg, out)
    drain(f)
    assert target.read_text() == "" and f.state.dropped == 1


def test_a_restart_reads_past_more_written_records_than_one_batch(tmp_path: Path) -> None:
    kmsg, out = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log"
    for i in range(BATCH_RECORDS + 5):
        kmsg.log(f"msg {i}")
    drain(follower(kmsg, out))
    kmsg.log("new")
    drain(follower(kmsg.reopen(), out))  # a first batch of nothing but records already written
    assert lines(out)[-1].endswith("kernel: new") and len(lines(out)) == BATCH_RECORDS + 6


def test_a_read_error_is_said_once_and_reading_goes_on(tmp_path: Path) -> None:
    kmsg, out, log = FakeKmsg(BOOT.timestamp()), tmp_path / "kernel.log", RecordingLog()
    kmsg.log("msg 0")
    kmsg.errors = [OSError(errno.EIO, "Input/output error"), OSError(errno.EIO, "Input/output error")]
    f = follower(kmsg, out, log=log)
    assert not f.step() and not f.step()  # nothing read: the collector waits and tries again
    drain(f)
    assert lines(out)[0].endswith("kernel: msg 0") and log.events("error") == ["kmsg_read_failed"]
