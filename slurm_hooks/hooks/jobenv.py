"""The `export SLURM_HOOKS_*=...` lines the TaskProlog prints (DESIGN.md "Job environment").

Slurm takes TaskProlog values literally, first line only, no unquoting: so every value is cut
to one short line of safe characters here, once, when the Prolog writes the file.
"""

from __future__ import annotations

import re
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9 ._:+@/,=-]")
MAX_VALUE = 128


def sanitise(value: Any) -> str:
    text = "" if value is None else str(value)
    return _UNSAFE.sub("_", text.splitlines()[0] if text else "")[:MAX_VALUE].strip()


def export_lines(facts: dict[str, Any]) -> str:
    values = {
        "SLURM_HOOKS_NVIDIA_DRIVER": facts.get("driver_version"),
        "SLURM_HOOKS_CUDA_DRIVER": facts.get("cuda_driver_version"),
        "SLURM_HOOKS_CDMM": facts.get("cdmm") or "unknown",
        "SLURM_HOOKS_NCORE_VERSION": facts.get("ncore_version"),
        "SLURM_HOOKS_GPU_MODEL": facts.get("gpu_model"),
        "SLURM_HOOKS_GPU_COUNT": facts.get("gpu_count"),
    }
    if facts.get("cdmm") == "on":
        values["SLURM_HOOKS_CHECKPOINT_SYNC"] = "1"  # training code may call torch.cuda.synchronize() before saves
    return "".join(f"export {k}={sanitise(v)}\n" for k, v in values.items())
