"""Only whole slurm-hooks/v1 records with a known label are trusted; the rest land in named buckets."""

from __future__ import annotations

import pytest

from slurm_hooks.diagnose import LABELS
from slurm_hooks.report.records import RecordReader
from slurm_hooks.slurm.accounting import TRUNCATED
from slurm_hooks.slurm.annotation import encode

OURS = encode(
    {
        "label": "cdmm_checkpoint_segfault",
        "root_node": "gb-r07-c02",
        "root_rank": 6,
        "facts": {"driver_version": "580.95.05", "cdmm": "on", "ncore_version": "3.6.2"},
    },
    "139:0",
    "FAILED",
)


@pytest.mark.parametrize(
    ("admin", "bucket"),
    [
        (OURS, "ours"),
        ("", "none"),
        ("slurm-hooks/v1 label=quantum_flux node=a", "unknown_label"),  # a newer version's label
        ("slurm-hooks/v1 label=cdmm_check", "truncated"),
        ("slurm-hooks/v1 label=app_segfault node=gb-r07-c0", "ours"),  # a cut value cannot be told from a real one
        ("slurm-hooks/v1 label=app_segfault cdm", "truncated"),  # a cut key can
        ("slurm-hooks/v1 node=gb-r07", "truncated"),
        ("slurm-hoo", "truncated"),
        ("slurm-hooks/v2 label=app_segfault", "newer_schema"),
        (OURS.upper(), "ours"),  # sacctmgr 24.11 keeps case: a record's case never decides
        ("slurm-hooks/v1 label=APP_SEGFAULT", "ours"),
        ("SLURM-HOOKS/V2 label=app_segfault", "newer_schema"),
        ("JS1:eyJqb2JzdGF0cyI6MX0=", "jobstats"),
        ("js1:eyjqb2jzdgf0cyi6mx0=", "jobstats"),  # lowercased by sacctmgr: still jobstats', still not ours
        ("checked by ops | see ticket\nline two", "free_text"),
    ],
)
def test_buckets(admin: str, bucket: str) -> None:
    assert RecordReader(LABELS, trust_comment=False).read(admin, "")[0] == bucket


def test_fields_of_a_trusted_record() -> None:
    record = RecordReader(LABELS, trust_comment=False).read(OURS, "")
    assert record == ("ours", "cdmm_checkpoint_segfault", "580.95.05 on 3.6.2 ", "gb-r07-c02", "failed", "", False)


@pytest.mark.parametrize(
    ("run", "rerun"),
    [("r0-t1764212400", False), ("r1-t1764216000", True), ("s0a1b2c3-r12-t1764216000", True), ("t1764216000", False)],
)
def test_a_record_whose_run_counts_a_restart_is_a_rerun(run: str, rerun: bool) -> None:
    """sacct -D gives each run of a requeued job its row; `run=` says which run a record is of."""
    record = RecordReader(LABELS, trust_comment=False).read(f"slurm-hooks/v1 label=success run={run}", "")
    assert (record.bucket, record.rerun) == ("ours", rerun)


def test_the_users_comment_is_trusted_only_where_the_site_annotates_it() -> None:
    forged = "my text slurm-hooks/v1 label=success"
    assert RecordReader(LABELS, trust_comment=False).read("", forged).bucket == "untrusted_comment"
    assert RecordReader(LABELS, trust_comment=False).read("JS1:x", forged)[0] == "jobstats"
    assert RecordReader(LABELS, trust_comment=True).read("", forged) == ("ours", "success", "   ", "", "", "", False)
    assert RecordReader(LABELS, trust_comment=True).read("", "slurm-hooks/v1 label=app" + TRUNCATED)[0] == "truncated"


def test_an_app_exception_names_its_node_only_when_its_kind_points_at_it() -> None:
    reader = RecordReader(LABELS, trust_comment=False)
    mine = "slurm-hooks/v1 label=app_exception node=gb-r07-c02 rank=3 exc=file_not_found"
    assert (reader.read(mine, "").node, reader.read(mine, "").exc) == ("", "file_not_found")
    pointed = reader.read(mine.replace("file_not_found", "io_error excnode=1"), "")
    assert (pointed.node, pointed.exc) == ("gb-r07-c02", "io_error")
