"""Driver, GPUs and CDMM mode from /proc/driver/nvidia (seen under host_root), without NVML.

CDMM (DESIGN.md): `CoherentGPUMemoryMode: "driver"` in params means on, `"numa"` off; an empty
value means off on R580-R595 and unknown on newer drivers; per-GPU `numa_status` exists only in
NUMA mode, so its presence says off. Drivers before R580 have no CDMM at all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from slurm_hooks.safeio import read_small

_VERSION = re.compile(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)\b")
_PARAM = re.compile(r'^CoherentGPUMemoryMode:\s*"?([^"\n]*)"?\s*$', re.M)
_MODEL = re.compile(r"^Model:\s*(.+?)\s*$", re.M)


@dataclass
class ProcNvidia:
    driver_loaded: bool = False
    driver_version: str | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    cdmm_raw: str | None = None  # the params value; None when there is no such line
    params_path: str | None = None
    numa_status: bool = False
    errors: list[str] = field(default_factory=list)


def _major(version: str | None) -> int | None:
    return int(version.split(".")[0]) if version and version.split(".")[0].isdigit() else None


def cdmm_mode(raw: str | None, driver: str | None, numa_status: bool) -> str:
    """on | off | unknown from the params value (None = no such line), the driver and numa_status."""
    major = _major(driver)
    if numa_status:
        return "off"  # NUMA mode: GPU memory is onlined as NUMA nodes, the opposite of CDMM
    if raw is None:
        if major is not None and major < 580:
            return "off"  # no CDMM before R580
        return "unknown"
    value = raw.strip().lower()
    if value == "driver":
        return "on"
    if value == "numa":
        return "off"
    if value == "" and major is not None and 580 <= major <= 595:
        return "off"
    return "unknown"


def read_proc_nvidia(host_root: str) -> ProcNvidia:
    base = Path(host_root) / "proc/driver/nvidia"
    out = ProcNvidia()
    if not base.is_dir():
        out.errors.append(f"{base}: absent (no NVIDIA driver loaded on this node)")
        return out
    out.driver_loaded = True
    try:
        text = read_small(base / "version")
        if m := _VERSION.search(text):
            out.driver_version = m.group(1)
        else:
            out.errors.append(f"{base}/version: no driver version in it")
    except OSError as exc:
        out.errors.append(f"{base}/version: {exc.strerror or exc}")

    gpus = sorted((base / "gpus").glob("*")) if (base / "gpus").is_dir() else []
    out.gpu_count = len(gpus)
    for gpu in gpus:
        out.numa_status |= (gpu / "numa_status").exists()
        if out.gpu_model is None:
            try:
                if m := _MODEL.search(read_small(gpu / "information")):
                    out.gpu_model = m.group(1)
            except OSError as exc:
                out.errors.append(f"{gpu}/information: {exc.strerror or exc}")

    try:
        m = _PARAM.search(read_small(base / "params"))
        out.cdmm_raw = m.group(1) if m else None
        out.params_path = str(base / "params")
        if out.cdmm_raw is not None and out.cdmm_raw.strip().lower() not in ("", "driver", "numa"):
            out.errors.append(f"{base}/params: CoherentGPUMemoryMode has unexpected value {out.cdmm_raw!r}")
    except OSError as exc:
        out.errors.append(f"{base}/params: {exc.strerror or exc}")
    return out
