"""Shared test helpers: where the bundles live, and a tiny bundle writer for generated cases."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from slurm_hooks.rules import RulePack, load_rule_pack

TESTS = Path(__file__).parent
BUNDLES = TESTS / "bundles"
SCENARIOS = TESTS.parent.parent / "shared" / "scenarios"

# Property tests: a small example budget in `make test`, a large one in `make reliability`
# (HYPOTHESIS_PROFILE=reliability). No deadline: the machine is shared, timing is not the property.
settings.register_profile("quick", max_examples=60, deadline=None)
settings.register_profile("reliability", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


# A one-node job that segfaults during a checkpoint save: the smallest bundle with a known verdict.
JOB = {
    "job_id": "42",
    "state": "FAILED",
    "exit_code": "139:0",
    "start_time": "2026-01-05T10:00:00+00:00",
    "end_time": "2026-01-05T11:00:00+00:00",
    "nodes": ["n1"],
}
CRASH = "0: [2026-01-05 10:30:00] saving checkpoint at iteration 10\n0: !!!!!!! Segfault encountered !!!!!!!\n"


@pytest.fixture(autouse=True)
def private_config_cache(tmp_path_factory, monkeypatch) -> None:
    """Tests that load configs keep their JSON cache out of /run/slurm-hooks."""
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path_factory.mktemp("config-cache")))


@pytest.fixture(autouse=True)
def defaults_config(request, tmp_path_factory, monkeypatch) -> None:
    """Tests that need no cluster run the CLI with the defaults (an empty config file), not with
    whatever /etc/slurm-hooks/config.yaml the shared dev machine holds right now (another
    worktree's cluster-up may have written keys this version does not know)."""
    if request.node.get_closest_marker("slurm") is None:
        empty = tmp_path_factory.getbasetemp() / "defaults-config.yaml"
        empty.touch()
        monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(empty))


@pytest.fixture(scope="session")
def pack() -> RulePack:
    return load_rule_pack()


def write_bundle(
    root: Path, job: dict, logs: dict[str, str | bytes], facts: list[dict] = (), kernel: dict[str, str] | None = None
) -> Path:
    (root / "logs").mkdir(parents=True, exist_ok=True)
    (root / "nodes").mkdir(exist_ok=True)
    (root / "job.json").write_text(json.dumps(job))
    for name, body in logs.items():
        path = root / "logs" / name
        path.write_bytes(body if isinstance(body, bytes) else body.encode())
    for f in facts:
        (root / "nodes" / f"{f['node']}.json").write_text(json.dumps(f))
    if kernel:
        (root / "kernel").mkdir(exist_ok=True)
        for node, body in kernel.items():
            (root / "kernel" / f"{node}.log").write_text(body)
    return root
