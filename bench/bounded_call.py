"""What bounding a pyslurm call costs: one fork, a pipe and a pickle per call (slurm/bounded.py).

In a process shaped like the Epilog's (pyslurm imported when it is installed, the Epilog's modules
loaded), times the same call made in-process and through `call_forked`; the difference is the
price of the per-call budget; beside it, starting `true` as the CLI backend starts each command. With the dev cluster up (root), also a real `SlurmPyslurm.job` of a
finished job, bounded, against its two libslurm reads made in-process. Medians of interleaved runs.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import slurm_hooks.hooks.deps  # noqa: F401  (the Epilog's modules: the address space a fork copies)
from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.slurm.bounded import call_forked
from slurm_hooks.slurm.client import JobRecord

RUNS = 200


def median_ms(call: Callable[[], object], runs: int = RUNS) -> float:
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        call()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1000


def a_finished_job() -> str | None:
    """The newest finished job accounting knows, when a cluster answers."""
    try:
        out = subprocess.run(["sacct", "-a", "-X", "-n", "-P", "-o", "JobIDRaw,State"], capture_output=True)
    except OSError:
        return None
    rows = [line.split("|") for line in out.stdout.decode().splitlines()]
    ids = [row[0] for row in rows if len(row) == 2 and row[1] in ("COMPLETED", "FAILED")]
    return ids[-1] if out.returncode == 0 and ids else None


def main() -> int:
    try:
        import pyslurm
    except ImportError:
        pyslurm = None
    record = JobRecord(job_id="7", state="FAILED", exit_code="1:0", node_list="gb-[01-08]", comment="x" * 200)
    report: dict[str, object] = {"pyslurm_imported": pyslurm is not None}
    direct = median_ms(lambda: JobRecord(**vars(record)))
    forked = median_ms(lambda: call_forked("bench", lambda: JobRecord(**vars(record)), 10.0))
    report["plain_call_ms"] = {"in_process": round(direct, 3), "forked": round(forked, 2)}
    report["fork_cost_per_call_ms"] = round(forked - direct, 2)
    command = median_ms(lambda: run_bounded(["true"], 10.0, env=TOOL_ENV))
    report["cli_backend_command_start_ms"] = round(command, 2)  # what the CLI pays per call before Slurm
    job = a_finished_job() if pyslurm is not None else None
    if pyslurm is not None and job is not None:
        from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm

        slurm = SlurmPyslurm(pyslurm, 10.0)
        inline = median_ms(lambda: (slurm._live(job), slurm._stored(job)), 50)
        bounded = median_ms(lambda: slurm.job(job), 50)
        report["real_job_read_ms"] = {"job": job, "in_process": round(inline, 2), "bounded": round(bounded, 2)}
        report["real_job_read_bounded_vs_in_process"] = round(bounded / inline, 2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
