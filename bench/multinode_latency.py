"""From a four-node job's end to its slurm-hooks record in sacct, against the same job's bare sacct row.

Needs the four-node dev cluster (`make cluster-up`, root). Each of 10 jobs is the headline case
(16 ranks on 4 nodes, one segfaults after a checkpoint save, the rest time out) and stamps its own
end as the batch script's last act. One sacct call per poll sees both: the job's final row (the
baseline: accounting knows the job ended) and our AdminComment record (merged from the four
nodes, diagnosed, annotated). Target: the record visible within 5 s of the job's end.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from slurm_hooks.slurm.annotation import MARK
from tests import devcluster as dc
from tests.test_cluster_multinode import LAYOUT, TASK

JOBS = 10
TARGET_S = 5.0


def one_job(task: Path) -> dict[str, float]:
    job = dc.submit(
        f"export CRASH_RANK=9 WATCHDOG_AFTER=1\nsrun -l --kill-on-bad-exit=0 {task}\necho JOB_END=$(date +%s.%N)",
        args="-p multi -N4 -n16 --overcommit",
    )
    row_at = record_at = None
    deadline = time.monotonic() + 120
    while record_at is None and time.monotonic() < deadline:
        fields = dc.sacct_fields(job, "State,AdminComment")
        now = time.time()
        if row_at is None and fields[0] in dc.FINAL:
            row_at = now
        if MARK in fields[-1]:
            record_at = now
        time.sleep(0.05)
    ended = float(next(line for line in dc.output(job).splitlines() if line.startswith("JOB_END=")).split("=")[1])
    if row_at is None or record_at is None:
        raise SystemExit(f"job {job}: no sacct row or no record within 120 s")
    row_s, record_s = row_at - ended, record_at - ended
    return {"job": float(job), "row_s": row_s, "record_s": record_s, "ratio": record_s / max(row_s, 0.05)}


def main() -> int:
    if (
        os.geteuid() != 0
        or subprocess.run(["scontrol", "ping"], capture_output=True).returncode != 0
        or len(dc.nodes()) < 4
    ):
        print("multinode latency bench: needs root and the four-node dev cluster (make cluster-up); not run")
        return 0
    task = dc.JOBS / "rank-task.sh"
    dc.JOBS.mkdir(exist_ok=True)
    task.write_text(TASK.replace("KERNEL_LOGS", str(dc.KERNEL_LOGS)))
    task.chmod(0o755)
    dc.configure(hosts=LAYOUT, kernel_files=True)
    try:
        runs = [one_job(task) for _ in range(JOBS)]
    finally:
        dc.configure()
    record = statistics.median(r["record_s"] for r in runs)
    print(
        json.dumps(
            {
                "jobs": JOBS,
                "nodes_per_job": 4,
                "median_bare_row_s": round(statistics.median(r["row_s"] for r in runs), 3),
                "median_record_s": round(record, 3),
                "median_record_over_row": round(statistics.median(r["ratio"] for r in runs), 2),
                "max_record_s": round(max(r["record_s"] for r in runs), 3),
                "target_s": TARGET_S,
                "median_within_target": record <= TARGET_S,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
