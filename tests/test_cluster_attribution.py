"""Wrapper forms through the real hooks on four nodes: the crashed rank and its node reach sacct (issue 18).

Each rank runs under `srun -l bash -c "...; WRAPPER"` the way most sbatch scripts do; the rank
CRASH_RANK dies of a real SIGSEGV (a NULL read through ctypes, faulthandler on), the others exit
as their wrapper says. Through `; echo done` every task exits 0 and Slurm records COMPLETED 0:0:
the crash is still the label, with state=completed in the record (log-signatures §8.19, §8.21).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm
SPOOL = Path("/var/spool/slurm-hooks")
FOUR_NODES = "-p multi -N4 -n8 --overcommit"
# Rank 0 says the world size, as training scripts do (Megatron's `using world size: N`): in a job
# whose wrapper hid every srun error line, that and srun's block distribution place a rank.
CRASH = (
    '[ "$SLURM_PROCID" = 0 ] && echo "using world size: $SLURM_NTASKS"\n'
    'if [ "$SLURM_PROCID" = "$CRASH_RANK" ]; then python3 -X faulthandler -c "import ctypes; ctypes.string_at(0)"; '
    "else sleep 1; fi"
)


@pytest.fixture(scope="module", autouse=True)
def cluster():
    dc.require_cluster(min_nodes=4)
    dc.configure()
    yield


def submit(rank: int, wrapper: str) -> str:
    task = dc.JOBS / "attribution-task.sh"
    dc.JOBS.mkdir(exist_ok=True)
    task.write_text(f"#!/bin/bash\n{CRASH}\n")
    task.chmod(0o755)
    return dc.submit(f'export CRASH_RANK={rank}\nsrun -l bash -c "{task}; {wrapper}"', args=FOUR_NODES)


def ran_on(job: str, rank: int) -> str:
    """Where the rank ran, by Slurm's own record of the step's tasks (not by the classifier)."""
    out = dc.run("sacct", "-n", "-P", "-j", f"{job}.0", "-o", "NodeList")
    hosts = dc.run("scontrol", "show", "hostnames", out.split()[0]).split()
    return hosts[rank // 2]  # -N4 -n8: srun's block distribution, two tasks a node


def diagnosis(job: str) -> dict[str, object]:
    return json.loads((SPOOL / "jobs" / job / "diagnosis.json").read_text())


def test_echo_done_wrapper_swallows_the_crash_and_the_record_still_names_it() -> None:
    job = submit(rank=5, wrapper="echo done")
    assert dc.wait(job) == "COMPLETED"
    fields = dc.wait_annotated(job)
    assert (fields["label"], fields["node"], fields["rank"]) == ("app_segfault", ran_on(job, 5).lower(), "5")
    assert fields["state"] == "completed" and fields["exit"] == "0:0"
    assert diagnosis(job)["details"]["masked_by_exit"] == {"state": "COMPLETED", "exit_code": "0:0"}  # type: ignore[index]
    assert "Segmentation fault" in dc.output(job)  # bash said so, under the crashed task's prefix


def test_exit_status_wrapper_passes_139_and_names_the_rank() -> None:
    job = submit(rank=2, wrapper="exit \\$?")
    assert dc.wait(job) == "FAILED"
    fields = dc.wait_annotated(job)
    assert (fields["label"], fields["node"], fields["rank"]) == ("app_segfault", ran_on(job, 2).lower(), "2")
    assert "task 2: Exited with exit code 139" in dc.output(job)


def test_a_completed_job_without_a_crash_stays_success() -> None:
    job = dc.submit('srun -l bash -c "echo Segmentation fault is only a word here; echo done"', args=FOUR_NODES)
    assert dc.wait(job) == "COMPLETED"
    assert dc.wait_annotated(job)["label"] == "success"
