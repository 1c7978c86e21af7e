"""`--explain N`: the failed jobs behind finding N, read again from the same rows: exactly the jobs
the finding counts (as many as its failures), each with its id, nodes and record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report_scale import synthetic_rows
from slurm_hooks.cli import main
from slurm_hooks.config import Config
from slurm_hooks.report.explain import Explained
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import counting, report
from tests.test_report_factors import four_effects, wide_cdmm_together
from tests.test_report_findings import SINCE, UNTIL, careless_user, fleet


@pytest.mark.parametrize("plant", [four_effects, wide_cdmm_together, careless_user])
def test_each_finding_explains_exactly_the_failures_it_counts(plant, tmp_path) -> None:
    rows = fleet(1, plant, n=20_000)
    config = Config(spool_dir=str(tmp_path))
    findings = report(rows, config, Filters(), SINCE, UNTIL)["findings"]
    assert findings
    for f in findings:
        explained = Explained(f, counting(config, Filters(), 0, SINCE, UNTIL))
        explained.rows(rows)
        doc = explained.document()
        assert doc["jobs_total"] == f["failures"], f["text"]
        assert len(doc["jobs"]) == min(50, f["failures"])
        ids = [int(j["job_id"]) for j in doc["jobs"]]
        assert ids == sorted(ids)  # the lowest ids, whatever order the rows came in
        for job in doc["jobs"]:
            assert job["nodes"] and job["record"].startswith("slurm-hooks/v1")
            if f["kind"] != "group":
                assert f"label={f['label']}" in job["record"]
            if f["kind"] == "node":
                assert job["root"] == f["subject"]["node"] and f"node={job['root']}" in job["record"]


def test_explain_from_a_saved_file(tmp_path: Path, capsys) -> None:
    data = tmp_path / "sacct.txt"
    data.write_bytes(synthetic_rows(6000, seed=5))
    config = tmp_path / "config.yaml"
    config.write_text(f"spool_dir: {tmp_path}/spool\nlog_file: ''\n")
    argv = ["report", "--input", str(data), "--since", "2026-11-01", "--until", "2026-12-01", "--config", str(config)]
    assert main([*argv, "--format", "json"]) == 0
    findings = json.loads(capsys.readouterr().out)["findings"]
    node = 1 + [f["kind"] for f in findings].index("node")
    assert main([*argv, "--explain", str(node)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Finding: gb-r25-c08 was the root of")
    assert f"{findings[node - 1]['failures']} failed jobs behind it" in text and "root gb-r25-c08" in text
    assert main([*argv, "--explain", str(node), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["jobs_total"] == findings[node - 1]["failures"] == len(doc["jobs"])
    assert main([*argv, "--explain", "99"]) == 1 and "made 3 finding(s)" in capsys.readouterr().err
