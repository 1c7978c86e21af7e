"""GPU identity through NVML (facts/nvml.py, nvidia-ml-py), every call bounded: NVML can hang on a sick GPU."""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, NamedTuple, Protocol


class GpuQueryError(Exception):
    """NVML is missing, failed, or did not answer in time; the message says which."""


class GpuInfo(NamedTuple):  # NamedTuple, not dataclass: see config/records.py
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
            except Exception as exc:  # NvmlError, OSError... travel back to the caller
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


class NvmlQuery:
    """The real GpuQuery. `library` is NVML's shared object (a test may point it at a stand-in)."""

    def __init__(self, call_timeout_s: float, library: str = "") -> None:
        self.timeout = call_timeout_s
        self.library = library

    def query(self) -> GpuInfo:
        from slurm_hooks.facts.nvml import LIBRARY, Nvml

        try:
            nvml = Nvml(self.library or LIBRARY)
        except OSError as exc:  # no GPU, or a pod without the driver mounts
            raise GpuQueryError(f"{self.library or LIBRARY} not loadable: {exc}") from None
        call = _Worker().call
        call(self.timeout, nvml.init)
        try:
            count = int(call(self.timeout, nvml.device_count))
            return GpuInfo(
                call(self.timeout, nvml.driver_version),
                call(self.timeout, nvml.cuda_driver_version),
                call(self.timeout, nvml.device_name, 0) if count else None,
                count,
            )
        finally:
            with contextlib.suppress(GpuQueryError):
                call(self.timeout, nvml.shutdown)
