"""Prolog, TaskProlog and Epilog run by a real slurmd: what jobs see, and that the node never drains."""

from __future__ import annotations

import subprocess
import time

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm


@pytest.fixture(scope="module", autouse=True)
def cluster():
    dc.require_cluster()
    yield
    dc.configure()


def exports(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line.startswith("SLURM_HOOKS_"))


SHOW_ENV = "env | grep ^SLURM_HOOKS_ | sort; echo ---; srun bash -c 'env | grep ^SLURM_HOOKS_ | sort'"


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        (
            "gb200-cdmm-driver",
            {
                "SLURM_HOOKS_CDMM": "on",
                "SLURM_HOOKS_NVIDIA_DRIVER": "580.95.05",
                "SLURM_HOOKS_CHECKPOINT_SYNC": "1",
                "SLURM_HOOKS_GPU_MODEL": "NVIDIA GB200",
                "SLURM_HOOKS_GPU_COUNT": "4",
                "SLURM_HOOKS_NCORE_VERSION": "3.6.2",
            },
        ),
        ("gb200-numa", {"SLURM_HOOKS_CDMM": "off", "SLURM_HOOKS_NVIDIA_DRIVER": "580.95.05"}),
        ("gb200-r600-empty", {"SLURM_HOOKS_CDMM": "unknown", "SLURM_HOOKS_NVIDIA_DRIVER": "600.12.01"}),
        ("no-gpu", {"SLURM_HOOKS_CDMM": "unknown", "SLURM_HOOKS_NVIDIA_DRIVER": "", "SLURM_HOOKS_GPU_MODEL": ""}),
    ],
)
def test_job_environment_carries_the_node_facts(host: str, expected: dict[str, str]) -> None:
    dc.configure(host)
    job = dc.submit(SHOW_ENV)
    assert dc.wait(job) == "COMPLETED"
    batch, step = dc.output(job).split("---\n")
    for seen in (exports(batch), exports(step)):  # the batch script and every srun task
        for key, value in expected.items():
            assert seen.get(key) == value, (key, seen)
        assert ("SLURM_HOOKS_CHECKPOINT_SYNC" in seen) == (expected["SLURM_HOOKS_CDMM"] == "on")


def test_state_is_private_to_the_job_and_removed_by_the_epilog() -> None:
    dc.configure()
    job = dc.submit("sleep 4")
    state = dc.state_dir(dc.FIRST) / "jobs" / job
    deadline = time.monotonic() + 60
    while not state.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state.stat().st_gid == 2001 and oct(state.stat().st_mode & 0o777) == "0o750"
    as_alice = subprocess.run(["runuser", "-u", "alice", "--", "cat", str(state / "env")], capture_output=True)
    as_bob = subprocess.run(["runuser", "-u", "bob", "--", "cat", str(state / "env")], capture_output=True)
    assert as_alice.returncode == 0 and b"SLURM_HOOKS_CDMM=on" in as_alice.stdout
    assert as_bob.returncode != 0
    assert dc.wait(job) == "COMPLETED"
    assert not state.exists()
    assert any('"event": "state_removed"' in line for line in dc.hook_log(job))


def test_hung_facts_collection_still_starts_the_job_and_keeps_the_node_up() -> None:
    dc.configure(
        extra="ncore_sources: [{type: command, argv: [/bin/sleep, '300']}]\nbudgets: {prolog_s: 2, command_s: 200}\n"
    )
    started = time.monotonic()
    job = dc.submit("echo ran; env | grep -c ^SLURM_HOOKS_ || true")
    assert dc.wait(job) == "COMPLETED"
    assert time.monotonic() - started < 40
    assert dc.output(job).startswith("ran\n0\n")  # the job ran, without facts, rather than not at all
    assert any('"event": "budget_exceeded"' in line for line in dc.hook_log(job))
    assert dc.node_state() == "idle"
    # the hung helper died with the hook instead of lingering on the node
    assert subprocess.run(["pgrep", "-f", "^/bin/sleep 300$"], capture_output=True).returncode == 1


def test_broken_facts_and_unwritable_state_keep_the_node_up() -> None:
    dc.configure("garbage-params", extra="state_dir: /proc/slurm-hooks-not-here\n")
    job = dc.submit("echo ran")
    assert dc.wait(job) == "COMPLETED" and dc.output(job) == "ran\n"
    assert any('"event": "hook_failed"' in line for line in dc.hook_log(job))
    assert dc.node_state() == "idle"


def test_invalid_config_is_logged_and_the_hooks_fail_safe() -> None:
    dc.write_config("budgets: {prolog_s: soon}\n")
    job = dc.submit("echo ran")
    assert dc.wait(job) == "COMPLETED" and dc.output(job) == "ran\n"
    lines = dc.hook_log(job)
    invalid = [line for line in lines if '"event": "config_invalid"' in line and "budgets.prolog_s" in line]
    assert invalid and all("last good copy" in line or "shadow mode" in line for line in invalid)  # never `all`
    assert dc.node_state() == "idle"
