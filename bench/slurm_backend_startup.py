"""What choosing the pyslurm backend adds to the Epilog's start-up, against the CLI backend.

Measures, in fresh interpreters, the Epilog's path to its Slurm client (`open_slurm`) with
`slurm.backend: cli` and with `pyslurm` (import pyslurm: libslurm load + slurm_init, plus one
`scontrol --version` for the version check), against `python -c pass`. Medians of interleaved runs.
Needs pyslurm in this interpreter (`make pyslurm`) and a readable /etc/slurm/slurm.conf.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 30
OPEN = (
    "from slurm_hooks.config import load_config; from slurm_hooks.core.hooklog import HookLog; "
    "from slurm_hooks.slurm.backend import open_slurm; c = load_config(); "
    "s = open_slurm(c, HookLog(c.log_file, 'bench', None)); "
    "assert type(s).__name__ == {want!r}, type(s)"
)


def once(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def main() -> int:
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        envs = {}
        for backend in ("cli", "pyslurm"):
            cfg = Path(tmp) / f"{backend}.yaml"
            cfg.write_text(f"log_file: {tmp}/hooks.log\nslurm: {{backend: {backend}}}\n")
            envs[backend] = {**os.environ, "SLURM_HOOKS_CONFIG": str(cfg), "SLURM_HOOKS_CACHE_DIR": f"{tmp}/{backend}"}
        cmds = {
            "python_pass": ([py, "-c", "pass"], envs["cli"]),
            "import_pyslurm": ([py, "-c", "import pyslurm"], envs["cli"]),
            "open_cli": ([py, "-c", OPEN.format(want="SlurmCli")], envs["cli"]),
            "open_pyslurm": ([py, "-c", OPEN.format(want="SlurmPyslurm")], envs["pyslurm"]),
        }
        samples: dict[str, list[float]] = {k: [] for k in cmds}
        for _ in range(RUNS):
            for name, (cmd, env) in cmds.items():
                samples[name].append(once(cmd, env))
    ms = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    report = {
        "median_ms": {k: round(v, 1) for k, v in ms.items()},
        "import_pyslurm_added_ms": round(ms["import_pyslurm"] - ms["python_pass"], 1),
        "pyslurm_backend_added_ms": round(ms["open_pyslurm"] - ms["open_cli"], 1),
        "open_pyslurm_vs_open_cli": round(ms["open_pyslurm"] / ms["open_cli"], 2),
        "epilog_budget_s": 30,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
