"""Delivering the outbox: nothing lost while accounting is down, one bad entry blocks nothing,
concurrent flushers deliver each entry without tripping over each other."""

from __future__ import annotations

import json
import multiprocessing
import threading
import time
from pathlib import Path

from slurm_hooks.core.clock import SystemClock
from slurm_hooks.core.hooklog import HookLog
from slurm_hooks.deliver.annotate import Tally, deliver, deliver_backlog, deliver_waiting
from slurm_hooks.deliver.outbox import Outbox, OutboxEntry
from tests.epilog_fakes import FakeClock, FakeSlurm, RecordingLog


def _queue(outbox: Outbox, *jobs: str, queued_at: float | None = None) -> None:
    for job in jobs:
        outbox.put(
            OutboxEntry(job, "admin_comment", f"slurm-hooks/v1 label=success job={job}", queued_at or time.time())
        )


def test_outbox_keeps_everything_until_accounting_returns(tmp_path: Path) -> None:
    outbox, slurm, log, clock = Outbox(tmp_path), FakeSlurm(), RecordingLog(), FakeClock()
    _queue(outbox, "1", "2", "3")
    slurm.dbd_up = False
    down = deliver_backlog(outbox, slurm, log, clock, budget_s=10, retention_days=30)
    assert (down.delivered, down.pending) == (0, 3) and log.events() == [
        "annotation_queued"
    ]  # stops at the first refusal
    slurm.dbd_up = True
    back = deliver_backlog(outbox, slurm, log, clock, budget_s=10, retention_days=30)
    assert back.delivered == 3 and outbox.pending(clock.time()).entries == []
    assert slurm.accounting["2"][1] == "slurm-hooks/v1 label=success job=2"


def test_old_entries_are_dropped_and_bad_ones_block_nothing(tmp_path: Path) -> None:
    outbox, slurm, log, clock = Outbox(tmp_path), FakeSlurm(), RecordingLog(), FakeClock()
    _queue(outbox, "7", queued_at=clock.time() - 40 * 86400)
    (tmp_path / "outbox/8.json").write_text(
        json.dumps({"job_id": "8", "field": "bogus", "record": "x", "queued_at": None})
    )
    _queue(outbox, "9")
    tally = deliver_backlog(outbox, slurm, log, clock, budget_s=10, retention_days=30)
    assert tally == Tally(delivered=1, dropped=1, quarantined=1)
    assert log.first("outbox_entry_quarantined")["file"] == "8.json" and "annotation_dropped" in log.events("error")
    assert [job for job, _, _ in slurm.sets] == ["9"]


def test_a_job_not_yet_in_accounting_does_not_stop_the_backlog(tmp_path: Path) -> None:
    outbox, slurm, clock = Outbox(tmp_path), FakeSlurm(), FakeClock()
    _queue(outbox, "1")
    _queue(outbox, "2", "3", queued_at=time.time() + 1)
    slurm.not_yet = 1  # the first read, job 1's, finds no record yet
    tally = deliver_backlog(outbox, slurm, RecordingLog(), clock, budget_s=10, retention_days=30)
    assert (tally.delivered, tally.pending) == (2, 1)
    assert [e.job_id for e in outbox.pending(clock.time()).entries] == ["1"]


def test_a_record_another_flusher_delivered_first_is_logged_as_already_there(tmp_path: Path) -> None:
    """The job's own run queues its record before delivering it; a backlog flush from another
    job's run may write it first. The own run then writes nothing, and its log says so."""
    outbox, slurm, clock = Outbox(tmp_path), FakeSlurm(), FakeClock()
    entry = OutboxEntry("5", "admin_comment", "slurm-hooks/v1 label=app_segfault rank=3", time.time())
    outbox.put(entry)
    assert deliver_backlog(outbox, slurm, RecordingLog(), clock, budget_s=10, retention_days=30).delivered == 1
    own, tally = RecordingLog(), Tally()
    assert deliver(entry, slurm, own, tally) == "settled"
    assert own.events() == ["annotation_already_there"] and tally.delivered == 1
    assert [job for job, _, _ in slurm.sets] == ["5"]  # written once


def test_out_of_budget_entries_stay_queued(tmp_path: Path) -> None:
    outbox, slurm, clock = Outbox(tmp_path), FakeSlurm(), FakeClock()
    _queue(outbox, "1", "2")
    tally = deliver_backlog(outbox, slurm, RecordingLog(), clock, budget_s=-1, retention_days=30)
    assert tally == Tally(pending=2) and slurm.sets == []


def test_a_second_backlog_flusher_skips_its_turn(tmp_path: Path) -> None:
    outbox, slurm, clock = Outbox(tmp_path), FakeSlurm(), FakeClock()
    _queue(outbox, "1")
    with outbox.exclusive() as held:
        assert held
        assert deliver_backlog(Outbox(tmp_path), slurm, RecordingLog(), clock, 10, 30) == Tally()
    assert slurm.sets == []


def test_deliver_waiting_retries_only_a_missing_record(tmp_path: Path) -> None:
    slurm, clock = FakeSlurm(), FakeClock()
    entry = OutboxEntry("5", "admin_comment", "slurm-hooks/v1 label=success", 1.0)
    slurm.dbd_up = False
    assert deliver_waiting(entry, slurm, RecordingLog(), clock, wait_s=6) == "unavailable" and clock.sleeps == []
    slurm.dbd_up, slurm.not_yet = True, 2
    assert deliver_waiting(entry, slurm, RecordingLog(), clock, wait_s=6) == "settled" and clock.sleeps == [1.0, 1.0]


def test_concurrent_flushers_in_threads(tmp_path: Path) -> None:
    """Backlog flushers and Epilogs delivering their own job, all at once, on the same entries."""
    outbox, slurm = Outbox(tmp_path), FakeSlurm()
    jobs = [str(n) for n in range(1, 61)]
    _queue(outbox, *jobs)
    entries = {e.job_id: e for e in outbox.pending(time.time()).entries}
    errors: list[BaseException] = []
    log = RecordingLog()

    def flusher() -> None:
        try:
            for _ in range(5):
                deliver_backlog(Outbox(tmp_path), slurm, log, SystemClock(), budget_s=10, retention_days=30)
        except BaseException as exc:
            errors.append(exc)

    def own_job(job: str) -> None:
        try:
            if deliver_waiting(entries[job], slurm, log, SystemClock(), wait_s=0) == "settled":
                Outbox(tmp_path).remove(entries[job])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=flusher) for _ in range(4)]
    threads += [threading.Thread(target=own_job, args=(job,)) for job in jobs[::3]]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and log.events("error") == []
    assert {job for job, _, _ in slurm.sets} == set(jobs) and outbox.pending(time.time()).entries == []
    assert all(slurm.accounting[job][1].endswith(f"job={job}") for job in jobs)


def _flush_in_child(root: str, record_to: str, own: list[OutboxEntry]) -> None:
    class RecordingSlurm(FakeSlurm):
        def set_job_field(self, job_id: str, field: str, value: str) -> None:
            super().set_job_field(job_id, field, value)
            with open(record_to, "a") as out:  # one short append per call: lines never interleave
                out.write(job_id + "\n")

    log = HookLog(str(Path(root) / "hooks.log"), "flush")
    outbox = Outbox(Path(root))
    for _ in range(20):
        deliver_backlog(outbox, RecordingSlurm(), log, SystemClock(), budget_s=10, retention_days=30)
        for entry in own:  # and, unlocked, as an Epilog delivers its own job
            if deliver_waiting(entry, RecordingSlurm(), log, SystemClock(), wait_s=0) == "settled":
                outbox.remove(entry)


def test_concurrent_flush_processes(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path)
    jobs = [str(n) for n in range(1, 201)]
    _queue(outbox, *jobs)
    # 13's own Epilog has gone: only a backlog flush meets its file, which turned bad (were it a
    # child's own, that child could deliver the good copy in memory and remove the file first)
    entries = [e for e in outbox.pending(time.time()).entries if e.job_id != "13"]
    (tmp_path / "outbox/13.json").write_text('{"job_id": "13", "field": "bogus"}')  # one bad entry among them
    delivered = tmp_path / "delivered"
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_flush_in_child, args=(str(tmp_path), str(delivered), entries[i::6])) for i in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0] * 6  # no FileNotFoundError (or anything else) escaped
    assert set(delivered.read_text().split()) >= set(jobs) - {"13"}
    assert outbox.pending(time.time()).entries == []
    lines = [json.loads(line) for line in (tmp_path / "hooks.log").read_text().splitlines()]
    assert [line["file"] for line in lines if line["event"] == "outbox_entry_quarantined"] == ["13.json"]
    assert [line for line in lines if line["level"] == "error" and line["event"] != "outbox_entry_quarantined"] == []
