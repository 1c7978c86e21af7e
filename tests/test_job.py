"""The job context: Slurm's environment parsed once, user-set values kept as text only."""

from __future__ import annotations

import pytest

from slurm_hooks.slurm.job import JobContext, raw_status


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("0", "0:0"), ("11", "0:11"), ("256", "1:0"), ("253", "0:125"), ("35584", "139:0"), ("", ""), ("x", "")],
)
def test_derived_exit_code_is_a_wait_status(raw: str, expected: str) -> None:
    assert raw_status(raw) == expected


def test_context_from_an_epilog_environment() -> None:
    ctx = JobContext.from_env(
        {
            "SLURM_JOB_ID": "77",
            "SLURM_JOB_UID": "2001",
            "SLURM_JOB_GID": "2001",
            "SLURM_JOB_USER": "alice",
            "SLURM_JOB_COMMENT": "run 4 slurm-hooks=off",
            "SLURM_JOB_NODELIST": "n[1-2]",
            "SLURM_JOB_EXIT_CODE2": "1:0",
            "SLURM_JOB_DERIVED_EC": "35584",
            "SLURM_JOB_STDOUT": "/w/%j.out",
            "SLURM_JOB_STDIN": "/dev/null",
        }
    )
    assert ctx is not None and (ctx.uid, ctx.gid, ctx.node_list, ctx.exit_code) == (2001, 2001, "n[1-2]", "1:0")
    assert ctx.derived_exit_code == "139:0" and ctx.opted_out and ctx.batch and ctx.stdout_pattern == "/w/%j.out"


@pytest.mark.parametrize("job_id", ["", "12;rm -rf /", "../1", "1,2,3", " 7"])
def test_no_context_without_a_numeric_job_id(job_id: str) -> None:
    assert JobContext.from_env({"SLURM_JOB_ID": job_id}) is None


def test_non_numeric_ids_and_old_names() -> None:
    ctx = JobContext.from_env({"SLURM_JOBID": "5", "SLURM_JOB_UID": "root", "SLURM_NODELIST": "n1"})
    assert ctx is not None and (ctx.job_id, ctx.uid, ctx.node_list, ctx.opted_out) == ("5", None, "n1", False)
