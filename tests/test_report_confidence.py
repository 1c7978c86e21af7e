"""A diagnosis its Epilog called a guess (`conf=low`, the record's last key) is counted apart, under
its label marked "(low confidence)", and never makes a finding: the same planted effect that is a
finding with confident records is none with guessed ones."""

from __future__ import annotations

import random

import pytest

from slurm_hooks.config import Config
from slurm_hooks.report.read import Filters
from slurm_hooks.report.records import RecordReader
from slurm_hooks.report.run import report
from tests.test_report_findings import SINCE, UNTIL, Job, Plant, cdmm_segfaults, fleet, sick_node

LOW = " (low confidence)"


def guessed(plant: Plant, label: str) -> Plant:
    def planted(job: Job, rnd: random.Random) -> None:
        before = dict(job.rates)
        plant(job, rnd)
        if job.rates != before:  # the planted effect's jobs: their diagnoses of it are guesses
            job.guess = label

    return planted


@pytest.mark.parametrize(("plant", "label"), [(sick_node, "gpu_xid"), (cdmm_segfaults, "cdmm_checkpoint_segfault")])
def test_low_confidence_diagnoses_are_counted_apart_and_make_no_finding(plant: Plant, label: str, tmp_path) -> None:
    config = Config(spool_dir=str(tmp_path))
    confident = report(fleet(1, plant), config, Filters(), SINCE, UNTIL)
    assert [f["label"] for f in confident["findings"]] == [label]  # the same effect, confident: a finding
    doc = report(fleet(1, guessed(plant, label)), config, Filters(), SINCE, UNTIL)
    assert doc["findings"] == [], [f["text"] for f in doc["findings"]]
    labels = {r["label"]: r["jobs"] for r in doc["labels"]}
    assert labels[label + LOW] > 10 and doc["totals"]["low_confidence"] == sum(
        n for lab, n in labels.items() if lab.endswith(LOW)
    )
    assert doc["totals"]["coverage"]["diagnosed"] == confident["totals"]["coverage"]["diagnosed"]  # still diagnosed


@pytest.mark.parametrize(
    "text",
    [
        "slurm-hooks/v1 label=gpu_xid node=gb-r01-c01 driver=580.95.05 state=failed conf=low",  # as encoded
        "SLURM-HOOKS/V1 LABEL=GPU_XID NODE=GB-R01-C01 CONF=LOW",  # its case changed by a store
        "slurm-hooks/v1 conf=low label=gpu_xid node=gb-r01-c01",  # keys out of order: decoded
    ],
)
def test_conf_low_is_read_however_the_record_is_written(text: str) -> None:
    record = RecordReader(("gpu_xid", "success"), False).of_text(text)
    assert (record.bucket, record.label, record.node) == ("ours", "gpu_xid" + LOW, "gb-r01-c01")


def test_a_confident_record_keeps_its_label() -> None:
    record = RecordReader(("gpu_xid",), False).of_text("slurm-hooks/v1 label=gpu_xid node=gb-r01-c01 conf=high")
    assert record.label == "gpu_xid"
