"""The five NVML calls the Prolog makes, through NVIDIA's own bindings (nvidia-ml-py, `pynvml`).

pynvml tracks NVML's versioned entry points on every driver (`_v2` and later), which a hand-kept
binding would have to follow by hand. Its import (~10 ms here, `make bench`) is paid only on a node
whose /proc says a driver is loaded (facts/__init__.py), and only by the Prolog's NVML query.

`library` names the shared object to load (default: the system's libnvidia-ml.so.1): pynvml keeps
the one loaded library in `pynvml.nvmlLib`, so handing it a CDLL of another file is the injection
point (tests load the compiled stand-in with NVML's C signatures, tests/fixtures/nvml).
"""

from __future__ import annotations

import ctypes

import pynvml

LIBRARY = "libnvidia-ml.so.1"


class NvmlError(Exception):
    """An NVML call returned an error code; the message is NVML's own text for it."""


def _load(library: str) -> None:
    """Make pynvml use `library` (raises OSError when it cannot be loaded)."""
    lib = ctypes.CDLL(library)
    with pynvml.libLoadLock:
        if pynvml.nvmlLib is not lib:
            pynvml.nvmlLib = lib
            pynvml._nvmlGetFunctionPointer_cache.clear()  # pointers into the previous library


class Nvml:
    """NVML through pynvml. Each method is one NVML call; raises OSError or NvmlError."""

    def __init__(self, library: str = LIBRARY) -> None:
        _load(library)  # the name pynvml itself loads, by default: a missing one is OSError here, not at init

    @staticmethod
    def _call(name: str, *args: object) -> object:
        try:
            return getattr(pynvml, name)(*args)
        except pynvml.NVMLError as exc:
            raise NvmlError(f"{name}: {exc}") from None

    def init(self) -> None:
        self._call("nvmlInit")

    def shutdown(self) -> None:
        self._call("nvmlShutdown")

    def driver_version(self) -> str:
        return str(self._call("nvmlSystemGetDriverVersion"))

    def cuda_driver_version(self) -> str:
        """NVML's integer 13000 as CUDA writes it, `13.0`."""
        value = int(str(self._call("nvmlSystemGetCudaDriverVersion_v2")))
        return f"{value // 1000}.{value % 1000 // 10}"

    def device_count(self) -> int:
        return int(str(self._call("nvmlDeviceGetCount")))

    def device_name(self, index: int) -> str:
        return str(self._call("nvmlDeviceGetName", self._call("nvmlDeviceGetHandleByIndex", index)))
