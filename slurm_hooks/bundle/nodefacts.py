"""Node facts (DESIGN.md "Node facts") as a typed record: what the Prolog recorded about one node's GPU stack."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

_TEXT = (
    "driver_version",
    "cuda_driver_version",
    "ncore_version",
    "gpu_model",
    "arch",
    "kernel",
    "timezone",
    "boot_time",
    "collected_at",
)


@dataclass(frozen=True)
class NodeFacts:
    node: str
    driver_version: str | None = None  # "580.95.05"
    cuda_driver_version: str | None = None
    cdmm: str = "unknown"  # on | off | unknown
    cdmm_source: dict[str, Any] | None = None  # raw value and where it came from
    ncore_version: str | None = None
    gpu_model: str | None = None
    gpu_count: int | None = None
    arch: str | None = None
    kernel: str | None = None
    timezone: str | None = None  # IANA zone of the node's kernel/journal stamps
    boot_time: str | None = None  # ISO; turns dmesg seconds-since-boot into wall time
    collected_at: str | None = None
    errors: tuple[str, ...] = ()  # what could not be read, and why

    @classmethod
    def from_json(cls, doc: dict[str, Any], node: str, notes: list[str]) -> NodeFacts:
        """A node's JSON document; a value of the wrong type is left out and said in `notes`."""
        values: dict[str, Any] = {}
        for key in _TEXT:
            value = doc.get(key)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value):
                values[key] = str(value)
            elif value is not None:
                notes.append(f"nodes/{node}.json: {key}={value!r} is not a string; ignored")
        cdmm = doc.get("cdmm")
        values["cdmm"] = cdmm if cdmm in ("on", "off") else "unknown"
        if isinstance(doc.get("cdmm_source"), dict):
            values["cdmm_source"] = doc["cdmm_source"]
        count = doc.get("gpu_count")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            values["gpu_count"] = count
        errors = doc.get("errors")
        if isinstance(errors, list):
            values["errors"] = tuple(str(e) for e in errors)
        return cls(node=node, **values)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["errors"] = list(self.errors)
        return out

    def versions(self) -> list[str]:
        """The known parts of the stack, in the words support asks for."""
        parts = [
            ("NVIDIA driver", self.driver_version),
            ("CUDA driver", self.cuda_driver_version),
            ("CDMM", None if self.cdmm == "unknown" else self.cdmm),
            ("ncore", self.ncore_version),
            ("GPU", self.gpu_model),
        ]
        return [f"{name} {value}" for name, value in parts if value]
