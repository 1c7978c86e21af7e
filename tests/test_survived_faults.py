"""Faults the job survived (issue 28 item 2, log-signatures §8.30): a fault the job advanced past (one
stream's two progress readings after it) is listed in `details.survived`, never the root; a fault
with no progress after it (or only the step in flight) still is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import BUNDLES, write_bundle

OURS = sorted(p for p in BUNDLES.glob("p1*") if (p / "expected.json").exists())

JOB = {
    "job_id": "30",
    "state": "TIMEOUT",
    "exit_code": "0:15",
    "derived_exit_code": "0:0",
    "start_time": "2026-05-01T09:00:00+00:00",
    "end_time": "2026-05-01T12:00:05+00:00",
    "nodes": ["s-n01", "s-n02"],
    "batch_host": "s-n01",
}
XID = "2026-05-01T10:30:00.500000+00:00 s-n02 kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=551, name=python, GPU has fallen off the bus.\n"
END = "slurmstepd: error: *** JOB 30 ON s-n01 CANCELLED AT 2026-05-01T12:00:00 DUE TO TIME LIMIT ***\n"


def _iter(stamp: str, it: int, task: int = 7) -> str:
    return (
        f"{task}:  [2026-05-01 {stamp}] iteration {it:>8}/  100000 | consumed samples: {it * 8} | lm loss: 2.3E+00 |\n"
    )


def _diagnose(tmp_path: Path, log: str, pack, kernel: str = XID):
    return diagnose(load_bundle(write_bundle(tmp_path, JOB, {"job.out": log}, kernel={"s-n02": kernel})), pack)


@pytest.mark.parametrize("path", OURS, ids=[p.name for p in OURS])
def test_survived_fault_bundles(path: Path, pack) -> None:
    expected = json.loads((path / "expected.json").read_text())
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_node, got.root_rank) == (
        expected["label"],
        expected["root_node"],
        expected["root_rank"],
    ), got.summary
    kinds = sorted({s["kind"] for s in got.details.get("survived", [])})
    assert kinds == sorted(expected["survived"]), got.details.get("survived")


def test_a_fault_the_job_advanced_past_is_listed_not_the_root(tmp_path: Path, pack) -> None:
    log = _iter("10:29:00", 100) + _iter("10:31:00", 110) + _iter("10:33:00", 120) + END
    got = _diagnose(tmp_path, log, pack)
    assert got.label == "time_limit" and got.root_node is None
    (lived,) = got.details["survived"]
    assert lived["kind"] == "xid" and lived["source"] == "kernel/s-n02.log:1"
    assert set(lived) == {"time", "time_exact", "kind", "node", "rank", "source", "line"}  # fault_record's keys


def test_the_step_in_flight_is_not_progress(tmp_path: Path, pack) -> None:
    """One reading after the fault may be the step that was running when it came: the fault decides."""
    got = _diagnose(tmp_path, _iter("10:29:00", 100) + _iter("10:31:00", 110) + END, pack)
    assert (got.label, got.root_node) == ("gpu_xid", "s-n02") and "survived" not in got.details


def test_progress_within_the_clocks_tolerance_is_not_after(tmp_path: Path, pack) -> None:
    log = _iter("10:29:00", 100) + _iter("10:30:01", 110) + _iter("10:30:02", 120) + END
    assert _diagnose(tmp_path, log, pack).label == "gpu_xid"


def test_slurm_ending_the_job_is_never_survived(tmp_path: Path, pack) -> None:
    """A time limit printed before iterations (a forged or earlier line) is still Slurm's end."""
    log = END + _iter("12:10:00", 100) + _iter("12:11:00", 110)
    got = _diagnose(tmp_path, log, pack, kernel="")
    assert got.label == "time_limit" and "survived" not in got.details


def test_a_ranks_crash_is_survived_only_by_that_rank(tmp_path: Path, pack) -> None:
    crash = "2: Fatal Python error: Segmentation fault\n2: \n2: Current thread 0x1 (most recent call first):\n"
    crash += '2:   File "/w/x.py", line 3 in f\n'
    others = "".join(_iter(f"10:4{m}:00", 100 + m, task=t) for m in range(4) for t in (0, 1))
    got = _diagnose(tmp_path / "a", _iter("10:29:00", 99, task=2) + crash + others + END, pack, kernel="")
    assert (got.label, got.root_rank) == ("app_segfault", 2), got.details.get("survived")
    own = "".join(_iter(f"10:4{m}:00", 100 + m, task=2) for m in range(2))
    got = _diagnose(tmp_path / "b", _iter("10:29:00", 99, task=2) + crash + own + END, pack, kernel="")
    assert got.label == "time_limit" and [s["kind"] for s in got.details["survived"]] == ["segfault"]


def test_a_tail_of_teardown_sends_the_reader_forward_from_the_fault(tmp_path: Path, pack) -> None:
    """Progress past the tail read (more than 2 MiB of chatter after it) is found by reading on from
    the fault's own line, bounded."""
    port = "5: [2026-05-01 10:30:00] s-n02:1:2 [1] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_2:1 Got async event : port error\n"
    chatter = "".join(
        f"3: s-n01:9:9 [3] NCCL INFO Channel {i % 32:02d}/0 : 3 -> 4 via P2P/CUMEM/read\n" for i in range(40_000)
    )
    log = _iter("10:29:00", 100) + port + _iter("10:31:00", 110) + _iter("10:33:00", 120) + chatter + END
    assert len(chatter) > 2 << 20
    got = _diagnose(tmp_path, log, pack, kernel="")
    assert got.label == "time_limit" and [s["kind"] for s in got.details["survived"]] == ["fabric"]


def test_the_tail_keeps_each_streams_last_two_readings(tmp_path: Path, pack) -> None:
    from slurm_hooks.timeline.progress import Patterns, last_progress

    body = "".join(_iter(f"10:{m:02d}:00", m, task=t) for m in range(10) for t in (0, 1)) + END
    root = write_bundle(tmp_path, JOB, {"job.out": body})
    got = last_progress(root, "logs/job.out", Patterns(pack.progress, pack.progress_counters), load_bundle(root).job)
    assert [(p.task, p.time.minute if p.time else None) for p in got] == [(0, 8), (1, 8), (0, 9), (1, 9)]


def test_a_bar_counts_where_it_goes_up_in_a_tail_cut_through_its_line(tmp_path: Path, pack) -> None:
    """One physical line holding a run's whole bar (`\\r` segments): the tail's cut segment is dropped,
    the later ones read; a re-drawn count is no reading."""
    from slurm_hooks.timeline.progress import FIRST_TAIL, Patterns, last_progress

    bar = "\r".join(f" 50%|█████     | {n}/9999 [10:00<09:59,  1.20s/it]" for n in range(1, 40_001))
    root = write_bundle(tmp_path, JOB, {"job.err": "0: " + bar + "\n"})
    pats = Patterns(pack.progress, pack.progress_counters)
    got = last_progress(root, "logs/job.err", pats, load_bundle(root).job, budget=FIRST_TAIL)
    assert len(got) == 2 and all(p.offset > 0 for p in got)
    same = "\r".join(" 50%|█████     | 500/9999 [10:00<09:59,  1.20s/it]" for _ in range(3))
    root = write_bundle(tmp_path / "same", JOB, {"job.err": "0: " + same + "\n"})
    assert last_progress(root, "logs/job.err", pats, load_bundle(root).job) == []


def test_a_survived_kernel_fault_is_said_and_leaves_the_verdict_sure(pack) -> None:
    """A link fault the node's kernel logged and the job went on after is in `details.survived`:
    confidence.py does not count it as a node fault the verdict left unsaid (§8.28, §8.30)."""
    got = diagnose(load_bundle(next(BUNDLES.glob("p10-*"))), pack)
    assert got.label == "time_limit" and got.details["survived"], got.details
    assert got.details["confidence"]["level"] == "high" and "candidates" not in got.details, got.details
