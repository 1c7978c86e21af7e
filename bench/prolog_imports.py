"""The Prolog's import cost (`python -X importtime`) and start-up, as ratios against `python -S -c pass`.

The deployed Prolog is `python -S -c "...; from slurm_hooks.hooks.prolog import main"` (see
hooks/install.py), run from compiled bytecode as a pip install leaves it. Measured here, interleaved,
medians of RUNS:
  python_S_pass    `python -S -c pass`: the interpreter's own start (the baseline)
  prolog_import    cumulative import time of slurm_hooks.hooks.prolog (structlog included, through
                   hooklog) plus pynvml (imported by the NVML query on a node with a driver), -X importtime
  prolog_no_gpu    the deployed Prolog script on a recorded GB200 host root (NVML not loadable here)
structlog_import_ms and pynvml_import_ms are the two named packages' shares of prolog_import.

Goal (issue 21 §9): the Prolog adds at most 250 ms to a job's start on a GPU node. Issue 11's
tighter target (<= 2 x (python -S start + nvidia-smi query)) held without structlog and pynvml;
it is still reported, as `h200_projected_vs_target_baseline`. This machine has no GPU, so the GPU
node's figure is projected from the H200 measurement of issue 11
(python -S 15 ms, nvidia-smi query 25 ms, NVML's own calls 24 ms, /bin/true 1.3 ms):
  from imports: 15 ms x (1 + prolog_import / python_S_pass) + 24 ms NVML + 2 x 1.3 ms (sh, timeout)
  from wall:    15 ms x (prolog_no_gpu / python_S_pass) + 24 ms NVML
Import time is CPU-bound like the interpreter's start, so its ratio carries over between machines;
the wall figure also carries this shared machine's process-spawn and I/O noise (sh and timeout
cost 10-20 ms here under load), so it is reported, and the import-based figure is the gate.
`--nvidia-smi` adds the real GPU-node ratio where nvidia-smi exists.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from slurm_hooks.config import Config
from slurm_hooks.hooks.install import install_hooks

ROOT = Path(__file__).resolve().parent.parent
HOST = ROOT / "tests/fixtures/hosts/gb200-cdmm-driver"
RUNS = 25
NAMED = ("structlog", "pynvml")  # the project's named packages on the Prolog's path
GOAL_MS = 250.0  # issue 21: what the Prolog may add to a job's start on a GPU node
H200 = {
    "python_S_pass_ms": 15.0,
    "nvidia_smi_query_ms": 25.0,
    "nvml_calls_ms": 24.0,
    "true_ms": 1.3,
    "prolog_before_ms": 134.0,
}


def wall_ms(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def import_ms(py: str, env: dict[str, str]) -> tuple[float, dict[str, float]]:
    """Cumulative import time of the Prolog module, and each module's own share, in ms."""
    paths = [str(ROOT), *(p for p in sys.path if p.endswith("site-packages"))]  # as install.import_paths
    code = f"import sys; sys.path[:0] = {paths!r}; import slurm_hooks.hooks.prolog; import pynvml"
    err = subprocess.run([py, "-S", "-X", "importtime", "-c", code], env=env, capture_output=True, text=True).stderr
    own, cumulative = {}, {}
    for line in err.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) != 3 or not parts[0].strip().isdigit():
            continue
        own[parts[2].strip()] = int(parts[0]) / 1000
        cumulative[parts[2].strip()] = int(parts[1]) / 1000
    for name in NAMED:
        own[f"{name} (cumulative)"] = cumulative.get(name, 0.0)
    return cumulative["slurm_hooks.hooks.prolog"] + cumulative.get("pynvml", 0.0), own


def metrics_update_ms() -> float:
    """What recording one run costs the Prolog: lock, read, write state, render, write the .prom file."""
    from slurm_hooks.hooks.metrics import Metrics

    with tempfile.TemporaryDirectory(dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None) as tmp:
        metrics = Metrics(tmp, f"{tmp}/slurm_hooks.prom")
        times = []
        for _ in range(RUNS * 2):
            t0 = time.perf_counter()
            metrics.hook_run("prolog", 0.05, failed=False)
            times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> int:
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([py, "-m", "compileall", "-q", str(ROOT / "slurm_hooks")], check=True)  # as pip leaves it
    # The state dir is /run/slurm-hooks in production: a tmpfs, where the state files' fsync is free.
    shm = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(dir=shm) as tmp:
        cfg = Path(tmp) / "config.yaml"
        cfg.write_text(
            f"host_root: {HOST}\nstate_dir: {tmp}/state\nlog_file: {tmp}/hooks.log\n"
            "ncore_sources: [{type: file, path: /etc/ncore-release}]\n"
        )
        env.update(SLURM_HOOKS_CONFIG=str(cfg), SLURM_HOOKS_CACHE_DIR=tmp, SLURM_JOB_ID="4242")
        prolog = str(install_hooks(Path(tmp) / "hooks", py, Config(), str(cfg))[0])
        cmds = {"python_S_pass": [py, "-S", "-c", "pass"], "prolog_no_gpu": [prolog]}
        if "--nvidia-smi" in sys.argv and shutil.which("nvidia-smi"):
            cmds["nvidia_smi_query"] = ["nvidia-smi", "--query-gpu=driver_version,name", "--format=csv"]
        wall: dict[str, list[float]] = {k: [] for k in cmds}
        imports: list[float] = []
        own: dict[str, list[float]] = {}
        wall_ms(cmds["prolog_no_gpu"], env)  # fills the config cache, as the first job on a node does
        for _ in range(RUNS):
            for name, cmd in cmds.items():
                wall[name].append(wall_ms(cmd, env))
            total, mods = import_ms(py, env)
            imports.append(total)
            for mod, ms in mods.items():
                own.setdefault(mod, []).append(ms)
    med = {k: statistics.median(v) for k, v in wall.items()}
    metrics_update = metrics_update_ms()
    base = med["python_S_pass"]
    heaviest = sorted(((statistics.median(v), k) for k, v in own.items() if "(" not in k), reverse=True)[:8]
    import_ratio = statistics.median(imports) / base
    projected = H200["python_S_pass_ms"] * (1 + import_ratio) + H200["nvml_calls_ms"] + 2 * H200["true_ms"]
    from_wall = H200["python_S_pass_ms"] * med["prolog_no_gpu"] / base + H200["nvml_calls_ms"]
    target = 2 * (H200["python_S_pass_ms"] + H200["nvidia_smi_query_ms"])
    report = {
        "median_ms": {k: round(v, 2) for k, v in med.items()},
        "prolog_import_ms": round(statistics.median(imports), 2),
        "prolog_import_vs_python_S_pass": round(import_ratio, 2),
        "prolog_no_gpu_vs_python_S_pass": round(med["prolog_no_gpu"] / base, 2),
        "heaviest_imports_ms": {k: round(v, 2) for v, k in heaviest},
        **{f"{n}_import_ms": round(statistics.median(own[f"{n} (cumulative)"]), 2) for n in NAMED},
        "metrics_import_ms": round(statistics.median(own.get("slurm_hooks.hooks.metrics", [0.0])), 2),
        "metrics_update_ms": round(metrics_update, 2),
        "h200_prolog_before_ms": H200["prolog_before_ms"],
        "h200_projected_prolog_ms": round(projected, 1),
        "h200_projected_from_wall_ms": round(from_wall, 1),
        "h200_target_ms": target,
        "h200_projected_vs_target_baseline": round(projected / (target / 2), 2),
        "gpu_node_goal_ms": GOAL_MS,
        "targets": f"projected GPU-node Prolog <= {GOAL_MS:g} ms (issue 21); issue 11's 2x baseline reported",
    }
    if "nvidia_smi_query" in med:
        report["gpu_node_ratio"] = round(med["prolog_no_gpu"] / (base + med["nvidia_smi_query"]), 2)
    print(json.dumps(report, indent=2))
    return 0 if projected <= GOAL_MS else 1


if __name__ == "__main__":
    raise SystemExit(main())
