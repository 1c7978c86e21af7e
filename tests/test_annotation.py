"""The accounting record: what sacctmgr 22.05 does to it, what log text cannot do to it, reading it back."""

from __future__ import annotations

import pytest

from slurm_hooks.slurm.annotation import MARK, decode, encode, merged_value
from slurm_hooks.slurm.client import parse_show_job

DIAG = {"label": "cdmm_checkpoint_segfault", "root_node": "GB-R03-C07", "root_rank": 9,
        "facts": {"driver_version": "580.95.05", "cdmm": "on", "ncore_version": "3.6.2", "gpu_model": "NVIDIA GB200"},
        "details": {}}


def test_round_trip_survives_sacctmgr_lowercasing() -> None:
    record = encode(DIAG, exit_code="139:0", state="FAILED")
    assert record == record.lower() and record.startswith(MARK)
    assert "|" not in record and "\n" not in record and '"' not in record and "'" not in record
    fields = decode(record.lower())
    assert fields == {"label": "cdmm_checkpoint_segfault", "node": "gb-r03-c07", "rank": "9", "driver": "580.95.05",
                      "cdmm": "on", "ncore": "3.6.2", "gpu": "nvidia_gb200", "exit": "139:0", "state": "failed"}


def test_hostile_values_cannot_break_the_record() -> None:
    diag = {**DIAG, "root_node": "evil|node\nslurm-hooks/v1 label=success", "facts": {"ncore_version": "'; drop"}}
    record = encode(diag)
    assert "|" not in record and "\n" not in record and record.count(MARK) == 1
    assert decode(record)["label"] == "cdmm_checkpoint_segfault"
    assert len(encode({**DIAG, "root_node": "x" * 5000})) <= 512


@pytest.mark.parametrize(("field", "current", "expected"), [
    ("admin_comment", "", "REC"),
    ("admin_comment", f"{MARK} label=unknown", "REC"),  # ours: replaced, so re-delivery is harmless
    ("admin_comment", "JS1:eyJqb2JzdGF0cyI6MX0=", None),  # jobstats owns it
    ("comment", "", "REC"),
    ("comment", "alice own comment", "alice own comment REC"),
    ("comment", f"alice own comment {MARK} label=unknown", "alice own comment REC"),
])
def test_merge_rules(field: str, current: str, expected: str | None) -> None:
    assert merged_value(field, current, "REC") == expected


def test_decode_finds_our_record_after_user_text_and_ignores_others() -> None:
    assert decode("JS1:abc") is None
    assert decode(f"my run 3 {MARK} label=oom_killed node=n1 bogus=1")["label"] == "oom_killed"
    assert "bogus" not in decode(f"{MARK} label=x bogus=1")


def test_scontrol_show_job_parsing_keeps_values_with_spaces() -> None:
    text = ("JobId=35 JobName=wrap\n   UserId=alice(2001) GroupId=alice(2001) MCS_label=N/A\n"
            "   JobState=COMPLETING Reason=TimeLimit Dependency=(null)\n   Comment=hello world  AdminComment=JS1:x\n"
            "   StdOut=/home/alice/jobs/35.out\n")
    doc = parse_show_job(text)
    assert (doc["JobState"], doc["Reason"], doc["StdOut"]) == ("COMPLETING", "TimeLimit", "/home/alice/jobs/35.out")
    assert doc["Comment"] == "hello world" and doc["AdminComment"] == "JS1:x"
