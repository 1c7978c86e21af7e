"""A bundle's scanning cut into shares: whole lines, every byte once, and the same timeline as one scan."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from bench.scale_bundle import make_bundle
from slurm_hooks.bundle import Bundle, load_bundle
from slurm_hooks.config import Limits
from slurm_hooks.rules import RulePack
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.events import Timeline
from slurm_hooks.timeline.scan import default_scanner
from slurm_hooks.timeline.shares import MAX_WORKERS, Parallel, plan_shares
from tests.conftest import CRASH, JOB, write_bundle

EVERYTHING = Parallel(workers=3, min_bytes=0, split_bytes=0)  # a small bundle cut as a large one would be


def _timeline(root: Path, pack: RulePack, parallel: Parallel, limits: Limits | None = None) -> Timeline:
    return build_timeline(load_bundle(root, limits or Limits()), pack, default_scanner(), parallel)


def _seen(timeline: Timeline) -> tuple[list[tuple[object, ...]], list[str]]:
    rows: list[tuple[object, ...]] = [
        (e.family, e.source, e.line_no, e.offset, e.text, e.task, e.rank, e.node, e.time, e.lo, e.hi, e.fields)
        for e in timeline.events
    ]
    return rows, timeline.notes


def test_a_small_bundle_is_one_share_with_everything_and_no_fork(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": CRASH}, kernel={"n1": "x\n"})
    shares = plan_shares(load_bundle(root), Parallel(workers=8))
    assert len(shares) == 1
    assert [(p.file.rel, p.start, p.stop) for p in shares[0].logs] == [("logs/job.out", 0, None)]
    assert shares[0].kernels == ["n1"]


def _bundle_of(tmp_path: Path, nodes: int) -> Bundle:
    make_bundle(tmp_path / "b", nodes)
    return load_bundle(tmp_path / "b")


def test_a_large_log_is_cut_at_line_starts_into_ranges_that_cover_it_once(tmp_path: Path) -> None:
    bundle = _bundle_of(tmp_path, 18)
    shares = plan_shares(bundle, EVERYTHING)
    assert len(shares) == 3
    (log,) = bundle.logs
    ranges = [p for s in shares for p in s.logs]
    assert ranges[0].start == 0 and ranges[-1].stop is None
    assert all(a.stop == b.start for a, b in itertools.pairwise(ranges))  # no gap, no overlap
    data = (tmp_path / "b" / log.rel).read_bytes()
    assert all(data[p.start - 1 : p.start] == b"\n" for p in ranges[1:])  # each range starts a line
    nodes = [n for s in shares for n in s.kernels]
    assert nodes == sorted(bundle.kernels) and all(s.kernels for s in shares)  # every node once, in order


def test_workers_are_capped_and_a_log_of_bare_crs_is_not_cut(tmp_path: Path) -> None:
    root = write_bundle(tmp_path / "b", JOB, {"job.out": "0: step 1\r" * 5000})
    assert len(plan_shares(load_bundle(root), Parallel(workers=64, min_bytes=0))) <= MAX_WORKERS
    shares = plan_shares(load_bundle(root), EVERYTHING)
    assert [(p.start, p.stop) for s in shares for p in s.logs] == [(0, None)]


def test_cut_into_shares_the_timeline_is_the_one_a_single_scan_makes(tmp_path: Path, pack: RulePack) -> None:
    make_bundle(tmp_path / "b", 18)
    one = _seen(_timeline(tmp_path / "b", pack, Parallel(workers=1)))
    cut = _seen(_timeline(tmp_path / "b", pack, EVERYTHING))
    assert len(one[0]) > 200  # 72 ranks: their NCCL lines, watchdog reports, tracebacks, the crash
    assert cut == one


@pytest.mark.parametrize("workers", [2, 3])
def test_a_family_cap_crossing_the_cuts_holds_for_the_file_as_one_scan(
    tmp_path: Path, pack: RulePack, workers: int
) -> None:
    flood = "".join(f"srun: error: n1: task {i}: Exited with exit code 1\n" for i in range(600))
    root = write_bundle(tmp_path / "b", JOB, {"job.out": flood + CRASH})
    limits = Limits(hits_per_family=100)
    one = _seen(_timeline(root, pack, Parallel(workers=1), limits))
    cut = _seen(_timeline(root, pack, Parallel(workers=workers, min_bytes=0, split_bytes=0), limits))
    assert cut == one
    assert sum(1 for row in one[0] if row[0] == "task_exit") == 100  # the cap held, over the ranges together
    assert any("500 more 'task_exit' lines counted, not examined" in n for n in one[1]), one[1]
    assert any(row[0] == "segfault" and row[2] == 602 for row in one[0])  # numbered in the file, not its range
