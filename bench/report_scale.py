"""`slurm-hooks report` at fleet scale: 1,000,000 synthetic sacct rows through the real parsing path.

The rows are written exactly as `sacct -X -P --delimiter=$'\\x1f' -o <report fields>` prints them
(some with multi-line comments, delimiters in comments, jobstats records, free text), then
`slurm-hooks report --input FILE --format json` reads them in a child process (which forks one
worker per CPU: the ratio depends on the core count, and the README says on how many it was taken).
Baseline, same file, same run: `cut -f<AdminComment> | sort | uniq -c` (LC_ALL=C), the shell way to
count labels. Reported: the ratio of wall times (target <= 3x) and the child's peak RSS
(target <= 200 MiB, whatever the row count); also each side's CPU seconds (user + system, its
children included), which a machine loaded by others changes less than wall times.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from slurm_hooks.slurm.accounting import FIELDS
from slurm_hooks.slurm.client import SEP

LABELS = (
    ("success", 80),
    ("cdmm_checkpoint_segfault", 8),
    ("checkpoint_segfault", 1),
    ("app_segfault", 3),
    ("nccl_timeout", 2),
    ("fabric_error", 1),
    ("gpu_xid", 1),
    ("oom_killed", 2),
    ("time_limit", 3),
    ("cancelled", 3),
    ("node_fail", 1),
)
STACKS = (
    ("580.95.05", "on", "3.6.2", "nvidia_gb200"),
    ("580.95.05", "off", "3.6.2", "nvidia_gb200"),
    ("570.172.08", "off", "3.5.9", "nvidia_gb200"),
    ("570.172.08", "off", "3.5.9", "nvidia_h100_80gb_hbm3"),
)
STATE = {
    "success": "COMPLETED",
    "time_limit": "TIMEOUT",
    "cancelled": "CANCELLED by 1001",
    "node_fail": "NODE_FAIL",
    "oom_killed": "OUT_OF_MEMORY",
}


def synthetic_rows(n: int, seed: int = 7) -> bytes:
    return b"".join(synthetic_lines(n, seed))


def synthetic_lines(n: int, seed: int = 7) -> Iterator[bytes]:
    """n sacct rows from 50 racks of 18 nodes, jobs of 1 to 32 nodes, about 270 bytes each."""
    rnd = random.Random(seed)
    labels = [lab for lab, w in LABELS for _ in range(w)]
    for i in range(n):
        job = str(100000 + i)
        rack, first = rnd.randint(1, 50), rnd.randint(1, 18)
        size = rnd.choice((1, 1, 1, 2, 4, 8, 16, 32))
        racks = 1 + (size > 18)  # as many names as NNodes says, as Slurm writes them
        nodes = (
            f"gb-r{rack:02d}-c{first:02d}"
            if size == 1
            else f"gb-r[{rack:02d}-{rack + racks - 1:02d}]-c[01-{size // racks:02d}]"
        )
        label = rnd.choice(labels)
        driver, cdmm, ncore, gpu = rnd.choice(STACKS)
        root = f"gb-r{rack:02d}-c{first:02d}"
        kind = rnd.random()
        if label == "cdmm_checkpoint_segfault" and cdmm == "off":
            label = "checkpoint_segfault" if rnd.random() < 0.1 else "success"  # the headline needs CDMM on
        if size >= 16 and rnd.random() < 0.12:
            label = "nccl_timeout"  # wide jobs fail more often
        if rnd.random() < 0.003:  # one sick node, the root of repeated Xid failures
            label, root, size, nodes = "gpu_xid", "gb-r25-c08", 1, "gb-r25-c08"
        blame = "" if label in ("success", "time_limit", "cancelled") else f" node={root} rank={rnd.randint(0, 31)}"
        if kind < 0.90:  # as the Epilog writes it: no root node where none is to blame (DESIGN.md)
            admin = (
                f"slurm-hooks/v1 label={label}{blame} driver={driver} cdmm={cdmm} ncore={ncore} gpu={gpu} "
                f"exit=0:0 state={STATE.get(label, 'FAILED').split()[0].lower()}"
            )
        elif kind < 0.93:
            admin = "JS1:eyJncHVfdXRpbCI6IDkxLjJ9"
        else:
            admin = "" if kind < 0.98 else "checked by ops"
        comment = "" if kind < 0.99 else ("multi\nline | comment" if kind < 0.995 else f"sep{SEP}inside")
        day = 1 + i * 28 // n
        fields = [
            job,
            STATE.get(label, "FAILED"),
            "0:0",
            "0:0",
            f"2026-11-{day:02d}T01:00:00",
            f"2026-11-{day:02d}T0{rnd.randint(2, 9)}:00:00",
            str(rnd.randint(60, 86400)),
            nodes,
            str(size),
            f"billing={size * 4},cpu={size * 144},gres/gpu={size * 4},mem={size}T,node={size}",
            "batch",
            f"user{rnd.randint(1, 300)}",
            f"acct{rnd.randint(1, 30)}",
            admin,
            comment,
            job,
        ]
        assert len(fields) == len(FIELDS)
        yield (SEP.join(fields) + "\n").encode()


def timed(cmd: list[str]) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MiB) of this one child (wait4: not the largest of all children), and
    CPU seconds of the child and the children it waited for."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[:3]} failed: exit {proc.returncode}")
    return time.perf_counter() - t0, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "sacct.txt"
        with data.open("wb") as out:  # streamed: a forked child's peak RSS counts its parent's pages
            out.writelines(synthetic_lines(args.rows))
        cfg = Path(tmp) / "config.yaml"
        cfg.write_text(f"spool_dir: {tmp}/spool\nlog_file: ''\n")
        col = FIELDS.index("AdminComment") + 1
        baseline = f"cut -d $'\\x1f' -f{col} {data} | sort | uniq -c"
        subject = [
            sys.executable,
            "-m",
            "slurm_hooks",
            "report",
            "--input",
            str(data),
            "--format",
            "json",
            "--since",
            "2026-11-01",
            "--until",
            "2026-12-01",
            "--config",
            str(cfg),
            "-o",
            f"{tmp}/out.json",
        ]
        size = data.stat().st_size
        base_t, subj_t, rss, base_cpu, subj_cpu = [], [], [], [], []
        for _ in range(5):  # interleaved, best of five: machine noise hits both alike (2 CPUs, shared)
            wall, _, cpu = timed(["bash", "-c", baseline])
            base_t.append(wall)
            base_cpu.append(cpu)
            wall, peak, cpu = timed(subject)
            subj_t.append(wall)
            subj_cpu.append(cpu)
            rss.append(peak)
    b, s, rss_mib = min(base_t), min(subj_t), max(rss)
    print(f"report_scale: {args.rows:,} rows ({size / 2**20:.0f} MiB of sacct output)")
    print(f"  sort | uniq -c on the label column: {b:.2f} s")
    print(f"  slurm-hooks report --format json:   {s:.2f} s  = {s / b:.2f}x the baseline (target <= 3x)")
    print(f"  peak RSS of the report: {rss_mib:.0f} MiB (target <= 200 MiB)")
    print(f"  CPU seconds: baseline {min(base_cpu):.2f}, report {min(subj_cpu):.2f} ({os.cpu_count()} CPUs)")
    print(f"  wall ratio of each round: {', '.join(f'{x / y:.2f}' for x, y in zip(subj_t, base_t, strict=True))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
