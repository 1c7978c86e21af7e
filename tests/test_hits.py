"""Each rule family's work per file is capped; a flood costs ripgrep's time and hides no crash."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from slurm_hooks.bundle import load_bundle
from slurm_hooks.config import Limits
from slurm_hooks.diagnose import diagnose
from slurm_hooks.timeline.hits import RESCAN_AFTER
from slurm_hooks.timeline.scan import Hit, ResilientScanner, find_rg
from tests.conftest import CRASH, JOB, write_bundle


class CountingScanner:
    """The real scanner, counting the hits it hands to Python."""

    def __init__(self) -> None:
        self.inner = ResilientScanner(find_rg())
        self.hits = 0
        self.scans = 0

    def scan(
        self, fh: BinaryIO, keywords: Sequence[str], notes: list[str], after_line: int = 0, from_offset: int = 0
    ) -> Iterator[Hit]:
        self.scans += 1
        for hit in self.inner.scan(fh, keywords, notes, after_line, from_offset):
            self.hits += 1
            yield hit


def test_a_flood_of_one_family_is_cut_and_the_crash_after_it_found(tmp_path: Path, pack) -> None:
    flood = "srun: error: x\n" * 50_000
    root = write_bundle(tmp_path / "b", JOB, {"job.out": flood + CRASH})
    scanner = CountingScanner()
    got = diagnose(load_bundle(root, Limits(hits_per_family=100)), pack, scanner)
    assert got.label == "checkpoint_segfault" and got.first_fault and got.first_fault["source"] == "logs/job.out:50002"
    assert any(
        s.startswith("logs/job.out: ")
        and "more 'task_exit' lines counted, not examined (limits.hits_per_family=100)" in s
        for s in got.skipped
    ), got.skipped
    # Bounded work: the scan went on without the spent keyword instead of handing Python 50,000 lines.
    assert scanner.scans == 2 and scanner.hits <= 100 + RESCAN_AFTER + 5


def test_families_keep_their_own_budget(tmp_path: Path, pack) -> None:
    lines = "".join(f"0: [2026-01-05 10:{i % 60:02}:00] saving checkpoint at iteration {i}\n" for i in range(300))
    root = write_bundle(tmp_path / "b", JOB, {"job.out": lines + CRASH})
    got = diagnose(load_bundle(root, Limits(hits_per_family=50)), pack)
    assert got.label == "checkpoint_segfault"  # the crash's own family is not spent by the markers
    assert any("more 'checkpoint_start' lines counted, not examined" in s for s in got.skipped)


def test_the_keyword_index_finds_the_rules_a_substring_test_of_each_keyword_finds(pack) -> None:
    """RE2's Set in place of one `in` a keyword: the same rules, in pack order, for lines holding one,
    several, overlapping or no keywords, and non-ASCII text around them."""
    from slurm_hooks.timeline.hits import KeywordIndex

    for kind in ("log", "kernel"):
        rules = [r for r in pack.rules if r.applies_to(kind)]
        index = KeywordIndex(rules)
        words = index.keywords
        lines = list(words) + [f"é {a} ∂ {b}" for a, b in zip(words, reversed(words), strict=True)]
        lines += ["", "nothing here", words[0][:-1], "".join(words)]
        for line in lines:
            want = [r for r in rules if any(k in line for k in r.keywords)]
            assert index.rules_in(line) == want, line


def test_a_job_logs_family_budget_grows_with_the_jobs_nodes(tmp_path: Path, pack) -> None:
    """Every rank prints per-rank families (torchrun's summary, tracebacks, watchdog reports): a fixed
    budget would cut a large job's later ranks, which would then look silent."""
    nodes = [f"n{i}" for i in range(10)]
    job = {**JOB, "nodes": nodes}
    ended = "".join(f"srun: error: {nodes[i % 10]}: task {i}: Exited with exit code 1\n" for i in range(400))
    root = write_bundle(tmp_path / "b", job, {"job.out": ended + CRASH})
    got = diagnose(load_bundle(root, Limits(hits_per_family=100)), pack)
    cut = [s for s in got.skipped if "more 'task_exit' lines" in s]
    # 32 a node of 10 is 320, more than the limit of 100: 80 of the 400 are counted only
    assert cut == [
        "logs/job.out: 80 more 'task_exit' lines counted, not examined (32 a node of the job's 10, up to 4x "
        "limits.hits_per_family=100)"
    ], got.skipped
    assert got.label == "checkpoint_segfault"
