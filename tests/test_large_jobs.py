"""A 144-node, 576-rank job, generated: the one crashed rank is found among hundreds of timeouts."""

from __future__ import annotations

import time
from pathlib import Path

from bench.scale_bundle import make_all_crashed_bundle
from slurm_hooks.bundle import load_bundle
from slurm_hooks.config import Budgets
from slurm_hooks.diagnose import diagnose
from tests.conftest import write_bundle

NODES = [f"gb-r{r:02d}-c{c:02d}" for r in range(1, 19) for c in range(1, 9)]  # 144 nodes
RANKS = 4 * len(NODES)


def _facts(node: str) -> dict:
    return {
        "node": node,
        "driver_version": "580.95.05",
        "cdmm": "on",
        "ncore_version": "3.6.2",
        "gpu_model": "NVIDIA GB200",
        "gpu_count": 4,
        "arch": "aarch64",
        "timezone": "UTC",
    }


def _timeout(rank: int, second: int) -> str:
    return (
        f"{rank:>3}: [rank{rank}]:[E1118 02:52:{second:02d}.9 ProcessGroupNCCL.cpp:685] [Rank {rank}] Watchdog "
        f"caught collective operation timeout: WorkNCCL(SeqNum=7243, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
        f"Timeout(ms)=600000) ran for 6000{second:02d} milliseconds before timing out."
    )


def _bundle(tmp: Path, lines: list[str], kernel: dict[str, str] | None = None) -> Path:
    job = {
        "job_id": "9900144",
        "state": "FAILED",
        "exit_code": "134:0",
        "derived_exit_code": "0:6",
        "start_time": "2025-11-18T00:00:00+00:00",
        "end_time": "2025-11-18T02:53:00+00:00",
        "nodes": NODES,
    }
    head = [f"  0: using world size: {RANKS}"]
    iters = [f"{r:>3}:  [2025-11-18 02:41:{r % 60:02d}] iteration 2000/100000 | lm loss: 2.37 |" for r in range(RANKS)]
    return write_bundle(
        tmp, job, {"job.out": "\n".join(head + iters + lines) + "\n"}, [_facts(n) for n in NODES], kernel
    )


def test_crashed_rank_among_575_timeouts(tmp_path: Path, pack) -> None:
    crashed = 417  # on NODES[104]
    lines = [
        "  0: saving checkpoint at iteration 2000 to /lustre/ckpt in torch format",
        f"{crashed}: !!!!!!! Segfault encountered !!!!!!!",
        f'{crashed}:   File "<unknown>", line 0, in crc32_16bytes(void const*, unsigned long, unsigned int)',
        f"srun: error: {NODES[104]}: task {crashed}: Segmentation fault (core dumped)",
    ]
    lines += [_timeout(r, 10 + r % 40) for r in range(RANKS) if r != crashed]
    got = diagnose(load_bundle(_bundle(tmp_path, lines)), pack)
    assert (got.label, got.root_node, got.root_rank) == ("cdmm_checkpoint_segfault", NODES[104], crashed)
    assert "575 ranks hit the NCCL watchdog timeout" in got.summary


def test_hung_node_is_the_one_whose_ranks_never_report(tmp_path: Path, pack) -> None:
    stuck = NODES[77]
    silent = range(77 * 4, 77 * 4 + 4)
    lines = [_timeout(r, 10 + r % 40) for r in range(RANKS) if r not in silent]
    kernel = {
        stuck: "2025-11-18T02:45:00.000000+00:00 x kernel: INFO: task python3:6601 blocked for more than 122 seconds.\n"
    }
    got = diagnose(load_bundle(_bundle(tmp_path, lines, kernel)), pack)
    assert (got.label, got.root_node, got.root_rank) == ("nccl_timeout", stuck, None)
    assert got.details["silent_ranks"] == list(silent)
    assert any("blocked for more than" in e["line"] for e in got.evidence)


def test_a_hung_node_among_10400_ranks_reporting_is_still_the_one_silent(tmp_path: Path, pack) -> None:
    """2,600 nodes: more ranks report the watchdog than limits.hits_per_family (10,000) lets one family
    examine in a file. The budget grows with the job's nodes, so no reporting rank looks silent."""
    nodes = [f"gb-r{r:03d}-c{c:02d}" for r in range(1, 131) for c in range(1, 21)]
    ranks = 4 * len(nodes)
    stuck = 1999
    silent = range(stuck * 4, stuck * 4 + 4)
    lines = [f"    0: using world size: {ranks}"]
    lines += [f"{r:>5}:  [2025-11-18 02:41:{r % 60:02d}] iteration 2000/100000 | lm loss: 2.37 |" for r in range(ranks)]
    lines += [_timeout(r, 10 + r % 40) for r in range(ranks) if r not in silent]
    job = {
        "job_id": "9902600",
        "state": "FAILED",
        "exit_code": "134:0",
        "derived_exit_code": "0:6",
        "start_time": "2025-11-18T00:00:00+00:00",
        "end_time": "2025-11-18T02:53:00+00:00",
        "nodes": nodes,
    }
    got = diagnose(load_bundle(write_bundle(tmp_path, job, {"job.out": "\n".join(lines) + "\n"})), pack)
    assert (got.label, got.root_node, got.root_rank) == ("nccl_timeout", nodes[stuck], None)
    assert got.details["silent_ranks"] == list(silent)
    assert not [s for s in got.skipped if "lines counted, not examined" in s], got.skipped


def test_a_2304_node_job_whose_every_rank_segfaulted_is_diagnosed_well_inside_the_epilogs_budget(
    tmp_path: Path, pack
) -> None:
    """9,216 ranks crash at once (a broken build): each crash is a fault of its own and each dump is
    untimed. Grouping them searched every fault found so far, and placing each dump read its
    windows anew: 25 s at 576 nodes, 120 s at 2,304, for a diagnosis that is one step of the lead
    node's Epilog. Now well inside that budget, with the same answer."""
    want = make_all_crashed_bundle(tmp_path / "b", 2304)
    t0 = time.perf_counter()
    got = diagnose(load_bundle(tmp_path / "b"), pack)
    seconds = time.perf_counter() - t0
    assert (got.label, got.root_node, got.root_rank) == (want.label, want.root_node, want.root_rank)
    assert seconds < Budgets().epilog_s / 4, f"{seconds:.1f} s"
