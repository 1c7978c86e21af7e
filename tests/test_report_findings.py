"""Findings on synthetic fleets: each kind of effect planted alone is found with the right
subject, and a fleet with no effect at all yields no finding, whatever the seed."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import pytest

from slurm_hooks.config import Config
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import render, report
from slurm_hooks.slurm.client import AccountingRow
from tests.test_report_aggregate import BASE

SINCE, UNTIL = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, tzinfo=timezone.utc)
NODES = [f"gb-r{r:02d}-c{c:02d}" for r in range(1, 21) for c in range(1, 19)]  # 360 nodes, 20 racks
CONFIGS = [
    ("570.172.08", "off", "3.5.9", "nvidia_gb200"),
    ("580.95.05", "off", "3.6.2", "nvidia_gb200"),
    ("580.95.05", "on", "3.6.2", "nvidia_gb200"),
    ("570.172.08", "off", "3.5.9", "nvidia_h100_80gb_hbm3"),
]
BASE_RATES = {"app_segfault": 0.02, "gpu_xid": 0.005, "fabric_error": 0.01, "nccl_timeout": 0.015, "oom_killed": 0.01}
STATE = {"success": "COMPLETED", "oom_killed": "OUT_OF_MEMORY"}
ROOTED = {"app_segfault", "gpu_xid", "fabric_error", "nccl_timeout", "oom_killed"}


@dataclass
class Job:
    day: int
    nodes: list[str]
    config: tuple[str, str, str, str]
    user: str
    rates: dict[str, float]
    root: str = ""  # where a failure is rooted ("" : one of its nodes at random)
    guess: str = ""  # a label whose diagnosis the Epilog calls a guess here (`conf=low`, the record's last key)


Plant = Callable[[Job, random.Random], None]


def fleet(seed: int, plant: Plant | None = None, n: int = 12_000) -> list[AccountingRow]:
    rnd = random.Random(seed)
    rows = []
    for i in range(n):
        width = rnd.choice((1, 1, 1, 2, 2, 4, 8, 16))
        first = rnd.randrange(len(NODES) - width)
        job = Job(
            day=1 + i * 28 // n,
            nodes=NODES[first : first + width],
            config=rnd.choice(CONFIGS),
            user=f"user{rnd.randint(1, 40)}",
            rates=dict(BASE_RATES),
        )
        if plant:
            plant(job, rnd)
        label, x = "success", rnd.random()
        for name, p in job.rates.items():
            if x < p:
                label = name
                break
            x -= p
        root = (job.root or rnd.choice(job.nodes)) if label in ROOTED or (job.root and label != "success") else ""
        driver, cdmm, ncore, gpu = job.config
        record = (
            f"slurm-hooks/v1 label={label}"
            + (f" node={root}" if root else "")
            + (" exc=disk_full excnode=1" if label == "app_exception" else "")  # a kind that points at the node
            + f" driver={driver} cdmm={cdmm} ncore={ncore} gpu={gpu} state={STATE.get(label, 'failed').lower()}"
            + (" conf=low" if label == job.guess else "")
        )
        rows.append(
            replace(
                BASE,
                job_id=str(1000 + i),
                state=STATE.get(label, "FAILED"),
                end=f"2026-11-{job.day:02d}T12:00:00",
                elapsed_s=rnd.randint(600, 20_000),
                node_list=",".join(job.nodes),
                n_nodes=len(job.nodes),
                n_gpus=4 * len(job.nodes),
                user=job.user,
                account=f"acct{int(job.user[4:]) % 7}",
                admin_comment=record,
            )
        )
    return rows


def found(rows: list[AccountingRow], tmp_path) -> list[dict[str, Any]]:
    doc = report(rows, Config(spool_dir=str(tmp_path)), Filters(), SINCE, UNTIL)
    assert render(doc, "text", None).count("\n") < 200  # a screen or two
    return doc["findings"]


def cdmm_segfaults(job: Job, rnd: random.Random) -> None:
    if job.config[1] == "on":
        job.rates["cdmm_checkpoint_segfault"] = 0.08


def sick_node(job: Job, rnd: random.Random) -> None:
    if "gb-r07-c05" in job.nodes:
        job.rates["gpu_xid"] = 0.12
        job.root = "gb-r07-c05"


def new_image(job: Job, rnd: random.Random) -> None:
    if job.day >= 15:
        job.config = ("590.10.01", *job.config[1:])  # every node's new image from the 15th
        job.rates["fabric_error"] = 0.04


def wide_timeouts(job: Job, rnd: random.Random) -> None:
    job.rates["nccl_timeout"] = 0.01 * len(job.nodes)


def careless_user(job: Job, rnd: random.Random) -> None:
    if job.user == "user13":
        job.rates["app_segfault"] = 0.25


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_fleet_without_effects_has_no_findings(seed: int, tmp_path) -> None:
    assert found(fleet(seed), tmp_path) == []


@pytest.mark.parametrize(
    ("plant", "kind", "label", "subject"),
    [
        (cdmm_segfaults, "config", "cdmm_checkpoint_segfault", {"driver": "580.95.05", "cdmm": "on"}),
        (sick_node, "node", "gpu_xid", {"node": "gb-r07-c05"}),
        (new_image, "change", "fabric_error", {"day": "2026-11-15", "direction": "up"}),
        (wide_timeouts, "scale", "nccl_timeout", {"spanned": "nodes"}),
        (careless_user, "group", "failed", {"user": "user13"}),
    ],
)
@pytest.mark.parametrize("seed", [1, 2])
def test_a_planted_effect_is_found_with_its_subject(
    plant: Plant, kind: str, label: str, subject: dict[str, str], seed: int, tmp_path
) -> None:
    findings = found(fleet(seed, plant), tmp_path)
    ours = [f for f in findings if f["kind"] == kind and f["label"] == label]
    assert ours, [f["text"] for f in findings]
    assert subject.items() <= ours[0]["subject"].items(), ours[0]
    f = ours[0]
    assert f["p_value"] < 0.001 and f["ratio"] > 1 and f["ci_low"] > 1 and f["node_hours"] > 0
    assert set(f) >= {"kind", "label", "subject", "jobs", "failures", "rate", "baseline_rate", "ratio"}
    assert set(f) >= {"ci_low", "ci_high", "p_value", "node_hours", "gpu_hours", "text"}
    # what else is found follows from the plant: a new driver is also a configuration, a careless
    # user's account is also a group, a node's failures also fail its rack's jobs; nothing unrelated
    for other in findings:
        assert other["label"] in (label, "failed"), other["text"]


def test_the_change_names_what_was_first_seen_that_day(tmp_path) -> None:
    change = next(f for f in found(fleet(5, new_image), tmp_path) if f["kind"] == "change")
    assert change["new"] == {"driver": ["590.10.01"]}
    assert "first seen that day: driver 590.10.01" in change["text"]


@pytest.mark.parametrize("seed", [6, 7])
def test_a_busy_fleet_without_effects_makes_many_node_tests_and_no_finding(seed: int, tmp_path) -> None:
    from slurm_hooks.report.findings import tests as _tests
    from slurm_hooks.report.parallel import count_rows
    from slurm_hooks.report.run import counting

    rows = fleet(seed, lambda job, rnd: job.rates.update({k: 3 * v for k, v in BASE_RATES.items()}), n=30_000)
    tally = count_rows(rows, counting(Config(spool_dir=str(tmp_path)), Filters(), 0, SINCE, UNTIL))
    kinds = [test.kind for test in _tests(tally)]
    assert kinds.count("node") > 100  # nodes with 5 or more roots of a label: tested, and none stands out
    assert found(rows, tmp_path) == []


def test_two_failures_on_one_node_are_noise(tmp_path) -> None:
    planted: list[int] = []

    def twice(job: Job, rnd: random.Random) -> None:
        if "gb-r07-c05" in job.nodes and job.day in (3, 9) and len(planted) < 2:
            job.rates = {"gpu_xid": 1.0}
            job.root = "gb-r07-c05"
            planted.append(job.day)

    rows = fleet(8, twice)
    assert sum("label=gpu_xid node=gb-r07-c05" in r.admin_comment for r in rows) >= 2
    assert found(rows, tmp_path) == []


def test_the_cluster_is_a_dimension_of_every_view_and_finding(tmp_path) -> None:
    from slurm_hooks.report.parallel import count_rows
    from slurm_hooks.report.run import counting, document
    from slurm_hooks.report.views import VIEWS, view

    config = Config(spool_dir=str(tmp_path))
    tallies = [
        count_rows(rows, counting(config, Filters(), 0, SINCE, UNTIL, name))
        for name, rows in (("east", fleet(1, sick_node)), ("west", fleet(2)))
    ]
    doc = document(tallies, config, Filters(), SINCE, UNTIL)
    assert doc["clusters"] == ["east", "west"] and doc["totals"]["jobs"] == 24_000
    assert [(f["kind"], f["subject"]["cluster"]) for f in doc["findings"]] == [("node", "east")]
    assert doc["findings"][0]["text"].startswith("[east] gb-r07-c05")
    for name in VIEWS:
        columns, rows = view(doc, name)
        if name not in ("coverage", "records"):  # those two are the document's, over both
            assert columns[0] == "cluster", name
            assert {r[0] for r in rows} <= {"east", "west"}
    labels = {(r["cluster"], r["label"]): r["jobs"] for r in doc["labels"]}
    assert sum(n for (c, _), n in labels.items() if c == "east") == 12_000
