"""The rule pack's vocabulary: families, traits, advice conditions and placeholders are checked on load."""

from __future__ import annotations

from pathlib import Path

import pytest

from slurm_hooks.rules import LABELS, RulePackError, load_rule_pack
from slurm_hooks.rules.families import TRAITS


def _pack(tmp_path: Path, text: str, strict: bool = True):
    path = tmp_path / "site.yaml"
    path.write_text(text)
    return load_rule_pack([path], strict=strict)


def test_every_shipped_rule_has_a_declared_family_with_known_traits(pack) -> None:
    assert {r.family for r in pack.rules} <= set(pack.families)
    assert all(f.traits <= TRAITS and (f.label is None or f.label in LABELS) for f in pack.families.values())
    assert pack.has("segfault", "crash") and pack.has("worker_segfault", "dataloader_worker")
    assert not pack.has("nccl_timeout", "crash") and not pack.has("no_such_family", "crash")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "rules:\n- {name: x, family: mystery, role: primary, keywords: [k], pattern: k}\n",
            "rule 'x'): family 'mystery' is not declared under 'families'",
        ),
        ("families:\n  mine: {traits: [explodes]}\n", "key 'families.mine.traits' must be a list of"),
        ("families:\n  mine: {label: disaster}\n", "key 'families.mine.label' must be one of"),
        (
            "families:\n  mine: {colour: red}\n",
            "key 'families.mine' must be a mapping with label, says and traits only",
        ),
        ("advice:\n  gpu_xid: [{text: hi, when: sometimes}]\n", "key 'advice.gpu_xid[0].when' must be one of"),
        ("advice:\n  gpu_xid: ['drain {nodes}']\n", "unknown placeholder {nodes}"),
        ("advice:\n  gpu_trouble: ['x']\n", "key 'advice.gpu_trouble' is not a label"),
        ("progress: ['(unclosed']\n", "key 'progress' holds an invalid regex"),
    ],
)
def test_bad_vocabulary_names_the_file_and_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(RulePackError, match=r"site\.yaml") as err:
        _pack(tmp_path, text)
    assert message in str(err.value)
    assert message in _pack(tmp_path, text, strict=False).skipped[0]  # the hooks leave the file out, and say so


def test_operators_add_families_and_conditional_advice(tmp_path: Path) -> None:
    pack = _pack(
        tmp_path,
        """
families:
  gpu_health: {label: gpu_xid, traits: [xid]}
rules:
  - {name: site_gpu_health, family: gpu_health, role: primary, source: kernel, keywords: ["gpu-health: FAIL"],
     pattern: 'gpu-health: FAIL xid=(?P<xid>\\\\d+)'}
advice:
  app_segfault: [{text: "worker crashed on {node}", when: dataloader_worker}]
""",
    )
    assert pack.has("gpu_health", "xid") and pack.families["gpu_health"].label == "gpu_xid"
    assert [(a.text, a.when) for a in pack.advice["app_segfault"]] == [
        ("worker crashed on {node}", "dataloader_worker")
    ]
    assert pack.progress  # untouched sections keep the shipped values
