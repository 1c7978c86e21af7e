"""The five NVML calls the Prolog makes, bound with ctypes straight from libnvidia-ml.so.1.

nvidia-ml-py (pynvml) binds all of NVML at import: 32-38 ms on an H200 node, more than NVML's own
work (~24 ms) and paid on every job start. These signatures are NVML's stable C API (nvml.h).
"""

from __future__ import annotations

import ctypes

LIBRARY = "libnvidia-ml.so.1"
_NAME_LEN = 96  # NVML_DEVICE_NAME_V2_BUFFER_SIZE; the driver version needs 80


class NvmlError(Exception):
    """An NVML call returned an error code; the message is NVML's own text for it."""


class Nvml:
    """One loaded libnvidia-ml. Each method is one NVML call; raises OSError or NvmlError."""

    def __init__(self, library: str = LIBRARY) -> None:
        self.lib = ctypes.CDLL(library)
        self.lib.nvmlErrorString.restype = ctypes.c_char_p

    def _check(self, name: str, *args: object) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            text = self.lib.nvmlErrorString(code)
            raise NvmlError(f"{name}: {text.decode() if text else f'error {code}'}")

    def init(self) -> None:
        self._check("nvmlInit_v2")

    def shutdown(self) -> None:
        self._check("nvmlShutdown")

    def driver_version(self) -> str:
        buf = ctypes.create_string_buffer(_NAME_LEN)
        self._check("nvmlSystemGetDriverVersion", buf, ctypes.c_uint(_NAME_LEN))
        return buf.value.decode(errors="replace")

    def cuda_driver_version(self) -> str:
        """NVML's integer 13000 as CUDA writes it, `13.0`."""
        value = ctypes.c_int()
        self._check("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(value))
        return f"{value.value // 1000}.{value.value % 1000 // 10}"

    def device_count(self) -> int:
        count = ctypes.c_uint()
        self._check("nvmlDeviceGetCount_v2", ctypes.byref(count))
        return count.value

    def device_name(self, index: int) -> str:
        handle = ctypes.c_void_p()  # nvmlDevice_t is an opaque pointer
        self._check("nvmlDeviceGetHandleByIndex_v2", ctypes.c_uint(index), ctypes.byref(handle))
        buf = ctypes.create_string_buffer(_NAME_LEN)
        self._check("nvmlDeviceGetName", handle, buf, ctypes.c_uint(_NAME_LEN))
        return buf.value.decode(errors="replace")
