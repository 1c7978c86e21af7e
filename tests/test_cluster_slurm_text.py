"""Slurm's own text on a real Slurm: a job's name or comment cannot move the lead node, shift a
field, forge a record, or make us overwrite (or skip) an AdminComment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from slurm_hooks.slurm.annotation import MARK
from slurm_hooks.slurm.cli_backend import SlurmCli
from tests import devcluster as dc

pytestmark = pytest.mark.slurm
HOST = os.uname().nodename.split(".")[0]
HOSTILE_NAME = "train BatchHost=nowhere ExitCode=0:0"


@pytest.fixture(scope="module", autouse=True)
def cluster():
    dc.require_cluster()
    dc.configure()
    yield
    dc.configure()


def comments(job_id: str) -> tuple[str, str]:
    return SlurmCli(10).accounting_comments(job_id)


def wait_event(job_id: str, event: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not any(f'"event": "{event}"' in line for line in dc.hook_log(job_id)):
        assert time.monotonic() < deadline, dc.hook_log(job_id)
        time.sleep(0.3)


def test_a_job_named_like_scontrol_text_is_still_annotated_by_its_lead_node() -> None:
    job = dc.submit("sleep 2; echo the end; exit 3", args=f"-J '{HOSTILE_NAME}' -o /home/alice/jobs/%x-%j.out")
    dc.wait_running(job)
    record = SlurmCli(10).job(job)
    assert (record.batch_host, record.node_list) == (HOST, HOST)
    assert record.std_out == f"/home/alice/jobs/{HOSTILE_NAME}-{job}.out"  # %x expanded from the real name
    assert dc.wait(job) == "FAILED"
    fields = dc.wait_annotated(job)
    assert (fields["exit"], fields["state"]) == ("3:0", "failed")
    logs = [json.loads(line) for line in dc.hook_log(job) if '"evidence_collected"' in line]
    assert logs and logs[0]["logs"][0]["ok"], logs  # the lead node found and copied the job's log


def test_separator_in_a_comment_neither_overwrites_jobstats_nor_hides_ours() -> None:
    owned = dc.submit("sleep 2; exit 1", args=f"--comment=$'x\\x1f{MARK} label=success'")
    dc.wait_running(owned)
    dc.run("scontrol", "update", f"jobid={owned}", "admincomment=JS1:eyJqb2JzdGF0cyI6MX0=")
    free = dc.submit("exit 1", args="--comment=$'a\\x1fb'")
    assert dc.wait(owned) == "FAILED" and dc.wait(free) == "FAILED"
    wait_event(owned, "annotation_left_alone")
    assert comments(owned)[1] == "JS1:eyJqb2JzdGF0cyI6MX0="
    assert dc.wait_annotated(free)["label"] != ""
    assert comments(free)[1].startswith(MARK)


def test_decode_does_not_trust_a_record_forged_in_the_users_comment() -> None:
    dc.configure(extra="annotation: {mode: shadow}\n")  # we write nothing: only the user's forgery is there
    try:
        job = dc.submit("exit 0", args=f"--comment='{MARK} label=cdmm_checkpoint_segfault node=victim'")
        assert dc.wait(job) == "COMPLETED"
        wait_event(job, "annotation_skipped")
        assert comments(job)[0].startswith(MARK)
        out = subprocess.run(
            [sys.executable, "-m", "slurm_hooks", "decode", "--job", job], capture_output=True, text=True, timeout=30
        )
        assert out.returncode == 1 and out.stdout == "", out
    finally:
        dc.configure()
