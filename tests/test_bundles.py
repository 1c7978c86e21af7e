"""Every example bundle gets the label, root node and root rank its expected.json names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slurm_hooks.bundle import load_bundle
from slurm_hooks.diagnose import diagnose
from tests.conftest import BUNDLES, SCENARIOS

OWN = sorted(p for p in BUNDLES.iterdir() if (p / "expected.json").exists())
SHARED = sorted(p for p in SCENARIOS.iterdir() if (p / "expected.json").exists()) if SCENARIOS.is_dir() else []
EMBEDDED = Path(__file__).parent.parent / "slurm_hooks" / "examples" / "cdmm-checkpoint-segfault"


def _check(path: Path, pack) -> None:
    expected = json.loads((path / "expected.json").read_text())
    got = diagnose(load_bundle(path), pack)
    assert (got.label, got.root_node, got.root_rank) == (
        expected["label"],
        expected["root_node"],
        expected["root_rank"],
    ), got.summary
    if "xid" in expected:
        assert got.details["xid"] == expected["xid"]
    if "concurrent" in expected:  # genuine faults the clocks could not order, by node
        assert [c["node"] for c in got.details.get("concurrent", [])] == expected["concurrent"]
    if "facts" in expected:
        assert got.facts == expected["facts"]
    assert "signal" not in expected or got.details.get("signal") == expected["signal"], got.details  # §8.32
    if "masked_by_exit" in expected:  # a crash in a job Slurm records COMPLETED 0:0 (§8.21)
        assert ("masked_by_exit" in got.details) == expected["masked_by_exit"], got.details
    if "crashed_process" in expected:
        assert got.details.get("crashed_process") == expected["crashed_process"], got.details
    if "exception" in expected:  # app_exception: what was raised, its kind, how many ranks raised it (§8.26)
        exc = got.details["exception"]
        assert {k: exc[k] for k in expected["exception"]} == expected["exception"], exc
    if "advice_has" in expected:
        assert any(expected["advice_has"] in line for line in got.advice), got.advice
    assert got.summary and got.advice


@pytest.mark.parametrize("path", OWN, ids=[p.name for p in OWN])
def test_own_bundles(path: Path, pack) -> None:
    _check(path, pack)


def test_own_bundles_cover_every_label() -> None:
    from slurm_hooks.diagnose import LABELS

    labels = {json.loads((p / "expected.json").read_text())["label"] for p in OWN}
    assert labels == set(LABELS)
    assert len(OWN) >= 30  # 18 from the first engine, 13 for diagnosis v2 (issue 7)
    recorded = [p for p in OWN if "recorded" in json.loads((p / "expected.json").read_text())]
    assert len(recorded) >= 8  # real torch jobs on the dev cluster (tests/recordings, issue 18)


@pytest.mark.skipif(not SHARED, reason="../shared/scenarios is not beside this checkout")
@pytest.mark.parametrize("path", SHARED, ids=[p.name for p in SHARED])
def test_shared_scenarios(path: Path, pack) -> None:
    _check(path, pack)


def test_embedded_demo_is_the_headline_case(pack) -> None:
    _check(EMBEDDED, pack)
    got = diagnose(load_bundle(EMBEDDED), pack)
    assert got.facts["cdmm"] == "on"
    assert any("torch.cuda.synchronize()" in a for a in got.advice)
    assert any("580.95.05" in a and "3.6.2" in a for a in got.advice)
    assert got.first_fault["kind"] == "segfault"
    assert [e for e in got.evidence if "crc32_16bytes" in e["line"]]
