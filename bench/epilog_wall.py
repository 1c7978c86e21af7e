"""Epilog wall time for a job whose log is >= 1 GiB, against `cat` of that log to /dev/null, same run.

Needs the dev cluster (`make cluster-up`, root): a real job writes the log through slurmstepd and
the real Epilog collects, diagnoses and annotates it. Its time comes from the Epilog's own
`epilog_done` log line. The Epilog reads only the log's tail (max_log_read_mb), so its time
should not grow with the log: the ratio shows that.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.scan_throughput import make_bundle
from tests import devcluster as dc


def main() -> int:
    if os.geteuid() != 0 or subprocess.run(["scontrol", "ping"], capture_output=True).returncode != 0:
        print("epilog bench: needs root and the dev cluster (make cluster-up); not run")
        return 0
    dc.configure()
    big = make_bundle(Path("/home/alice/bench-bundle"), 1.0) / "logs/job.out"
    os.chown(big, 2001, 2001)
    job = dc.submit(f"cat {big}; exit 139")  # ends like the headline case: the crash is in the log's tail
    assert dc.wait(job, timeout=600) in ("COMPLETED", "FAILED")
    out = dc.JOBS / f"{job}.out"
    t0 = time.perf_counter()
    subprocess.run(["cat", str(out)], stdout=subprocess.DEVNULL, check=True)
    cat_s = time.perf_counter() - t0
    done = [json.loads(line) for line in dc.hook_log(job) if '"epilog_done"' in line]
    label = dc.wait_annotated(job)["label"]
    epilog_s = done[-1]["elapsed_s"]
    print(
        json.dumps(
            {
                "log_bytes": out.stat().st_size,
                "cat_to_devnull_s": round(cat_s, 3),
                "epilog_s": epilog_s,
                "epilog_over_cat": round(epilog_s / cat_s, 2),
                "label": label,
            },
            indent=2,
        )
    )
    out.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
