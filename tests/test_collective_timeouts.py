"""gloo's collective timeout is the same symptom as NCCL's watchdog report (log-signatures §8.2,
§8.8): the ranks that raise it waited for a peer, never the root; the rank that never reported it
is the silent one. The lines are torch 2.13's, from tests/corpus/real's gloo hang recording."""

from __future__ import annotations

from pathlib import Path

from tests.test_verdict_witness import JOB, _diagnose

GLOO = (
    "{r}: [rank{r}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
    "Timed out waiting 20000ms for recv operation to complete\n"
)
STEPS = "".join(f"{r}: [2026-01-05 10:29:00] rank {r} step 7 loss 2.5\n" for r in range(4))
FAILED = "srun: error: n1: tasks 0-1: Exited with exit code 1\nsrun: error: n2: task 3: Exited with exit code 1\n"


def _traceback(r: int) -> str:
    return (
        f"{r}: [rank{r}]: Traceback (most recent call last):\n"
        f'{r}: [rank{r}]:   File "/jobs/train.py", line 88, in <module>\n'
        f"{r}: [rank{r}]:     dist.all_reduce(t)\n" + GLOO.format(r=r)
    )


def test_the_rank_that_never_timed_out_is_the_silent_root(tmp_path: Path, pack) -> None:
    log = STEPS + "".join(_traceback(r) for r in (0, 1, 3)) + FAILED
    got = _diagnose(tmp_path, log, pack, ntasks=4)
    assert (got.label, got.root_node, got.root_rank) == ("nccl_timeout", "n2", 2), got.summary
    assert got.details["confidence"]["level"] == "low"  # found by absence (§8.28)


def test_every_rank_timed_out_names_no_one(tmp_path: Path, pack) -> None:
    log = STEPS + "".join(_traceback(r) for r in range(4)) + FAILED
    got = _diagnose(tmp_path, log, pack, ntasks=4)
    assert (got.label, got.root_node, got.root_rank) == ("nccl_timeout", None, None), got.summary


def test_a_rank_that_raised_first_is_still_the_root_when_gloo_timeouts_follow(tmp_path: Path, pack) -> None:
    own = (
        "2: [rank2]: Traceback (most recent call last):\n"
        '2: [rank2]:   File "/jobs/train.py", line 70, in <module>\n'
        "2: [rank2]: ValueError: bad shard index 9\n"
    )
    log = STEPS + own + "".join(_traceback(r) for r in (0, 1, 3)) + FAILED
    got = _diagnose(tmp_path, log, pack, ntasks=4)
    assert (got.label, got.root_node, got.root_rank) == ("app_exception", "n2", 2), got.summary
    assert JOB["nodes"] == ["n1", "n2"]
