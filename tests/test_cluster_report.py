"""`slurm-hooks report` on a real Slurm: a mix of jobs, counted exactly in every format, and the
two jobs without a diagnosis named with their reasons."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
from datetime import datetime, timedelta

import pytest

from tests import devcluster as dc

pytestmark = pytest.mark.slurm
SEGV = 'srun python3 -c "import ctypes; ctypes.string_at(0)"'
EXPECTED = {
    "success": 1,
    "cdmm_checkpoint_segfault": 1,
    "app_segfault": 1,
    "cancelled": 1,
    "time_limit": 1,
    "(no record)": 2,
}


def wait_logged(job: str, event: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not any(f'"event": "{event}"' in line for line in dc.hook_log(job)):
        assert time.monotonic() < deadline, dc.hook_log(job)
        time.sleep(0.5)


@pytest.fixture(scope="module")
def jobs() -> dict[str, str]:
    dc.require_cluster()
    # Each node its own kernel-log file: the machine's one ring buffer holds every segfault of the
    # machine (another lane's, another user's), which a job that runs a minute would take as its own.
    dc.configure(kernel_files=True)
    time.sleep(2.5)  # the previous test's last job ended (dc.wait) at least this long before the window opens
    # Kernel lines are node-wide: a job running beside a segfault may take it as its own evidence
    # (README), so the crashing jobs run first and the others only once they are over.
    jobs = {
        "success": dc.submit("echo fine"),
        "ckpt": dc.submit(f"echo 'saving checkpoint at iteration 2000 to /ckpt'\n{SEGV}"),
        "app": dc.submit(SEGV),
        "foreign": dc.submit(f"sleep 3\n{SEGV}"),
    }
    # The window opens at the first job's submission, by Slurm's clock in Slurm's whole seconds. A start
    # taken from this process's clock, 2 s back, once fell in the second the previous test's job ended.
    since = dc.job_field(jobs["success"], "SubmitTime")
    assert since, "the first job is not known to slurmctld"
    dc.wait_running(jobs["foreign"])
    dc.run("scontrol", "update", f"jobid={jobs['foreign']}", "admincomment=JS1:eyJqb2JzdGF0cyI6MX0=")
    for name, job in jobs.items():
        dc.wait(job)
        if name == "foreign":
            wait_logged(job, "annotation_left_alone")
        else:
            dc.wait_annotated(job)
    time.sleep(3)
    later = {
        "cancel": dc.submit("sleep 300"),
        "timeout": dc.submit("sleep 300", args="--time=1"),
        "opted_out": dc.submit("exit 3", args="--comment='keep out: slurm-hooks=off'"),
    }
    dc.wait_running(later["cancel"])
    dc.run("scancel", later["cancel"])
    for name, job in later.items():
        dc.wait(job, timeout=240)
        if name == "opted_out":
            wait_logged(job, "opted_out")
        else:
            dc.wait_annotated(job)
    jobs.update(later)
    jobs["since"] = since
    jobs["until"] = (datetime.now() + timedelta(seconds=5)).isoformat(timespec="seconds")
    return jobs


def report(jobs: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "slurm_hooks",
            "report",
            "--since",
            jobs["since"],
            "--until",
            jobs["until"],
            "--user",
            "alice",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_json_counts_each_job_and_names_the_uncovered(jobs: dict[str, str]) -> None:
    doc = json.loads(report(jobs, "--format", "json", "--details", "20"))
    assert {r["label"]: r["jobs"] for r in doc["labels"]} == EXPECTED
    assert (doc["totals"]["jobs"], doc["totals"]["failed"], doc["totals"]["coverage"]["diagnosed"]) == (7, 6, 4)
    uncovered = {u["reason"]: u["job_ids"] for u in doc["totals"]["coverage"]["uncovered"]}
    assert uncovered == {"opted_out": [jobs["opted_out"]], "foreign_admin_comment": [jobs["foreign"]]}
    assert doc["records"]["ours"] == 5 and doc["records"]["jobstats"] == 1 and doc["records"]["none"] == 1
    details = {d["job_id"]: d for d in doc["details"]}
    assert details[jobs["ckpt"]]["diagnosis"]["first_fault"]["kind"] == "launched_segfault"  # --details: from the spool
    assert details[jobs["foreign"]]["diagnosis"]["label"] in ("app_segfault", "cdmm_checkpoint_segfault")
    assert details[jobs["opted_out"]]["diagnosis"] is None  # opted out: nothing was diagnosed
    assert [c["driver"] for c in doc["configs"]] == ["580.95.05"] * 5


def test_csv_and_text_count_the_same(jobs: dict[str, str]) -> None:
    rows = list(csv.DictReader(io.StringIO(report(jobs, "--format", "csv", "--group-by", "label"))))
    assert {r["label"]: int(r["jobs"]) for r in rows} == EXPECTED
    text = report(jobs)
    for label, n in EXPECTED.items():
        assert re.search(rf"^{re.escape(label)} +{n} ", text, re.M), (label, text)
    coverage = report(jobs, "--group-by", "coverage").splitlines()
    for reason, job in (("opted_out", jobs["opted_out"]), ("foreign_admin_comment", jobs["foreign"])):
        line = next(x for x in coverage if f"no diagnosis: {reason}" in x)
        assert line.split()[-2:] == ["1", job]


def test_html_counts_the_same(jobs: dict[str, str], tmp_path) -> None:
    page = tmp_path / "report.html"
    report(jobs, "--format", "html", "-o", str(page))
    html = page.read_text()
    for label, n in EXPECTED.items():
        assert f"<td>{label}</td><td>{n}</td>" in html
    assert "7 jobs ended, 6 failed; 4 of the failed" in html


def test_clusters_all_reads_each_cluster_through_sacct_m(jobs: dict[str, str]) -> None:
    doc = json.loads(report(jobs, "--format", "json", "--clusters", "all"))
    (name,) = doc["clusters"]  # the dev cluster's slurmdbd serves one cluster, read by its name (-M)
    assert name and {r["label"]: r["jobs"] for r in doc["labels"]} == EXPECTED
    assert {r["cluster"] for r in doc["labels"]} == {name} and doc["totals"]["jobs"] == 7
    assert doc["records"]["ours"] == 5  # the same jobs as the totals, in every section


def test_saved_rows_read_back_as_the_live_read(jobs: dict[str, str], tmp_path) -> None:
    """`--save` writes sacct's rows with a fresh delimiter named in the first line; `--input` reads
    them back to the same counts as a live read, and says the delimiter was fresh (no warning)."""
    saved = tmp_path / "rows"
    assert report(jobs, "--save", str(saved)) == ""
    assert saved.read_bytes().startswith(b"#slurm-hooks-sacct/1 sep=")
    live = json.loads(report(jobs, "--format", "json"))
    again = json.loads(report(jobs, "--format", "json", "--input", str(saved)))
    assert again["labels"] == live["labels"] and again["totals"]["jobs"] == live["totals"]["jobs"]
    assert again["input"]["delimiter"] == "fresh"
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "report", "--save", str(saved)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and "File exists" in out.stderr  # a file made first is never written through
