"""NVIDIA's restart agent (nvidia-resiliency-ext, deterministic mode) on a corpus case's logs.

What it is given: it reads one training log, so each case becomes one file: the bundle's job logs
(`logs/`, every file in name order, as they are), then each node's kernel window (`kernel/<node>.log`)
with every line prefixed `node <name> kernel: `, the form its node extractor reads (identity.py
`extract_node`: `node[=:\\s]+NAME`). It sees no Slurm record (job.json) and no node facts.

What it answers (bench/nvrx_run.py): `primary_failure`, with `failure_class` (its pattern registry,
l0/registry.py), `signature`, `node`, `rank` and `gpu` where its extractors found them, or none.
How that is mapped: the class to a slurm-hooks label by LABEL_OF (NVLink and PCIe device lines to
`fabric_error`, an `infra_policy_event` by its words); no primary failure is `unknown`; its `node`
and its `rank` (a string of digits) as root node and rank, and where it gives none, none.
It has no confidence mark: every answer counts as sure (accuracy_score.DEFINITIONS).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.accuracy_score import Answer

VERSION = "0.7.0"  # bench/nvrx_venv.sh installs this one
VENV = Path(os.environ.get("SLURM_HOOKS_NVRX_VENV") or Path.home() / ".cache" / "slurm-hooks" / f"nvrx-{VERSION}")
RUNNER = Path(__file__).with_name("nvrx_run.py")
LABEL_OF = {
    "gpu_hardware_fault": "gpu_xid",
    "peer_gpu_memory_access_failure": "gpu_xid",
    "infra_policy_event": "unknown",  # by its words: preempted, node_fail
    "time_limit": "time_limit",
    "user_cancelled": "cancelled",
    "observed_exception": "app_exception",
    "configuration_validation_failure": "app_exception",
    "argument_validation_failure": "app_exception",
    "artifact_or_path_not_found": "app_exception",
    "checkpoint_compatibility_mismatch": "app_exception",
    "shape_mismatch": "app_exception",
    "filesystem_permission_denied": "app_exception",
    "cuda_oom": "app_exception",  # torch's OutOfMemoryError is a raised exception
    "nan_or_inf": "app_exception",
    "bad_token_or_window": "app_exception",
    "framework_crash": "app_segfault",  # segfault, illegal instruction, core dumped: it knows no save
    "linux_oom_kill_confirmation": "oom_killed",
    "observed_distributed_operation_timeout": "nccl_timeout",
    "nccl_rdma_port_error_event": "fabric_error",
    "nccl_cascade": "nccl_timeout",
    "cuda_previous_error_cascade": "unknown",
    "terminal_transport_failure_surface": "unknown",
    "observed_failure": "unknown",  # a traceback episode whose line no registry pattern names (l0/assembly.py)
}


def available(venv: Path = VENV) -> tuple[str | None, str]:
    """NVRx's version line (None where its venv is missing) and, where missing, why."""
    stamp = venv / "NVRX_VERSION"
    if not stamp.is_file():
        return None, f"{venv} is missing (bench/nvrx_venv.sh makes it once, from PyPI)"
    return stamp.read_text().strip(), ""


def case_log(case: Path, out: Path) -> None:
    """The case's logs as the one training log the agent reads (this module's docstring)."""
    with out.open("wb") as f:
        logs = case / "logs"
        for part in sorted(p for p in logs.rglob("*") if p.is_file()) if logs.is_dir() else []:
            data = part.read_bytes()
            f.write(data if data.endswith(b"\n") or not data else data + b"\n")
        kernel = case / "kernel"
        for part in sorted(kernel.glob("*.log")) if kernel.is_dir() else []:
            prefix = f"node {part.name.removesuffix('.log')} kernel: ".encode()
            f.writelines(prefix + line + b"\n" for line in part.read_bytes().splitlines())


def _label(failure: dict[str, Any]) -> str:
    cls, words = str(failure.get("failure_class") or ""), str(failure.get("signature") or "").lower()
    if cls == "gpu_hardware_fault" and ("nvlink" in words or "pcie" in words):
        return "fabric_error"
    if cls == "infra_policy_event":
        return "preempted" if "preempt" in words else "node_fail" if "node fail" in words else "unknown"
    return LABEL_OF.get(cls, "unknown")


def to_answer(rec: dict[str, Any]) -> Answer:
    if "error" in rec:
        return Answer(None, None, None, error=str(rec["error"]))
    failure = rec.get("primary_failure")
    if not isinstance(failure, dict):
        return Answer("unknown", None, None, said="no primary failure")
    rank = str(failure.get("rank") or "")
    return Answer(
        _label(failure),
        failure.get("node") or None,
        int(rank) if rank.isdigit() else None,
        said=str(failure.get("failure_class")),
    )


def answers(cases: list[tuple[str, Path]], venv: Path = VENV) -> dict[str, Answer]:
    """NVRx's answer per case id, all cases in one run of its venv's python (bounded in time)."""
    with tempfile.TemporaryDirectory(prefix="nvrx-") as tmp:
        logs = []
        for i, (_, path) in enumerate(cases):
            logs.append(Path(tmp) / f"{i}.log")
            case_log(path, logs[-1])
        why = "no answer: the run ended early"
        try:
            run = subprocess.run(
                [str(venv / "bin" / "python"), str(RUNNER)],
                input="".join(f"{p}\n" for p in logs),
                capture_output=True,
                text=True,
                timeout=60 + 30 * len(cases),
                cwd=tmp,
            )
            out = run.stdout
            if run.returncode:  # its interpreter or import failed: say how, on every case it left
                why += f" (exit {run.returncode}: {(run.stderr.strip().splitlines() or [''])[-1][:200]})"
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            why += f" (timed out after {exc.timeout:g} s)"
        by_log = {}
        for line in out.splitlines():
            rec = json.loads(line)
            by_log[rec["log"]] = rec
    return {cid: to_answer(by_log.get(str(log), {"error": why})) for (cid, _), log in zip(cases, logs, strict=True)}
