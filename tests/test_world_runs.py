"""A job id holds runs; only the last decides (log-signatures §8.29; diagnose/runs.py, world.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import BUNDLES, write_bundle

WORLD = sorted(p for p in BUNDLES.iterdir() if p.name.startswith("w") and (p / "expected.json").exists())
JOB = {
    "job_id": "5",
    "state": "FAILED",
    "exit_code": "1:0",
    "start_time": "2026-03-01T01:00:00+00:00",
    "end_time": "2026-03-01T02:00:00+00:00",
    "nodes": ["n1"],
}
SEGV = '[2026-03-01 {t}] step 3\nFatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n  File "a.py", line 9 in main\n'
OOM = (
    '[2026-03-01 {t}] step 9\nTraceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
)


@pytest.mark.parametrize("path", WORLD, ids=[p.name for p in WORLD])
def test_world_bundles_and_their_previous_runs(path: Path, pack) -> None:
    """Each class, for several launchers: requeue with append (Slurm's restart count; the logs' banner),
    torchrun --max-restarts, a retrying script, steps that reuse task ids, a silent last rank."""
    expected = json.loads((path / "expected.json").read_text())
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_node, got.root_rank) == (
        expected["label"],
        expected["root_node"],
        expected["root_rank"],
    )
    previous = got.details.get("previous_runs", [])
    assert [p["ended"] for p in previous] == expected.get("previous_runs", [])
    assert all(p["first_fault"] and p["first_fault"]["source"].startswith("logs/") for p in previous)


def _diagnose(tmp_path: Path, log: str, pack, **job: object):
    return diagnose(load_bundle(write_bundle(tmp_path, {**JOB, **job}, {"job.out": log})), pack)


def test_a_restart_line_ends_its_run_in_an_unlabelled_log(tmp_path: Path, pack) -> None:
    restart = "[default] Worker group FAILED. 2/3 attempts left; will restart worker group\n"
    got = _diagnose(tmp_path, SEGV.format(t="01:10:00") + restart + OOM.format(t="01:20:00"), pack)
    assert got.label == "app_exception" and got.details["exception"]["kind"] == "cuda_oom"
    assert [p["ended"] for p in got.details["previous_runs"]] == ["app_segfault"]


def test_without_a_boundary_the_earlier_crash_still_decides(tmp_path: Path, pack) -> None:
    """The split is evidence, never a guess: the same log without the restart line is one run."""
    got = _diagnose(tmp_path, SEGV.format(t="01:10:00") + OOM.format(t="01:20:00"), pack)
    assert got.label == "app_segfault" and "previous_runs" not in got.details


def test_slurms_start_places_stamped_lines_before_the_last_run(tmp_path: Path, pack) -> None:
    log = SEGV.format(t="00:40:00") + OOM.format(t="01:20:00")
    assert _diagnose(tmp_path / "0", log, pack, restarts=0).label == "app_segfault"  # Slurm: never restarted
    for name, job in (("r", {"restarts": 1}), ("u", {})):  # restarted; not said, and the log straddles the start
        got = _diagnose(tmp_path / name, log, pack, **job)
        assert got.label == "app_exception" and got.details["previous_runs"][0]["ended"] == "app_segfault"
    early = SEGV.format(t="00:40:00") + OOM.format(t="00:50:00")  # a log wholly before the start: its zone, not a run
    assert _diagnose(tmp_path / "z", early, pack).label == "app_segfault"


def test_a_previous_runs_crash_never_fails_a_run_that_completed(tmp_path: Path, pack) -> None:
    banner = "[2026-03-01 {t}] ***** Running training *****\n"
    log = (
        banner.format(t="01:01:00")
        + SEGV.format(t="01:02:00")
        + banner.format(t="01:03:00")
        + "[2026-03-01 01:09:00] done\n"
    )
    got = _diagnose(tmp_path, log, pack, state="COMPLETED", exit_code="0:0")
    assert got.label == "success" and got.details["previous_runs"][0]["ended"] == "app_segfault"


def test_one_process_printing_its_world_communicator_twice_is_one_run(tmp_path: Path, pack) -> None:
    """A second world-sized communicator from the same pid is no new run; a new pid for the rank is."""
    init = "n1:{pid}:{pid} [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 1000 commId 0x{c} - Init COMPLETE\n"
    one = init.format(pid=100, c="a") + init.format(pid=100, c="b")
    got = _diagnose(
        tmp_path, one + SEGV.format(t="01:10:00") + init.format(pid=100, c="c") + OOM.format(t="01:20:00"), pack
    )
    assert got.label == "app_segfault" and "previous_runs" not in got.details
    got = _diagnose(
        tmp_path / "r", one + SEGV.format(t="01:10:00") + init.format(pid=200, c="c") + OOM.format(t="01:20:00"), pack
    )
    assert got.label == "app_exception" and len(got.details["previous_runs"]) == 1


def test_job_json_run_and_step_keys_are_optional_and_bounded(tmp_path: Path) -> None:
    steps = [
        {"id": "0", "nodes": ["n1"], "ntasks": 2, "start": "2026-03-01T01:00:00", "state": "completed 0"},
        "x",
        {"ntasks": -3},
    ]
    job = load_bundle(write_bundle(tmp_path, {**JOB, "restarts": 2, "sluid": "s" * 100, "steps": steps}, {})).job
    assert (job.restarts, len(job.sluid), len(job.steps)) == (2, 64, 2)
    assert (job.steps[0].ntasks, job.steps[0].state, job.steps[1].id, job.steps[1].ntasks) == (2, "COMPLETED", "2", 0)
    bad = load_bundle(write_bundle(tmp_path / "b", {**JOB, "restarts": -1, "steps": {"a": 1}}, {})).job
    assert (bad.restarts, bad.steps) == (None, ())


def test_the_epilog_writes_slurms_restart_count_and_run_id_and_the_diagnosis_uses_them(tmp_path: Path) -> None:
    """SLURM_JOB_RESTART_COUNT and SLURM_JOB_SLUID reach job.json. Restarted, the crash stamped before
    the last run's start (the record's StartTime, 03:12:40) is an earlier run's; never restarted, it
    is this run's (a clock, not a requeue, put it there)."""
    from dataclasses import replace

    from tests.test_epilog import JOB as EPILOG_JOB
    from tests.test_epilog import Rig

    log = SEGV.format(t="03:00:00").replace("2026-03-01", "2026-11-27") + "[2026-11-27 03:20:00] step 9\n"
    for restarts, sluid, want in (("0", "", "app_segfault"), ("1", "a1b2", "unknown")):
        rig = Rig(tmp_path / restarts, log, exit_code="1:0")
        rig.kernel.text = ""  # no kernel line: the job's own log decides
        rig.run(replace(rig.ctx, restart_count=restarts, sluid=sluid))
        doc = json.loads((rig.spool.job_dir(EPILOG_JOB) / "bundle/job.json").read_text())
        assert (doc.get("restarts"), doc.get("sluid")) == (int(restarts), sluid or None)
        assert rig.diagnosis()["label"] == want
