"""GPU identity through NVML (nvidia-ml-py), every call bounded: NVML can hang on a sick GPU."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class GpuQueryError(Exception):
    """NVML is missing, failed, or did not answer in time; the message says which."""


@dataclass(frozen=True)
class GpuInfo:
    driver_version: str | None
    cuda_driver_version: str | None
    gpu_model: str | None
    gpu_count: int | None


class GpuQuery(Protocol):
    def query(self) -> GpuInfo: ...


class _Worker:
    """Runs calls on one daemon thread so a hung NVML call can be abandoned, not waited for."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[tuple[Callable[..., Any], tuple[Any, ...], queue.Queue[Any]]] = queue.Queue()
        threading.Thread(target=self._run, name="nvml", daemon=True).start()

    def _run(self) -> None:
        while True:
            fn, args, reply = self.jobs.get()
            try:
                reply.put((True, fn(*args)))
            except Exception as exc:  # NVMLError and friends travel back to the caller
                reply.put((False, exc))

    def call(self, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self.jobs.put((fn, args, reply))
        try:
            ok, value = reply.get(timeout=timeout)
        except queue.Empty:
            raise GpuQueryError(f"NVML call {fn.__name__} did not answer within {timeout:g}s") from None
        if not ok:
            raise GpuQueryError(f"NVML call {fn.__name__} failed: {value}")
        return value


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class NvmlQuery:
    def __init__(self, call_timeout_s: float) -> None:
        self.timeout = call_timeout_s

    def query(self) -> GpuInfo:
        import ctypes

        try:  # where the library is missing (no GPU, a pod without the driver mounts) skip pynvml's ~25 ms import
            ctypes.CDLL("libnvidia-ml.so.1")
        except OSError as exc:
            raise GpuQueryError(f"libnvidia-ml.so.1 not loadable: {exc}") from None
        try:
            import pynvml
        except ImportError as exc:
            raise GpuQueryError(f"nvidia-ml-py not importable: {exc}") from None
        worker = _Worker()
        call = worker.call
        call(self.timeout, pynvml.nvmlInit)
        try:
            driver = _text(call(self.timeout, pynvml.nvmlSystemGetDriverVersion))
            cuda = call(self.timeout, pynvml.nvmlSystemGetCudaDriverVersion_v2)
            count = int(call(self.timeout, pynvml.nvmlDeviceGetCount))
            model = None
            if count:
                handle = call(self.timeout, pynvml.nvmlDeviceGetHandleByIndex, 0)
                model = _text(call(self.timeout, pynvml.nvmlDeviceGetName, handle))
        finally:
            with contextlib.suppress(GpuQueryError):
                call(self.timeout, pynvml.nvmlShutdown)
        return GpuInfo(driver, f"{cuda // 1000}.{cuda % 1000 // 10}", model, count)
