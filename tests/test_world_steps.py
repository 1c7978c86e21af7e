"""Tasks belong to steps, and the world comes from Slurm (log-signatures §8.33, §8.34; diagnose/steps.py, ranks.py)."""

from __future__ import annotations

from pathlib import Path

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.diagnose.ranks import build_rank_map
from slurm_hooks.diagnose.silence import silent_ranks_details
from slurm_hooks.diagnose.steps import MAX_TASKS, expand_lists, find_steps
from slurm_hooks.timeline.build import build_timeline
from slurm_hooks.timeline.scan import PythonScanner
from tests.conftest import write_bundle

JOB = {
    "job_id": "3",
    "state": "FAILED",
    "exit_code": "1:0",
    "start_time": "2026-03-01T00:00:00+00:00",
    "end_time": "2026-03-01T02:00:00+00:00",
    "nodes": ["n1", "n2"],
}
STEP0 = "0: [2026-03-01 00:10:00] prep\nsrun: error: n1: tasks 0-1: Exited with exit code 1\n"
RAISE = (
    '{t}: Traceback (most recent call last):\n{t}:   File "train.py", line 5, in <module>\n{t}: ValueError: bad batch\n'
)


def _events(tmp_path: Path, log: str, pack, **job: object):
    bundle = load_bundle(write_bundle(tmp_path, {**JOB, **job}, {"job.out": log}))
    timeline = build_timeline(bundle, pack, PythonScanner())
    return bundle, timeline.events


def test_each_step_has_its_own_task_map_from_one_expansion(tmp_path: Path, pack) -> None:
    log = STEP0 + RAISE.format(t=1) + "srun: error: n2: tasks 0-1: Exited with exit code 1\n"
    bundle, events = _events(tmp_path, log, pack)
    steps = find_steps(bundle.job, events)
    lines = [e for e in events if "tasks" in e.fields]
    found = expand_lists(lines + lines, steps, 1 << 31)  # a list srun repeats is read once
    assert sorted(found.items()) == [
        (("logs/job.out#0", 0), "n1"),
        (("logs/job.out#0", 1), "n1"),
        (("logs/job.out#1", 0), "n2"),
        (("logs/job.out#1", 1), "n2"),
    ]
    huge = _events(tmp_path / "h", "srun: error: n1: tasks 0-99999999: Killed\n" * 300, pack)[1]
    assert len(expand_lists(huge, find_steps(bundle.job, huge), 1 << 31)) <= MAX_TASKS


def test_an_exception_is_placed_on_its_own_steps_node(tmp_path: Path, pack) -> None:
    log = STEP0 + RAISE.format(t=1) + "srun: error: n2: task 1: Exited with exit code 1\n"
    got = diagnose(load_bundle(write_bundle(tmp_path, JOB, {"job.out": log})), pack)
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n2", 1)


def test_a_line_that_names_its_node_outranks_another_steps_map(tmp_path: Path, pack) -> None:
    init = "1: n1:77:77 [0] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 0 busId 1000 commId 0xa - Init COMPLETE\n"
    bundle, events = _events(tmp_path, "srun: error: n2: task 1: Exited with exit code 1\n" + init, pack)
    ranks = build_rank_map(events, bundle.job.nodes, pack, steps=find_steps(bundle.job, events))
    assert next(e for e in events if e.family == "pid_sync").node == "n1"
    assert ranks.task_node("logs/job.out#0", 1) == "n2" and ranks.task_node("logs/job.out#1", 1) == "n1"


def test_slurms_step_places_a_task_no_line_placed(tmp_path: Path, pack) -> None:
    steps = [
        {"id": "0", "nodes": ["n1"], "ntasks": 2, "start": "2026-03-01T00:00:00+00:00"},
        {"id": "1", "nodes": ["n2"], "ntasks": 2, "start": "2026-03-01T00:15:00+00:00"},
    ]
    log = STEP0.replace("tasks 0-1", "task 1") + "1: [2026-03-01 00:20:00] step 3\n" + RAISE.format(t=1)
    got = diagnose(load_bundle(write_bundle(tmp_path, {**JOB, "steps": steps}, {"job.out": log})), pack)
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n2", 1)


def _world(tmp_path: Path, log: str, pack, **job: object):
    bundle, events = _events(tmp_path, log, pack, **job)
    return build_rank_map(events, bundle.job.nodes, pack, 1024, slurm_tasks=bundle.job.ntasks)


TIMEOUT = "{t}: [rank{t}]:[E ProcessGroupNCCL.cpp:737] [Rank {t}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n"


def test_the_rank_that_printed_nothing_exists_when_slurm_counts_it(tmp_path: Path, pack) -> None:
    log = "".join(TIMEOUT.format(t=r) for r in range(3))
    assert _world(tmp_path, log, pack).world == 3  # no count from Slurm: the ranks the logs show
    ranks = _world(tmp_path / "s", log, pack, ntasks=4)
    assert ranks.world == 4
    assert silent_ranks_details(ranks, {0, 1, 2})[:2] == ("n2", 3)  # the last rank, on the last node


def test_a_printed_world_size_and_the_jobs_bound_still_win(tmp_path: Path, pack) -> None:
    log = "WORLD_SIZE=6\n" + "".join(TIMEOUT.format(t=r) for r in range(3))
    assert _world(tmp_path, log, pack, ntasks=4).world == 6
    assert _world(tmp_path / "b", log.replace("WORLD_SIZE=6\n", ""), pack, ntasks=5000).world == 1024


def test_torchrun_world_is_its_nodes_times_the_local_ranks_of_one(tmp_path: Path, pack) -> None:
    log = "".join(f"{r // 2}: [default{r % 2}]:" + TIMEOUT.format(t=r).split(": ", 1)[1] for r in range(3))
    ranks = _world(tmp_path, log, pack, ntasks=2)
    assert ranks.torchrun and ranks.world == 4
    assert silent_ranks_details(ranks, {0, 1, 2})[:2] == ("n2", 3)
