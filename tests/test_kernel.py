"""Kernel lines of the job's window: the journal when there is one, else /dev/kmsg records."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from slurm_hooks.collect.kernel import WINDOW, FileKernelLog, HostKernelLog, from_kmsg, kernel_log_for

BOOT = datetime(2026, 11, 27, 3, 0, tzinfo=timezone.utc)
START, END = BOOT + timedelta(seconds=100), BOOT + timedelta(seconds=200)


def _kmsg(tmp_path: Path, seconds: float, message: str = "python[9]: segfault at 0 ip 0") -> str:
    path = tmp_path / f"kmsg-{seconds}"
    path.write_text(f"6,1234,{int(seconds * 1e6)},-;{message}\n SUBSYSTEM=x\n")  # one record, as /dev/kmsg reads
    return str(path)


def test_a_record_inside_the_window_becomes_a_raw_dmesg_line(tmp_path: Path) -> None:
    assert from_kmsg(START, END, BOOT, _kmsg(tmp_path, 150.5)) == "[  150.500000] python[9]: segfault at 0 ip 0\n"


def test_the_window_has_its_margins_and_no_more(tmp_path: Path) -> None:
    lo = 100 - WINDOW.before.total_seconds()
    hi = 200 + WINDOW.after.total_seconds()
    assert from_kmsg(START, END, BOOT, _kmsg(tmp_path, lo)) != ""
    assert from_kmsg(START, END, BOOT, _kmsg(tmp_path, hi)) != ""
    assert from_kmsg(START, END, BOOT, _kmsg(tmp_path, lo - 0.1)) == ""
    assert from_kmsg(START, END, BOOT, _kmsg(tmp_path, hi + 0.1)) == ""


def test_garbage_records_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "kmsg"
    path.write_text("not a record at all\n")
    assert from_kmsg(START, END, BOOT, str(path)) == ""


def test_no_source_at_all_is_said(tmp_path: Path) -> None:
    """No journal for this window here (or no journalctl), no readable kmsg, or no boot time."""
    log = HostKernelLog(timeout_s=5, kmsg=str(tmp_path / "missing"))
    old = datetime(2001, 1, 1, tzinfo=timezone.utc)  # a window no journal on this machine holds
    assert log.read(old, old, BOOT) == (None, f"none (no journal; {tmp_path / 'missing'} unreadable)")
    assert log.read(old, old, None) == (None, "none (no journal; no boot time to place /dev/kmsg records)")


def test_kmsg_is_the_fallback(tmp_path: Path) -> None:
    old_boot = datetime(2001, 1, 1, tzinfo=timezone.utc)
    log = HostKernelLog(timeout_s=5, kmsg=_kmsg(tmp_path, 150))
    text, source = log.read(old_boot + timedelta(seconds=100), old_boot + timedelta(seconds=200), old_boot)
    assert source == "/dev/kmsg" and text is not None and "segfault" in text


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="microseconds")


def test_a_configured_file_gives_only_the_lines_stamped_in_the_window(tmp_path: Path) -> None:
    path = tmp_path / "node3.log"
    inside, after = START + timedelta(seconds=50), END + WINDOW.after - timedelta(seconds=1)
    path.write_text(
        f"{_stamp(START - WINDOW.before - timedelta(seconds=1))} node3 kernel: python3[1]: segfault at 0 ip 1\n"
        f"{_stamp(inside)} node3 kernel: python3[2]: segfault at 0 ip 1\n"
        "no stamp at all: dropped\n"
        f"{_stamp(after)} node3 kernel: teardown"  # no final newline
    )
    assert FileKernelLog(str(path)).read(START, END, None) == (
        f"{_stamp(inside)} node3 kernel: python3[2]: segfault at 0 ip 1\n{_stamp(after)} node3 kernel: teardown\n",
        str(path),
    )


def test_a_configured_file_is_the_only_source_even_when_it_is_missing(tmp_path: Path) -> None:
    log = kernel_log_for(str(tmp_path / "absent.log"), 5)
    text, source = log.read(START, END, BOOT)
    assert text is None and "absent.log" in source
    assert isinstance(kernel_log_for("", 5), HostKernelLog)
