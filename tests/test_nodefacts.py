"""Node facts as a typed record: wrong types are left out and said, never raised."""

from __future__ import annotations

from slurm_hooks.bundle.nodefacts import NodeFacts


def test_values_of_the_wrong_type_are_left_out_and_noted() -> None:
    notes: list[str] = []
    facts = NodeFacts.from_json(
        {
            "driver_version": ["580"],
            "cdmm": "maybe",
            "gpu_count": "4",
            "ncore_version": 3.6,
            "errors": ["nvml: timeout"],
        },
        "n1",
        notes,
    )
    assert (facts.driver_version, facts.cdmm, facts.gpu_count, facts.ncore_version) == (None, "unknown", None, "3.6")
    assert facts.errors == ("nvml: timeout",)
    assert notes == ["nodes/n1.json: driver_version=['580'] is not a string; ignored"]


def test_versions_name_only_what_is_known() -> None:
    facts = NodeFacts(node="n1", driver_version="580.95.05", cdmm="unknown", gpu_model="NVIDIA GB200")
    assert facts.versions() == ["NVIDIA driver 580.95.05", "GPU NVIDIA GB200"]
    assert NodeFacts.from_json(facts.to_dict(), "n1", []) == facts
