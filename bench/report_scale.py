"""`slurm-hooks report` at fleet scale: 1,000,000 synthetic sacct rows through the real parsing path.

The rows are written exactly as `sacct -X -P --delimiter=$'\\x1f' -o <report fields>` prints them
(some with multi-line comments, delimiters in comments, jobstats records, free text), then
`slurm-hooks report --input FILE --format json` reads them in a child process.
Baseline, same file, same run: `cut -f<AdminComment> | sort | uniq -c` (LC_ALL=C), the shell way to
count labels. Reported: the ratio of wall times (target <= 3x) and the child's peak RSS
(target <= 200 MiB, whatever the row count).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurm_hooks.slurm.accounting import FIELDS
from slurm_hooks.slurm.client import SEP

LABELS = (("success", 80), ("cdmm_checkpoint_segfault", 3), ("checkpoint_segfault", 1), ("app_segfault", 3),
          ("nccl_timeout", 2), ("fabric_error", 1), ("gpu_xid", 1), ("oom_killed", 2), ("time_limit", 3),
          ("cancelled", 3), ("node_fail", 1))
STACKS = (("580.95.05", "on", "3.6.2", "nvidia_gb200"), ("580.95.05", "off", "3.6.2", "nvidia_gb200"),
          ("570.172.08", "off", "3.5.9", "nvidia_gb200"), ("570.172.08", "off", "3.5.9", "nvidia_h100_80gb_hbm3"))
STATE = {"success": "COMPLETED", "time_limit": "TIMEOUT", "cancelled": "CANCELLED by 1001", "node_fail": "NODE_FAIL",
         "oom_killed": "OUT_OF_MEMORY"}


def synthetic_rows(n: int, seed: int = 7) -> bytes:
    """n rows of 18 racks x 18 nodes ... 50 racks; about 100 bytes each."""
    rnd = random.Random(seed)
    labels = [lab for lab, w in LABELS for _ in range(w)]
    out = []
    for i in range(n):
        job = str(100000 + i)
        rack, first = rnd.randint(1, 50), rnd.randint(1, 18)
        size = rnd.choice((1, 1, 1, 2, 4, 8, 16, 32))
        nodes = f"gb-r{rack:02d}-c{first:02d}" if size == 1 else \
            f"gb-r[{rack:02d}-{min(rack + size // 18 + 1, 99):02d}]-c[01-{min(size, 18):02d}]"
        label = rnd.choice(labels)
        driver, cdmm, ncore, gpu = rnd.choice(STACKS)
        root = f"gb-r{rack:02d}-c{first:02d}"
        kind = rnd.random()
        if label == "cdmm_checkpoint_segfault" and cdmm == "off":
            label = "checkpoint_segfault" if rnd.random() < 0.3 else "success"  # the headline needs CDMM on
        blame = "" if label in ("success", "time_limit", "cancelled") else f" node={root} rank={rnd.randint(0, 31)}"
        if kind < 0.90:  # as the Epilog writes it: no root node where none is to blame (DESIGN.md)
            admin = (f"slurm-hooks/v1 label={label}{blame} driver={driver} cdmm={cdmm} ncore={ncore} gpu={gpu} "
                     f"exit=0:0 state={STATE.get(label, 'FAILED').split()[0].lower()}")
        elif kind < 0.93:
            admin = "JS1:eyJncHVfdXRpbCI6IDkxLjJ9"
        else:
            admin = "" if kind < 0.98 else "checked by ops"
        comment = "" if kind < 0.99 else ("multi\nline | comment" if kind < 0.995 else f"sep{SEP}inside")
        day = 1 + i * 28 // n
        fields = [job, STATE.get(label, "FAILED"), "0:0", "0:0", f"2026-11-{day:02d}T01:00:00",
                  f"2026-11-{day:02d}T0{rnd.randint(2, 9)}:00:00", str(rnd.randint(60, 86400)), nodes, str(size),
                  f"billing={size * 4},cpu={size * 144},gres/gpu={size * 4},mem={size}T,node={size}", "batch",
                  f"user{rnd.randint(1, 300)}", f"acct{rnd.randint(1, 30)}", admin, comment, job]
        assert len(fields) == len(FIELDS)
        out.append(SEP.join(fields))
    return ("\n".join(out) + "\n").encode()


def timed(cmd: str | list[str], shell: bool = False) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, shell=shell, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "sacct.txt"
        data.write_bytes(synthetic_rows(args.rows))
        cfg = Path(tmp) / "config.yaml"
        cfg.write_text(f"spool_dir: {tmp}/spool\nlog_file: ''\n")
        col = FIELDS.index("AdminComment") + 1
        baseline = f"cut -d $'\\x1f' -f{col} {data} | sort | uniq -c"
        subject = [sys.executable, "-m", "slurm_hooks", "report", "--input", str(data), "--format", "json",
                   "--since", "2026-11-01", "--until", "2026-12-01", "--config", str(cfg), "-o", f"{tmp}/out.json"]
        base_t, subj_t = [], []
        for _ in range(2):  # interleaved, best of two: machine noise hits both alike
            base_t.append(timed(["bash", "-c", baseline]))
            subj_t.append(timed(subject))
        rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    b, s = min(base_t), min(subj_t)
    print(f"report_scale: {args.rows:,} rows ({data.stat().st_size if data.exists() else 0} bytes)")
    print(f"  sort | uniq -c on the label column: {b:.2f} s")
    print(f"  slurm-hooks report --format json:   {s:.2f} s  = {s / b:.2f}x the baseline (target <= 3x)")
    print(f"  peak RSS of the report: {rss_mib:.0f} MiB (target <= 200 MiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
