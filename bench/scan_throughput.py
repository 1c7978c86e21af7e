"""Diagnose a bundle whose job log is >= 1 GiB of training output; compare with grep -E in the same run.

Prints the throughput ratio (grep time / diagnose time: > 1 means faster than grep) and the peak RSS
of `slurm-hooks diagnose`. Ratios, not absolute times: both run on the same file, warm cache.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.peak import PROBE, peak_mib
from slurm_hooks.rules import load_rule_pack

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "slurm_hooks/examples/cdmm-checkpoint-segfault"


def _block(seed: int) -> bytes:
    """~4 MiB of what a 64-rank Megatron job prints: iterations, NCCL INFO, warnings, timers."""
    lines = []
    for i in range(2800):
        r = (i * 7 + seed) % 64
        it = 1000 + seed * 100 + i // 64
        lines.append(
            f"{r:>2}:  [2026-11-27 03:{(i // 60) % 50:02d}:{i % 60:02d}] iteration {it:>8}/  100000 | "
            f"consumed samples: {it * 1024:>12} | elapsed time per iteration (ms): 4108.{i % 10} | "
            f"throughput per GPU (TFLOP/s/GPU): 1181.{r} | learning rate: 2.900000E-04 | global batch size:"
            f"  1024 | lm loss: 2.37{i % 100:02d}E+00 | loss scale: 1.0 | grad norm: 0.2{r % 10} |"
        )
        if i % 5 == 0:
            lines.append(
                f"{r:>2}: gb-r07-c0{r // 32 + 1}:15201{r:02d}:15201{r:02d} [{r % 4}] NCCL INFO Channel "
                f"{i % 32:02d}/0 : {r} -> {(r + 1) % 64} via P2P/CUMEM/read"
            )
        if i % 50 == 0:
            lines.append(
                f"{r:>2}: /usr/local/lib/python3.12/dist-packages/torch/utils/checkpoint.py:86: UserWarning: "
                "None of the inputs have requires_grad=True. Gradients will be None"
            )
        if i % 200 == 0:
            lines.append(
                f"{r:>2}: [rank{r}]:[W1127 03:10:{i % 60:02d}.780083894 ProcessGroupNCCL.cpp:5023] Warning: "
                "TORCH_NCCL_AVOID_RECORD_STREAMS is the default now (function operator())"
            )
    return ("\n".join(lines) + "\n").encode()


def make_bundle(target: Path, size_gib: float) -> Path:
    if (target / "job.json").exists() and (target / "logs/job.out").stat().st_size >= size_gib * (1 << 30):
        return target
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(DEMO, target)
    tail = (DEMO / "logs/job.out").read_bytes()
    blocks = [_block(s) for s in range(8)]
    with open(target / "logs/job.out", "wb") as fh:
        written = 0
        n = 0
        while written < size_gib * (1 << 30):
            written += fh.write(blocks[n % len(blocks)])
            n += 1
        fh.write(tail)  # the crash comes at the end, after a GiB of training
    return target


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env)
    return time.perf_counter() - t0, proc


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-gib", type=float, default=1.0)
    ap.add_argument("--dir", type=Path, default=ROOT / "bench/out/big-bundle")
    args = ap.parse_args()
    bundle = make_bundle(args.dir, args.size_gib)
    log = bundle / "logs/job.out"
    size = log.stat().st_size
    keywords = load_rule_pack().keywords("log")
    grep = ["grep", "-E", "-a", "-n", "-b"]
    for kw in keywords:
        grep += ["-e", re.escape(kw)]
    grep.append(str(log))

    subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache for both
    t_grep, g = timed(grep)
    # The defaults, whatever /etc/slurm-hooks/config.yaml on this machine says (an empty file is all defaults).
    config = args.dir.parent / "defaults.yaml"
    config.write_text("")
    env = {**os.environ, "SLURM_HOOKS_CONFIG": str(config)}
    t_diag, d = timed([sys.executable, "-c", PROBE, "diagnose", "--json", str(bundle)], env)
    if d.returncode != 0:
        print(d.stderr.decode(), file=sys.stderr)
        return 1
    label = json.loads(d.stdout)["label"]
    report = {
        "log_bytes": size,
        "cores": os.cpu_count(),
        "grep_E_seconds": round(t_grep, 3),
        "grep_matched_lines": g.stdout.count(b"\n"),
        "diagnose_seconds": round(t_diag, 3),
        "diagnose_label": label,
        "throughput_ratio_vs_grep": round(t_grep / t_diag, 2),
        "diagnose_MiB_per_s": round(size / t_diag / (1 << 20), 1),
        "diagnose_peak_rss_MiB": round(peak_mib(d.stderr.decode()), 1),
        "target": ">= 1.5x grep, <= 100 MiB RSS",
    }
    print(json.dumps(report, indent=2))
    return 0 if label == "cdmm_checkpoint_segfault" else 1


if __name__ == "__main__":
    raise SystemExit(main())
