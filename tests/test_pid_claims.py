"""A job's line that ties a pid to a rank (NCCL's init line, §8.18) is the job's word: where srun's
own placement puts that rank on another node, the tie is dropped, and a kernel crash of that pid is
not made that rank's (log-signatures §8.28, §8.33)."""

from __future__ import annotations

from pathlib import Path

from tests.test_verdict_witness import _diagnose

KERNEL = {
    "n2": "2026-01-05T10:30:00.000000+00:00 n2 kernel: python[1234]: segfault at 0 ip 00007f0000000000 "
    "sp 00007ffd00000000 error 4 in libc.so.6[7f0000000000+1000]\n"
}
SRUN = "srun: error: n1: task 0: Exited with exit code 1\nsrun: error: n2: task 1: Segmentation fault (core dumped)\n"


def _init(node: str, rank: int) -> str:
    return f"{rank}: {node}:1234:1234 [0] NCCL INFO comm 0x2 rank {rank} nranks 2 cudaDev 0 busId 1b000 commId 0x2 - Init COMPLETE\n"


def test_a_pid_claimed_for_a_rank_srun_placed_elsewhere_names_no_rank(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, _init("n2", 0) + SRUN, pack, KERNEL, ntasks=2)
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", "n2", 1), got.summary


def test_a_pid_tie_that_agrees_with_srun_names_its_rank(tmp_path: Path, pack) -> None:
    got = _diagnose(tmp_path, _init("n2", 1) + SRUN, pack, KERNEL, ntasks=2)
    assert (got.label, got.root_node, got.root_rank) == ("app_segfault", "n2", 1), got.summary
