"""Drive the real dev cluster (deploy/dev-cluster/cluster-up.sh): submit as a real user, wait, read back."""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path
from types import ModuleType

import pytest

CONFIG = Path("/etc/slurm-hooks/config.yaml")  # the controller's hook and the operator's CLI read this one
NODE_CONFIGS = Path("/etc/slurm-hooks/nodes")  # each node's hooks read <node>.yaml (cluster-up.sh)
HOSTS = Path("/var/lib/slurm-hooks-dev/hosts")
KERNEL_LOGS = Path("/var/lib/slurm-hooks-dev/kernel")  # each node's stand-in kernel log: <node>.log
FIRST = os.uname().nodename.split(".")[0]  # the node named after this host: single-node jobs run here
HOOK_LOG = Path("/var/log/slurm-hooks.log")
JOBS = Path("/home/alice/jobs")
FINAL = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "OUT_OF_MEMORY",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
}


def run(*cmd: str, timeout: float = 30, check: bool = True) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} -> {out.returncode}: {out.stderr.strip()}")
    return out.stdout


def slurm_line() -> str:
    """The running Slurm's major.minor ('22.05', '24.11'): the lane the tests run on."""
    return ".".join(run("scontrol", "--version").split()[-1].split(".")[:2])


def nodes() -> list[str]:
    """The compute nodes cluster-up.sh started: FIRST, then FIRST-2, -3, -4 (or FIRST alone)."""
    try:
        return Path("/run/slurm-hooks-dev/nodes").read_text().split()
    except OSError:
        return [FIRST]


def require_cluster(min_nodes: int = 1) -> None:
    """Skip where no dev cluster runs; fail instead when the run demands one (make test, CI)."""
    reason = None
    if os.geteuid() != 0:
        reason = "the dev-cluster tests run as root (they rewrite /etc/slurm-hooks/config.yaml)"
    elif subprocess.run(["scontrol", "ping"], capture_output=True).returncode != 0 or not HOSTS.is_dir():
        reason = "no dev cluster running: `make cluster-up` starts one"
    elif len(nodes()) < min_nodes:
        reason = f"the dev cluster runs {len(nodes())} node(s), this test needs {min_nodes}: plain `make cluster-up`"
    if reason:
        if os.environ.get("SLURM_HOOKS_REQUIRE_CLUSTER") == "1":
            pytest.fail(reason)
        pytest.skip(reason)


HOOKS_PYTHON = "/opt/slurm-hooks/venv/bin/python"  # what the cluster's hooks run (cluster-up.sh)


def require_pyslurm() -> ModuleType:
    """pyslurm here and in the hooks' venv (`make pyslurm`, then cluster-up); skip, or fail in CI.
    A Slurm that no pyslurm release exists for (26.05) is tested through the CLI alone: a skip.
    25.05 and 25.11 have releases (TAGS) that the source lanes build from shared/vendor."""
    from slurm_hooks.slurm.pyslurm_matrix import SOURCES, TAGS

    if (line := slurm_line()) not in SOURCES and line not in TAGS:
        pytest.skip(f"no pyslurm exists for Slurm {line} (pyslurm_matrix.SOURCES): the CLI backend is what runs here")
    try:
        import pyslurm
    except Exception as exc:
        reason = f"pyslurm does not import in the test venv ({type(exc).__name__}: {exc}): run `make pyslurm`"
    else:
        hooks = subprocess.run([HOOKS_PYTHON, "-c", "import pyslurm"], capture_output=True, text=True)
        if hooks.returncode == 0:
            return pyslurm
        reason = f"pyslurm does not import in {HOOKS_PYTHON}: `make pyslurm`, then `make cluster-up`"
    if os.environ.get("SLURM_HOOKS_REQUIRE_CLUSTER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def configure(
    host: str = "gb200-cdmm-driver", extra: str = "", hosts: dict[str, str] | None = None, kernel_files: bool = False
) -> None:
    """Every node's config (and the controller's): `host` fixture unless `hosts` names another for a
    node; each node its own state dir, and with `kernel_files` its own kernel log (KERNEL_LOGS)."""

    # `extra` replaces the default ncore_sources rather than repeating the key (a key twice is an error)
    ncore = "" if "ncore_sources:" in extra else "ncore_sources: [{type: file, path: /etc/ncore-release}]\n"

    def text(fixture: str, own: str) -> str:
        return f"host_root: {HOSTS / fixture}\n{ncore}log_file: {HOOK_LOG}\n{extra}{own}"

    CONFIG.write_text(text(host, ""))
    for node in nodes():
        own = "" if "state_dir:" in extra else f"state_dir: {state_dir(node)}\n"
        if kernel_files:
            own += f"kernel_log_file: {KERNEL_LOGS / node}.log\n"
        (NODE_CONFIGS / f"{node}.yaml").write_text(text((hosts or {}).get(node, host), own))


def write_config(text: str) -> None:
    """The same raw text as every config (for broken-config tests)."""
    for path in [CONFIG, *(NODE_CONFIGS / f"{node}.yaml" for node in nodes())]:
        path.write_text(text)


def state_dir(node: str) -> Path:
    return Path("/run/slurm-hooks") / node


def submit(script: str, user: str = "alice", args: str = "") -> str:
    JOBS.mkdir(exist_ok=True)
    os.chown(JOBS, 2001, 2001)
    body = JOBS / f"job-{time.monotonic_ns()}.sh"
    body.write_text("#!/bin/bash\n" + script + "\n")
    os.chown(body, 2001, 2001)
    cmd = f"sbatch --parsable -o {JOBS}/%j.out {args} {shlex.quote(str(body))}"
    return run("runuser", "-l", user, "-c", cmd).strip().split(";")[0]


def job_field(job_id: str, key: str) -> str | None:
    """One `Key=value` of `scontrol show job`; None when the job or the key is not there."""
    out = run("scontrol", "show", "job", job_id, check=False)
    return next((word.split("=", 1)[1] for word in out.split() if word.startswith(f"{key}=")), None)


def state(job_id: str) -> str:
    return job_field(job_id, "JobState") or "UNKNOWN"


def wait(job_id: str, timeout: float = 120) -> str:
    """Until the job and its epilogs are done (COMPLETING is not done)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        current = state(job_id)
        if current in FINAL:
            return current
        time.sleep(0.3)
    raise AssertionError(f"job {job_id} still {state(job_id)} after {timeout}s")


def output(job_id: str) -> str:
    return (JOBS / f"{job_id}.out").read_text()


def node_state() -> str:
    """The nodes' states, each once: "idle" when every node is idle."""
    return ",".join(sorted(set(run("sinfo", "-h", "-N", "-o", "%T").split())))


def hook_log(job_id: str) -> list[str]:
    marker = f'"job_id": "{job_id}"'
    return [line for line in HOOK_LOG.read_text().splitlines() if marker in line] if HOOK_LOG.exists() else []


SEP = "\x1f"


def sacct_fields(job_id: str, fields: str = "State,Comment,AdminComment") -> list[str]:
    out = run("sacct", "-n", "-X", "-P", f"--delimiter={SEP}", "-j", job_id, "-o", fields)
    return out.rstrip("\n").split(SEP)


def decode_job(job_id: str) -> dict[str, str] | None:
    """The annotation as an operator would read it back: `slurm-hooks decode --job N`."""
    import json
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "decode", "--job", job_id], capture_output=True, text=True, timeout=30
    )
    return json.loads(out.stdout) if out.returncode == 0 else None


def wait_annotated(job_id: str, timeout: float = 30) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fields := decode_job(job_id):
            return fields
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} has no annotation after {timeout}s: {sacct_fields(job_id)}")


def wait_running(job_id: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while state(job_id) != "RUNNING":
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} not running: {state(job_id)}")
        time.sleep(0.2)
