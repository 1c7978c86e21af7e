"""This node's facts (DESIGN.md "Node facts"): never raises; what could not be read lands in `errors`."""

from __future__ import annotations

import os
import time
from typing import Any

from slurm_hooks.config import Config
from slurm_hooks.facts.gpu import GpuQuery, GpuQueryError
from slurm_hooks.facts.host import boot_time, iso_utc, kernel_release, node_name, timezone_name
from slurm_hooks.facts.ncore import read_ncore
from slurm_hooks.facts.procfs import cdmm_mode, read_proc_nvidia


def collect_facts(config: Config, gpu: GpuQuery) -> dict[str, Any]:
    errors: list[str] = []
    proc = read_proc_nvidia(config.host_root)
    errors += proc.errors
    info = None
    if proc.driver_loaded:  # no kernel driver, no NVML: skip its ~25 ms import on GPU-less nodes
        try:
            info = gpu.query()
        except GpuQueryError as exc:
            errors.append(f"NVML: {exc}")
    else:
        errors.append("NVML: not tried, no NVIDIA kernel driver is loaded")
    driver = (info and info.driver_version) or proc.driver_version
    if info and proc.driver_version and info.driver_version != proc.driver_version:
        errors.append(f"NVML says driver {info.driver_version}, /proc says {proc.driver_version}")
    gpu_model = (info and info.gpu_model) or proc.gpu_model
    return {
        "node": node_name(),
        "driver_version": driver,
        "cuda_driver_version": info.cuda_driver_version if info else None,
        "cdmm": cdmm_mode(proc.cdmm_raw, driver, proc.numa_status, gpu_model),
        "cdmm_source": {"raw": proc.cdmm_raw, "from": proc.params_path, "numa_status": proc.numa_status},
        "ncore_version": read_ncore(config.ncore_sources, config.host_root, config.budgets.command_s, errors),
        "gpu_model": gpu_model,
        "gpu_count": info.gpu_count if info else proc.gpu_count,
        "arch": os.uname().machine,
        "kernel": kernel_release(config.host_root),
        "timezone": timezone_name(config.host_root, errors),
        "boot_time": boot_time(config.host_root, errors),
        "collected_at": iso_utc(time.time()),
        "errors": errors,
    }
