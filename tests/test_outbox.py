"""The outbox: entries validated into typed records, what fails is quarantined, reservations for a full disk."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from slurm_hooks.deliver.outbox import RESERVATION_TTL_S, InvalidEntry, Outbox, OutboxEntry, Reservation, parse_entry

RECORD = "slurm-hooks/v1 label=success"
GOOD = {"job_id": "12", "field": "admin_comment", "record": RECORD, "queued_at": 1.7e9}


def test_a_good_entry_is_typed() -> None:
    assert parse_entry("12.json", json.dumps(GOOD).encode()) == OutboxEntry("12", "admin_comment", RECORD, 1.7e9)
    reserved = json.dumps({"job_id": "12", "reserved_at": 5}).encode().ljust(2048)
    assert parse_entry("12.json", reserved) == Reservation("12", 5.0)


@pytest.mark.parametrize(
    ("name", "doc"),
    [
        ("12.json", {**GOOD, "field": "bogus"}),
        ("12.json", {**GOOD, "queued_at": "yesterday"}),
        ("12.json", {**GOOD, "queued_at": None}),
        ("12.json", {**GOOD, "queued_at": True}),
        ("12.json", {**GOOD, "queued_at": float("nan")}),
        ("12.json", {**GOOD, "record": "label=success"}),  # not ours
        ("12.json", {**GOOD, "record": RECORD + "|x"}),
        ("12.json", {**GOOD, "record": RECORD + "\nnext"}),
        ("12.json", {**GOOD, "record": ["list"]}),
        ("12.json", {**GOOD, "job_id": "13"}),  # does not match the file name
        ("12.json", {**GOOD, "extra": 1}),
        ("1,2,3.json", {**GOOD, "job_id": "1,2,3"}),
        ("12.json", [GOOD]),
    ],
)
def test_bad_entries_are_refused(name: str, doc: object) -> None:
    with pytest.raises(InvalidEntry):
        parse_entry(name, json.dumps(doc).encode())


def test_deep_nesting_and_garbage_are_refused_not_raised() -> None:
    for raw in (b"[" * 200_000, b"{half a fi", b"\xff\xfe", b"x" * (1 << 17)):
        with pytest.raises(InvalidEntry):
            parse_entry("12.json", raw)


def _outbox(tmp_path: Path) -> tuple[Outbox, Path]:
    outbox = Outbox(tmp_path)
    outbox.reserve("1", time.time())
    outbox.release("1")  # creates outbox/
    return outbox, tmp_path / "outbox"


def test_pending_quarantines_what_fails_and_keeps_the_rest_in_order(tmp_path: Path) -> None:
    outbox, folder = _outbox(tmp_path)
    outbox.put(OutboxEntry("30", "admin_comment", RECORD, 300.0))
    outbox.put(OutboxEntry("20", "comment", RECORD, 200.0))
    (folder / "8.json").write_text(json.dumps({**GOOD, "job_id": "8", "field": "bogus"}))
    (folder / "9.json").write_text("[" * 100_000)
    (folder / "10.json").symlink_to(tmp_path / "nowhere")  # dangling
    (folder / "11.json").symlink_to(folder / "30.json")  # a link to a good entry is still a link
    (folder / "1,2,3.json").write_text(json.dumps({**GOOD, "job_id": "1,2,3"}))
    backlog = outbox.pending(time.time())
    assert [e.job_id for e in backlog.entries] == ["20", "30"]
    assert sorted(name for name, _ in backlog.quarantined) == ["1,2,3.json", "10.json", "11.json", "8.json", "9.json"]
    kept = sorted(p.name.rsplit(".", 1)[0] for p in (folder / "quarantine").iterdir())
    assert kept == ["1,2,3.json", "10.json", "11.json", "8.json", "9.json"]
    assert outbox.pending(time.time()).quarantined == []  # moved once, never retried


def test_reservations_are_skipped_until_stale(tmp_path: Path) -> None:
    outbox, folder = _outbox(tmp_path)
    now = time.time()
    outbox.reserve("5", now)
    assert outbox.pending(now).entries == [] and (folder / "5.json").exists()
    assert outbox.pending(now + RESERVATION_TTL_S + 1).quarantined == [
        ("5.json", "reserved but never filled (its hook died)")
    ]


def test_release_drops_a_reservation_but_never_a_queued_entry(tmp_path: Path) -> None:
    outbox, folder = _outbox(tmp_path)
    outbox.put(OutboxEntry("6", "admin_comment", RECORD, 1.0))
    outbox.release("6")
    assert (folder / "6.json").exists()


def test_remove_leaves_a_newer_entry_for_the_same_job(tmp_path: Path) -> None:
    outbox, folder = _outbox(tmp_path)
    old, new = OutboxEntry("6", "admin_comment", RECORD, 1.0), OutboxEntry("6", "admin_comment", RECORD, 2.0)
    outbox.put(new)
    outbox.remove(old)
    assert [e.queued_at for e in outbox.pending(time.time()).entries] == [2.0]
    outbox.remove(new)
    outbox.remove(new)  # a second flusher removing it too is harmless
    assert not (folder / "6.json").exists()


def test_a_symlinked_outbox_dir_is_refused(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "outbox").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        Outbox(tmp_path).put(OutboxEntry("6", "admin_comment", RECORD, 1.0))
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tiny tmpfs (a disk that fills up) needs root")
def test_on_a_full_disk_the_reservation_takes_the_record(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], check=True)
    try:
        outbox = Outbox(disk)
        outbox.reserve("77", time.time())
        with pytest.raises(OSError), open(disk / "bundle", "wb") as fill:  # the bundle fills the disk
            fill.write(b"x" * (1 << 20))
        entry = OutboxEntry("77", "admin_comment", RECORD + " node=n1", time.time())
        outbox.put(entry)  # no room for a new file: written into the reservation's blocks
        assert outbox.pending(time.time()).entries == [entry]
        with pytest.raises(OSError):
            outbox.put(OutboxEntry("78", "admin_comment", RECORD, time.time()))  # no reservation: no room
    finally:
        subprocess.run(["umount", str(disk)], check=True)
