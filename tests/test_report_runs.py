"""Runs, not job ids (issues 29 and 30): the report reads every run of a requeued job (`sacct -D`,
where an earlier run's row reads REQUEUED), counts each run once, and says how many runs ended in a
requeue and how many succeeded after one. A run's record names its run (`run=`, slurm/job.py
RunId.tag); a restart count above 0 there makes it a later run. Saved rows, as `report --input` reads
them, through the real command."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_report_hostile import report, row

MARK = "slurm-hooks/v1"
RUN1 = "r0-t1764212400"  # the first run: no restart yet
RUN2 = "r1-t1764216000"  # the same job id after `scontrol requeue` (or Slurm's own after a node failure)


def _totals(tmp_path: Path, text: str) -> dict[str, int]:
    done, _ = report(tmp_path, text, "--format", "json")
    assert done.returncode == 0, done.stderr[-2000:]
    totals: dict[str, int] = json.loads(done.stdout)["totals"]
    return totals


def test_a_requeued_job_counts_each_run_and_shows_it_recovered(tmp_path: Path) -> None:
    first = row(
        "700",
        state="REQUEUED",
        end="2026-11-27T03:30:00",
        admincomment=f"{MARK} label=node_fail node=gb-r07-c02 state=requeued run={RUN1}",
    )
    second = row("700", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success run={RUN2}")
    totals = _totals(tmp_path, first + second + row("701"))
    assert (totals["jobs"], totals["failed"], totals["succeeded"]) == (3, 2, 1)
    assert (totals["requeued_runs"], totals["succeeded_after_requeue"]) == (1, 1)
    assert totals["not_ended"] == 0  # a REQUEUED row is a run that ended, not a job still going


def test_a_run_without_a_restart_in_its_record_is_no_rerun(tmp_path: Path) -> None:
    """Records from before run= (or a first run) and jobs never requeued: nothing to report."""
    text = row("800", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success run={RUN1}")
    text += row("801", state="COMPLETED", exitcode="0:0", admincomment=f"{MARK} label=success")
    totals = _totals(tmp_path, text)
    assert (totals["jobs"], totals["requeued_runs"], totals["succeeded_after_requeue"]) == (2, 0, 0)


def test_a_requeued_run_without_a_record_is_a_failure_without_a_diagnosis(tmp_path: Path) -> None:
    text = row("900", state="REQUEUED", admincomment="") + row("900", state="PENDING", admincomment="")
    done, _ = report(tmp_path, text, "--format", "json")
    doc = json.loads(done.stdout)
    assert (doc["totals"]["jobs"], doc["totals"]["not_ended"], doc["totals"]["requeued_runs"]) == (1, 1, 1)
    assert doc["totals"]["coverage"]["failed"] == 1 and doc["totals"]["coverage"]["diagnosed"] == 0


def test_the_text_coverage_names_the_requeues_only_where_there_are_some(tmp_path: Path) -> None:
    requeued = row("700", state="REQUEUED", admincomment=f"{MARK} label=node_fail node=gb-r07-c02 run={RUN1}")
    done, _ = report(tmp_path, requeued + row("701"), "--group-by", "coverage")
    assert "runs that ended in a requeue" in done.stdout and "succeeded after a requeue" not in done.stdout
    done, _ = report(tmp_path, row("701"), "--group-by", "coverage")
    assert "requeue" not in done.stdout
