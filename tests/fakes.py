"""Test doubles for the one part no machine here has: an NVIDIA GPU behind NVML."""

from __future__ import annotations

import threading

from slurm_hooks.facts.gpu import GpuInfo, GpuQueryError


class RecordedGpu:
    """Answers with what NVML reported on a real node."""

    def __init__(self, info: GpuInfo) -> None:
        self.info = info

    def query(self) -> GpuInfo:
        return self.info


class FailingGpu:
    def __init__(self, reason: str) -> None:
        self.reason = reason

    def query(self) -> GpuInfo:
        raise GpuQueryError(self.reason)


class HangingGpu:
    """NVML on a sick GPU: the call never returns."""

    def query(self) -> GpuInfo:
        threading.Event().wait()
        raise AssertionError("unreachable")


GB200 = GpuInfo(driver_version="580.95.05", cuda_driver_version="13.0", gpu_model="NVIDIA GB200", gpu_count=4)
