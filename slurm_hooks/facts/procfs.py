"""Driver, GPUs and CDMM mode from /proc/driver/nvidia (seen under host_root), without NVML.

CDMM (DESIGN.md): `CoherentGPUMemoryMode: "driver"` in params means on, `"numa"` off. An empty
value is each driver's default: off (NUMA) on R580-R595, on (driver-managed) from R615 on
hardware-coherent platforms (Grace: GH200, GB200, GB300; R615's release notes), unknown in
between; a platform that is not coherent has no CDMM to be in. Per-GPU `numa_status` exists only
in NUMA mode, so its presence says off. Drivers before R580 have no CDMM at all.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from slurm_hooks.core.safeio import read_small

_VERSION = re.compile(r"Kernel Module(?: for \w+)?\s+(\d+\.\d+(?:\.\d+)?)\b")
_PARAM = re.compile(r'^CoherentGPUMemoryMode:\s*"?([^"\n]*)"?\s*$', re.M)
_MODEL = re.compile(r"^Model:\s*(.+?)\s*$", re.M)


class ProcNvidia(NamedTuple):  # NamedTuple, not dataclass: see config/records.py
    driver_loaded: bool = False
    driver_version: str | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    cdmm_raw: str | None = None  # the params value; None when there is no such line
    params_path: str | None = None
    numa_status: bool = False
    errors: tuple[str, ...] = ()


def _major(version: str | None) -> int | None:
    return int(version.split(".")[0]) if version and version.split(".")[0].isdigit() else None


# GPUs joined to a Grace CPU by NVLink-C2C: the only platforms where GPU memory is coherent.
_COHERENT = re.compile(r"\bG[HB]\d{2,3}\b")


def coherent_platform(gpu_model: str | None) -> bool | None:
    """Whether the GPU sits on a hardware-coherent platform; None when the model is not known."""
    return None if not gpu_model else bool(_COHERENT.search(gpu_model.upper()))


def cdmm_mode(raw: str | None, driver: str | None, numa_status: bool, gpu_model: str | None = None) -> str:
    """on | off | unknown from the params value (None = no such line), the driver, numa_status and
    the GPU model (an empty value is the driver's default, which depends on the platform from R615)."""
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
    if value == "" and major is not None and major >= 615:
        coherent = coherent_platform(gpu_model)
        return "unknown" if coherent is None else "on" if coherent else "off"
    return "unknown"


def _gpu_dirs(gpus: str) -> list[str]:
    """One directory per GPU (`<bdf>`), sorted; none when the driver lists none."""
    try:
        return sorted(f"{gpus}/{name}" for name in os.listdir(gpus) if not name.startswith("."))
    except OSError:
        return []


def read_proc_nvidia(host_root: str) -> ProcNvidia:
    base = os.path.join(host_root, "proc/driver/nvidia")
    if not os.path.isdir(base):
        return ProcNvidia(errors=(f"{base}: absent (no NVIDIA driver loaded on this node)",))
    errors: list[str] = []
    driver = model = cdmm_raw = params_path = None
    try:
        if m := _VERSION.search(read_small(f"{base}/version")):
            driver = m.group(1)
        else:
            errors.append(f"{base}/version: no driver version in it")
    except OSError as exc:
        errors.append(f"{base}/version: {exc.strerror or exc}")

    gpus = _gpu_dirs(f"{base}/gpus")
    numa_status = any(os.path.exists(f"{gpu}/numa_status") for gpu in gpus)
    for gpu in gpus:
        try:
            if m := _MODEL.search(read_small(f"{gpu}/information")):
                model = m.group(1)
                break
        except OSError as exc:
            errors.append(f"{gpu}/information: {exc.strerror or exc}")

    try:
        m = _PARAM.search(read_small(f"{base}/params"))
        cdmm_raw = m.group(1) if m else None
        params_path = f"{base}/params"
        if cdmm_raw is not None and cdmm_raw.strip().lower() not in ("", "driver", "numa"):
            errors.append(f"{base}/params: CoherentGPUMemoryMode has unexpected value {cdmm_raw!r}")
    except OSError as exc:
        errors.append(f"{base}/params: {exc.strerror or exc}")
    return ProcNvidia(True, driver, model, len(gpus), cdmm_raw, params_path, numa_status, tuple(errors))
