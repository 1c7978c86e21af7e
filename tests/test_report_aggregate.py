"""The report's one pass over accounting rows (a fake Slurm's rows, a real spool directory)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from slurm_hooks.config import Annotation, Config
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import parse_when, render, report
from slurm_hooks.report.stats import wilson
from slurm_hooks.slurm.client import AccountingRow

SINCE, UNTIL = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, tzinfo=timezone.utc)
BASE = AccountingRow(
    job_id="1",
    state="FAILED",
    exit_code="1:0",
    derived_exit_code="0:0",
    start="2026-11-27T03:00:00",
    end="2026-11-27T04:00:00",
    elapsed_s=3600,
    node_list="gb-r07-c[01-02]",
    n_nodes=2,
    n_gpus=8,
    partition="batch",
    user="alice",
    account="ml",
    comment="",
    admin_comment="",
)
STACK = "driver=580.95.05 cdmm=on ncore=3.6.2 gpu=nvidia_gb200"


def row(job: str, admin: str = "", **kw: object) -> AccountingRow:
    return replace(BASE, job_id=job, admin_comment=admin, **kw)


def rec(label: str, node: str = "") -> str:
    return f"slurm-hooks/v1 label={label}" + (f" node={node}" if node else "") + f" {STACK}"


@pytest.fixture
def config(tmp_path) -> Config:
    spool = tmp_path / "spool"
    (spool / "outbox").mkdir(parents=True)
    (spool / "outbox" / "7.json").write_text("{}")
    (spool / "jobs" / "8").mkdir(parents=True)
    (spool / "jobs" / "8" / "diagnosis.json").write_text(
        json.dumps(
            {"label": "app_segfault", "summary": "rank 0 segfaulted", "first_fault": {"kind": "segfault", "node": "n1"}}
        )
    )
    return Config(spool_dir=str(spool), annotation=Annotation(mode="shadow"))


def rows() -> list[AccountingRow]:
    return [
        row("1", rec("success"), state="COMPLETED"),
        row("2", rec("success"), state="COMPLETED", node_list="gb-r[07-09]-c01", n_nodes=3),
        *[row(str(n), rec("cdmm_checkpoint_segfault", "gb-r07-c02")) for n in (3, 4, 5)],
        row("6", rec("app_segfault", "gb-r07-c02"), state="COMPLETED"),  # script exited 0, a step segfaulted
        row("7"),
        row("8"),  # failed, no record: outbox not flushed; shadow mode
        row("9", comment="x slurm-hooks=off"),
        row("10", "JS1:abc"),
        row("11", state="TIMEOUT"),
        row("12", state="RUNNING", end="Unknown"),
        row("13", "slurm-hooks/v1 label=warp_core_breach"),
        row("14", "slurm-hooks/v1 label=app_seg"),
        row("15", rec("cancelled"), state="CANCELLED by 2001", node_list="None assigned", n_nodes=0, n_gpus=0),
        row("16", comment="A" * 200 + "\0truncated"),
        row("17", comment="x|y\nz"),
        row(""),  # a line sacct printed that could not be read
    ]


def test_totals_coverage_and_buckets(config: Config) -> None:
    doc = report(rows(), config, Filters(), SINCE, UNTIL, details_limit=50)
    t = doc["totals"]
    assert (t["jobs"], t["succeeded"], t["failed"], t["crashed"], t["not_ended"]) == (16, 2, 13, 1, 1)
    assert t["coverage"]["failed"] == 14  # failed and crashed alike need a diagnosis
    cov = t["coverage"]
    assert cov["diagnosed"] == 5  # 3 checkpoint segfaults, the app segfault, the cancel
    reasons = {u["reason"]: u["job_ids"] for u in cov["uncovered"]}
    assert reasons == {
        "outbox_not_flushed": ["7"],
        "shadow_mode": ["8"],
        "opted_out": ["9"],
        "foreign_admin_comment": ["10"],
        "unreadable_record": ["13", "14"],
        "not_processed": ["11", "16", "17"],
    }
    assert doc["records"] == {
        "ours": 7,
        "none": 6,  # the running job is not one of the document's jobs: counted apart
        "unknown_label": 1,
        "truncated": 1,
        "newer_schema": 0,
        "jobstats": 1,
        "free_text": 0,
        "untrusted_comment": 0,
    }
    assert doc["input"] == {
        "rows": 18,
        "unreadable_rows": 1,
        "no_nodes": 1,
        "comment_cut": 1,
        "comment_newline": 1,
        "comment_delimiter": 1,
        "node_list_cut": 0,
        "node_list_bad": 0,
    }
    details = {d["job_id"]: d["diagnosis"] for d in doc["details"]}
    assert details["8"]["summary"] == "rank 0 segfaulted" and details["7"] is None
    text = render(doc, "text", None)  # --details shows in the terminal too
    assert "rank 0 segfaulted" in text and "kind=segfault node=n1" in text and "(none in this spool)" in text


def test_hours_lost_configs_scale_roots(config: Config) -> None:
    doc = report(rows(), config, Filters(), SINCE, UNTIL)
    labels = {r["label"]: r for r in doc["labels"]}
    assert labels["cdmm_checkpoint_segfault"] == {
        "label": "cdmm_checkpoint_segfault",
        "jobs": 3,
        "node_hours": 6.0,
        "gpu_hours": 24.0,
        "crashed": 0,
        "job_share": 0.1875,  # 3 of 16 jobs
        "gpu_share": 0.2,  # 24 of 120 GPU-hours (15 jobs of 8 GPUs for an hour)
        "cluster": "",
    }
    assert labels["app_segfault"]["crashed"] == 1
    assert labels["(no record)"]["jobs"] == 9 and labels["success"]["node_hours"] == 0.0
    cdmm = next(c for c in doc["configs"] if c["label"] == "cdmm_checkpoint_segfault")
    assert (cdmm["driver"], cdmm["cdmm"], cdmm["jobs"], cdmm["config_jobs"]) == ("580.95.05", "on", 3, 7)
    racks = {r["bucket"]: (r["jobs"], r["failed"]) for r in doc["scale"]["racks"]}
    assert racks == {"0": (1, 1), "1": (14, 13), "3-4": (1, 0)}
    assert doc["root_nodes"] == [
        {
            "node": "gb-r07-c02",
            "rack": "07",
            "failures": 4,
            "labels": {"cdmm_checkpoint_segfault": 3, "app_segfault": 1},
            "days": ["2026-11-27"],
            "cluster": "",
        }
    ]
    assert doc["root_racks"] == [{"rack": "07", "failures": 4, "nodes": 1, "cluster": ""}]
    day = {"day": "2026-11-27", "label": "cdmm_checkpoint_segfault", "failures": 3, "crashed": 0, "jobs": 16}
    assert {**day, "cluster": ""} in doc["per_day"]


def test_filters(config: Config) -> None:
    doc = report(rows(), config, Filters(label=frozenset({"cdmm_checkpoint_segfault"})), SINCE, UNTIL)
    assert doc["totals"]["jobs"] == 16  # --label focuses the rates, it keeps their denominators
    assert [r["label"] for r in doc["labels"]] == ["cdmm_checkpoint_segfault", "success"]
    assert [(c["label"], c["jobs"], c["config_jobs"]) for c in doc["configs"]] == [("cdmm_checkpoint_segfault", 3, 7)]
    assert {r["bucket"]: r["failed"] for r in doc["scale"]["racks"]} == {"0": 0, "1": 3, "3-4": 0}
    assert doc["root_nodes"][0]["labels"] == {"cdmm_checkpoint_segfault": 3}
    doc = report(rows(), config, Filters(node=frozenset({"gb-r09-c01"})), SINCE, UNTIL)
    assert doc["totals"]["jobs"] == 1
    doc = report(rows(), config, Filters(user=frozenset({"bob"})), SINCE, UNTIL)
    assert doc["totals"]["jobs"] == 0 and doc["totals"]["coverage"]["ratio"] == 1.0


def test_wilson_keeps_small_samples_honest() -> None:
    low, high = wilson(1, 3)
    assert (round(low, 3), round(high, 3)) == (0.061, 0.792)
    low, high = wilson(1000, 3000)
    assert high - low < 0.04
    assert wilson(0, 0) == (0.0, 0.0)


def test_parse_when() -> None:
    now = datetime(2026, 11, 30, 12, tzinfo=timezone.utc)
    assert parse_when("7d", now) == datetime(2026, 11, 23, 12, tzinfo=timezone.utc)
    assert parse_when("12h", now).hour == 0 and parse_when("now", now) == now
    assert parse_when("2026-11-01T00:00:00+00:00", now) == SINCE
    with pytest.raises(ValueError, match="neither a duration"):
        parse_when("last tuesday", now)


def test_app_exception_counts_by_kind_and_blames_a_node_only_when_its_kind_does(config: Config) -> None:
    def exc(job: str, kind: str, node: str, at_node: bool = False) -> AccountingRow:
        text = f"slurm-hooks/v1 label=app_exception node={node} rank=0 {STACK} exc={kind}" + (
            " excnode=1" if at_node else ""
        )
        return row(job, text)

    jobs = [
        *[exc(str(n), "file_not_found", "gb-r07-c01") for n in range(1, 5)],  # the user's bug, on one node
        *[exc(str(n), "cuda_error", "gb-r07-c02", at_node=True) for n in range(5, 8)],
        exc("8", "disk_full", "gb-r07-c02"),  # a shared file system filled up: not the node
    ]
    doc = report(jobs, config._replace(report=config.report._replace(repeat_root_min=1)), Filters(), SINCE, UNTIL)
    label = next(lab for lab in doc["labels"] if lab["label"] == "app_exception")
    assert label["jobs"] == 8 and label["kinds"] == {"file_not_found": 4, "cuda_error": 3, "disk_full": 1}
    assert [(r["node"], r["labels"]) for r in doc["root_nodes"]] == [("gb-r07-c02", {"app_exception": 3})]
    assert "app_exception/file_not_found  4" in render(doc, "text", None)
