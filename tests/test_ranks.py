"""The rank<->node map: global ranks from every source, never a process-group rank (log-signatures §8.13)."""

from __future__ import annotations

from pathlib import Path

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose.ranks import build_rank_map, expand_tasks
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.scan import PythonScanner
from tests.conftest import write_bundle

JOB = {
    "job_id": "1",
    "state": "FAILED",
    "start_time": "2026-03-01T00:00:00+00:00",
    "end_time": "2026-03-01T02:00:00+00:00",
    "nodes": ["n1", "n2"],
}


def _map(tmp_path: Path, log: str, pack):
    bundle = load_bundle(write_bundle(tmp_path, JOB, {"job.out": log}))
    timeline = build_timeline(bundle, pack, PythonScanner())
    return build_rank_map(timeline.events, bundle.job.nodes, pack), timeline.events


def test_rank_prefixes_are_global_and_watchdog_ranks_are_not(tmp_path: Path, pack) -> None:
    log = (
        "srun: error: n2: tasks 4-7: Aborted\n"
        " 5: [rank5]:[E301 01:00:00.1 ProcessGroupNCCL.cpp:685] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"
    )
    ranks, events = _map(tmp_path, log, pack)
    timeout = next(e for e in events if e.family == "nccl_timeout")
    assert (timeout.rank, timeout.node, timeout.fields["pg_rank"]) == (5, "n2", "1")
    assert not ranks.torchrun and ranks.node_of(6) == "n2"


def test_torchrun_summary_names_the_crashed_rank_and_its_host(tmp_path: Path, pack) -> None:
    entry = "1:   host      : {h}\n1:   rank      : {r} (local_rank: {lr})\n1:   exitcode  : {c} (pid: {p})\n"
    log = (
        "1: Failures:\n1: [1]:\n"
        + entry.format(h="n2", r=4, lr=0, c=-15, p=100)
        + "1: Root Cause (first observed failure):\n1: [0]:\n"
        + entry.format(h="n2", r=6, lr=2, c=-11, p=102)
    )
    ranks, _ = _map(tmp_path, log, pack)
    assert ranks.torchrun
    assert [(e.rank, e.local_rank, e.host, e.code, e.pid, e.crashed) for e in ranks.entries] == [
        (4, 0, "n2", -15, 100, False),
        (6, 2, "n2", -11, 102, True),
    ]
    assert ranks.node_of(6) == "n2" and ranks.rank_of_pid("n2", "102") == 6


def test_nccl_host_lines_map_a_pid_to_its_rank(tmp_path: Path, pack) -> None:
    log = (
        " 3: [rank3]:n1:4242:4300 [3] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got async event : GID table change\n"
    )
    ranks, _ = _map(tmp_path, log, pack)
    assert ranks.rank_of_pid("n1", "4242") == 3 and ranks.rank_of_pid("n2", "4242") is None


def test_block_distribution_when_nothing_names_the_node(tmp_path: Path, pack) -> None:
    ranks, _ = _map(tmp_path, " 0: using world size: 8\n", pack)
    assert ranks.world == 8 and ranks.node_of(3) == "n1" and ranks.node_of(4) == "n2" and ranks.node_of(9) is None


def test_srun_task_lists() -> None:
    assert expand_tasks("8,10-11") == [8, 10, 11] and expand_tasks("x,3") == [3]
    assert len(expand_tasks("0-99999999", limit=5)) == 5
