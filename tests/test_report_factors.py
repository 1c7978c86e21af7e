"""The fewest factors behind each effect: a fleet with four planted effects (a driver + CDMM
configuration, a sick node, an image change on one day, a scale effect) gives four findings, each
naming what it folded ("also seen in ..."), not one finding per configuration tuple that shares a
factor with the effect."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.test_report_findings import Job, fleet, found

SICK = "gb-r07-c05"
STACKS = [  # two drivers, CDMM on or off, one image before the change
    ("570.172.08", "off", "3.6.2", "nvidia_gb200"),
    ("580.95.05", "off", "3.6.2", "nvidia_gb200"),
    ("580.95.05", "on", "3.6.2", "nvidia_gb200"),
]


def four_effects(job: Job, rnd: random.Random) -> None:
    job.config = rnd.choice(STACKS)
    if job.day >= 15:  # every node's new image from the 15th: ncore 3.7.0, more fabric errors
        job.config = (*job.config[:2], "3.7.0", job.config[3])
        job.rates["fabric_error"] = 0.04
    if job.config[:2] == ("580.95.05", "on"):
        job.rates["cdmm_checkpoint_segfault"] = 0.08
    job.rates["nccl_timeout"] = 0.005 * len(job.nodes)
    if SICK in job.nodes and rnd.random() < 0.06:
        job.rates, job.root = {"gpu_xid": 1.0}, SICK


def what(findings: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((f["kind"], f["label"]) for f in findings)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_four_planted_effects_give_four_findings(seed: int, tmp_path) -> None:
    findings = found(fleet(seed, four_effects, n=20_000), tmp_path)
    assert what(findings) == [
        ("change", "fabric_error"),
        ("config", "cdmm_checkpoint_segfault"),
        ("node", "gpu_xid"),
        ("scale", "nccl_timeout"),
    ], [f["text"] for f in findings]
    by_label = {f["label"]: f for f in findings}
    cdmm = by_label["cdmm_checkpoint_segfault"]
    assert cdmm["factors"] == ["cdmm"] and cdmm["subject"]["cdmm"] == "on"
    assert cdmm["subject"]["ncore"] == ""  # the image plays no part: not split by it ("": any value)
    change = by_label["fabric_error"]
    assert change["new"] == {"ncore": ["3.7.0"]}
    assert any(a["subject"].get("ncore") == "3.7.0" for a in change["also_seen_in"]), change


ALL_STACKS = [(d, c, "3.6.2", "nvidia_gb200") for d in ("570.172.08", "580.95.05") for c in ("off", "on")]


def only_580_with_cdmm(job: Job, rnd: random.Random) -> None:
    job.config = rnd.choice(ALL_STACKS)
    if job.config[:2] == ("580.95.05", "on"):
        job.rates["cdmm_checkpoint_segfault"] = 0.08


def driver_580(job: Job, rnd: random.Random) -> None:
    job.config = rnd.choice(ALL_STACKS)
    if job.config[0] == "580.95.05":
        job.rates["cdmm_checkpoint_segfault"] = 0.05


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(("plant", "factors"), [(only_580_with_cdmm, ["driver", "cdmm"]), (driver_580, ["driver"])])
def test_one_effect_one_finding_with_the_fewest_factors_that_explain_it(plant, factors, seed: int, tmp_path) -> None:
    findings = found(fleet(seed, plant, n=20_000), tmp_path)
    assert [(f["kind"], f["factors"]) for f in findings] == [("config", factors)], [f["text"] for f in findings]
    f = findings[0]
    assert f["subject"]["driver"] == "580.95.05" and (f["subject"]["cdmm"] != "") == ("cdmm" in factors)
    # what it folded: each with the evidence that it adds nothing to this finding
    assert f["also_seen_in"] and all(a["p_adds_nothing"] >= 0.001 for a in f["also_seen_in"]), f["also_seen_in"]
    assert "Also seen in: " in f["text"] and "nothing beyond this, p=" in f["text"]


def wide_cdmm_together(job: Job, rnd: random.Random) -> None:
    """nccl_timeout six times as often only where CDMM is on AND the job spans 16 nodes."""
    job.config = rnd.choice(ALL_STACKS)
    if job.config[1] == "on" and len(job.nodes) == 16:
        job.rates["nccl_timeout"] = 0.09


def wide_cdmm_apart(job: Job, rnd: random.Random) -> None:
    """The same two factors acting apart: CDMM triples the rate, 16 nodes triple it, whatever the other."""
    job.config = rnd.choice(ALL_STACKS)
    job.rates["nccl_timeout"] = 0.015 * (3 if job.config[1] == "on" else 1) * (3 if len(job.nodes) == 16 else 1)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_an_interaction_is_one_finding_with_the_rate_in_each_cell(seed: int, tmp_path) -> None:
    findings = found(fleet(seed, wide_cdmm_together, n=20_000), tmp_path)
    assert [(f["kind"], f["factors"]) for f in findings] == [("config", ["cdmm", "nodes"])], [
        f["text"] for f in findings
    ]
    f = findings[0]
    assert (f["subject"]["cdmm"], f["subject"]["nodes"]) == ("on", "9-16") and f["interaction_p"] < 0.001
    both, cdmm_only, wide_only, neither = f["cells"]
    assert both["rate"] > 3 * max(cdmm_only["rate"], wide_only["rate"], neither["rate"])
    assert "rate in each cell" in f["text"] and "CDMM on and nodes 9-16" in f["text"]
    assert any(a["kind"] == "scale" for a in f["also_seen_in"])  # the width trend it causes, folded


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_interaction_is_found_where_the_factors_act_apart(seed: int, tmp_path) -> None:
    findings = found(fleet(seed, wide_cdmm_apart, n=20_000), tmp_path)
    assert sorted((f["kind"], f.get("factors")) for f in findings) == [("config", ["cdmm"]), ("scale", None)], [
        f["text"] for f in findings
    ]
    assert all("cells" not in f for f in findings)
