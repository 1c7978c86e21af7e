"""Diagnosis time and peak RSS by job size (issue 17), against one ripgrep pass over the same files.

For 18, 144, 576, 1,152 and 2,304 nodes (bench/scale_bundle.py: 4 ranks a node, NCCL INFO lines,
one crc32 segfault in a save, a watchdog timeout and a 12-frame traceback from every other rank,
200 kernel lines a node), `slurm-hooks diagnose --json` runs with the shipped defaults as the
Epilog would run it (a fresh process), and `rg` searches the same files for the same keywords
in the same run. Targets: time grows linearly (2,304 nodes <= 20x 144 nodes), <= 10x the
ripgrep pass at 1,152 nodes, peak RSS <= 200 MiB at 2,304 nodes, and the right label, root node
and root rank at every size. Then the scanner choice at 1,152 nodes (in-process for small files
against one rg process per file), and the lead node's Epilog over 1,152 parts
(bench/scale_epilog.py). Then two jobs where every rank fails, at 576, 1,152 and 2,304 nodes: a
torchrun job whose every rank raises the same error (every traceback placed on its rank), and a
job whose every rank segfaults at once (every crash its own fault, every dump placed between its
neighbours): the work for one rank must not grow with the job (2,304 nodes <= 5x 576 nodes, 4x
the job). Best of three runs each; warm page cache.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.peak import PROBE, peak_mib
from bench.scale_bundle import Expected, make_all_crashed_bundle, make_bundle, make_torchrun_bundle
from bench.scale_epilog import concurrent_writers, synthetic_spool
from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from slurm_hooks.rules import load_rule_pack
from slurm_hooks.timeline.scan import SMALL_FILE, ResilientScanner, find_rg

ROOT = Path(__file__).resolve().parent.parent
SIZES = (18, 144, 576, 1152, 2304)
Row = dict[str, object]
EVERY_RANK_SIZES = (576, 1152, 2304)
EVERY_RANK_FAILS = {"torchrun_every_rank_raises": make_torchrun_bundle, "every_rank_segfaults": make_all_crashed_bundle}
TRIES = 3


def _bundle(out: Path, n: int) -> tuple[Path, Expected]:
    where = out / f"scale-{n}"
    shutil.rmtree(where, ignore_errors=True)
    return where, make_bundle(where, n)


def _best(cmd: list[str]) -> float:
    """Best wall time of `cmd` over TRIES runs."""
    best = float("inf")
    for _ in range(TRIES):
        t0 = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        best = min(best, time.perf_counter() - t0)
    return best


def _diagnose(bundle: Path, env: dict[str, str]) -> tuple[float, float, dict[str, object]]:
    best, peak, doc = float("inf"), 0.0, {}
    for _ in range(TRIES):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, "diagnose", "--json", str(bundle)], capture_output=True, env=env
        )
        best = min(best, time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr.decode()[-2000:])
        peak = max(peak, peak_mib(proc.stderr.decode()))
        doc = json.loads(proc.stdout)
    return best, peak, doc


def _rg_pass(bundle: Path, keywords: Path) -> float:
    rg = find_rg()
    assert rg, "ripgrep is a dependency (pyproject.toml)"
    cmd = [
        rg,
        "--no-config",
        "--text",
        "-F",
        "-n",
        "-b",
        "-f",
        str(keywords),
        str(bundle / "logs"),
        str(bundle / "kernel"),
    ]
    return _best(cmd)


def _in_process(bundle: Path, small_bytes: int) -> float:
    """diagnose in this process with a scanner that starts rg only for files over `small_bytes`."""
    pack, best = load_rule_pack(), float("inf")
    for _ in range(TRIES):
        t0 = time.perf_counter()
        diagnose(load_bundle(bundle), pack, ResilientScanner(find_rg(), small_bytes=small_bytes))
        best = min(best, time.perf_counter() - t0)
    return best


def _growth(rows: dict[int, Row], first: int, last: int) -> dict[str, object]:
    """Diagnose time at `last` nodes over `first`: linear is the jobs' ratio, with a quarter to spare."""
    growth = float(rows[last]["diagnose_s"]) / float(rows[first]["diagnose_s"])  # type: ignore[arg-type]
    limit = 1.25 * last / first
    return {"ratio": round(growth, 2), "target": f"<= {limit:g} ({last // first}x the job)", "met": growth <= limit}


def _every_rank_rows(
    out: Path, env: dict[str, str], name: str, make: Callable[[Path, int], Expected]
) -> dict[int, Row]:
    """A job where every rank fails: diagnose time and answer by size."""
    rows: dict[int, Row] = {}
    print(f"\n{name}\n{'nodes':>6} {'MiB':>6} {'diagnose s':>10} {'RSS MiB':>8}  answer")
    for n in EVERY_RANK_SIZES:
        bundle = out / f"{name}-{n}"
        shutil.rmtree(bundle, ignore_errors=True)
        want = make(bundle, n)
        mib = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) / (1 << 20)
        t_d, rss, doc = _diagnose(bundle, env)
        right = (doc["label"], doc["root_node"], doc["root_rank"]) == (want.label, want.root_node, want.root_rank)
        rows[n] = {"MiB": round(mib, 1), "diagnose_s": round(t_d, 3), "peak_rss_MiB": round(rss, 1), "right": right}
        print(f"{n:>6} {mib:>6.1f} {t_d:>10.3f} {rss:>8.1f}  {'right' if right else 'WRONG'}")
        shutil.rmtree(bundle, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=ROOT / "bench/out")
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    pack = load_rule_pack()
    keywords = args.out / "scale-keywords.txt"
    keywords.write_text("\n".join(sorted(set(pack.keywords("log")) | set(pack.keywords("kernel")))) + "\n")
    config = args.out / "defaults.yaml"
    config.write_text("")  # the shipped defaults, whatever /etc/slurm-hooks/config.yaml here says
    env = {**os.environ, "SLURM_HOOKS_CONFIG": str(config)}

    rows: dict[int, Row] = {}
    print(
        f"{'nodes':>6} {'files':>6} {'MiB':>6} {'diagnose s':>10} {'rg s':>6} {'x rg':>6} {'in-proc s':>9} "
        f"{'x rg':>5} {'RSS MiB':>8}  answer"
    )
    for n in args.sizes:
        bundle, want = _bundle(args.out, n)
        files = sum(1 for p in bundle.rglob("*") if p.is_file())
        mib = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file()) / (1 << 20)
        subprocess.run(["cat", *map(str, (bundle / "logs").iterdir())], stdout=subprocess.DEVNULL, check=True)
        t_rg = _rg_pass(bundle, keywords)
        t_d, rss, doc = _diagnose(bundle, env)
        t_in = _in_process(bundle, SMALL_FILE)  # the same without the interpreter's start and imports
        answer = (doc["label"], doc["root_node"], doc["root_rank"])
        right = answer == (want.label, want.root_node, want.root_rank)
        rows[n] = {
            "files": files,
            "MiB": round(mib, 1),
            "diagnose_s": round(t_d, 3),
            "rg_s": round(t_rg, 3),
            "x_rg": round(t_d / t_rg, 1),
            "in_process_s": round(t_in, 3),
            "in_process_x_rg": round(t_in / t_rg, 1),
            "peak_rss_MiB": round(rss, 1),
            "right": right,
            "skipped_lines": len(doc["skipped"]),  # type: ignore[arg-type]
        }
        print(
            f"{n:>6} {files:>6} {mib:>6.1f} {t_d:>10.3f} {t_rg:>6.3f} {t_d / t_rg:>6.1f} {t_in:>9.3f} "
            f"{t_in / t_rg:>5.1f} {rss:>8.1f}  {'right' if right else f'WRONG: {answer}'}"
        )
        if n != 1152:
            shutil.rmtree(bundle, ignore_errors=True)

    verdict: dict[str, object] = {}
    if 144 in rows and 2304 in rows:
        verdict["growth_2304_over_144"] = _growth(rows, 144, 2304)
    if 1152 in rows:
        x = float(rows[1152]["x_rg"])  # type: ignore[arg-type]
        verdict["x_rg_at_1152"] = {
            "ratio": x,
            "target": "<= 10",
            "met": x <= 10,
            "run": "a fresh process, as the Epilog",
        }
        x_in = float(rows[1152]["in_process_x_rg"])  # type: ignore[arg-type]
        verdict["in_process_x_rg_at_1152"] = {"ratio": x_in, "target": "<= 10", "met": x_in <= 10}
        big = args.out / "scale-1152"
        inproc, per_file = _in_process(big, SMALL_FILE), _in_process(big, 0)
        verdict["scanner_at_1152"] = {
            "small_files_in_process_s": round(inproc, 3),
            "one_rg_per_file_s": round(per_file, 3),
            "ratio": round(per_file / inproc, 1),
        }
        with tempfile.TemporaryDirectory(dir=args.out) as tmp:
            verdict["epilog_1152_synthetic_spool"] = synthetic_spool(Path(tmp) / "a", big)
            verdict["epilog_1152_concurrent_writers"] = concurrent_writers(Path(tmp) / "b", big)
        shutil.rmtree(big, ignore_errors=True)
    if 2304 in rows:
        rss = float(rows[2304]["peak_rss_MiB"])  # type: ignore[arg-type]
        verdict["rss_at_2304"] = {"MiB": rss, "target": "<= 200", "met": rss <= 200}
    every_rank = {name: _every_rank_rows(args.out, env, name, make) for name, make in EVERY_RANK_FAILS.items()}
    for name, by_size in every_rank.items():
        first, last = min(by_size), max(by_size)
        verdict[f"{name}_growth_{last}_over_{first}"] = _growth(by_size, first, last)
    shapes = [r for by_size in every_rank.values() for r in by_size.values()]
    verdict["all_right"] = all(r["right"] for r in [*rows.values(), *shapes])
    print(json.dumps({"cores": os.cpu_count(), "sizes": rows, **every_rank, **verdict}, indent=1))
    met = all(v.get("met", True) for v in verdict.values() if isinstance(v, dict))
    return 0 if met and verdict["all_right"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
