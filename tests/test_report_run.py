"""`slurm-hooks report --input`: hostile sacct output end to end, each oddity counted, nothing crashes."""

from __future__ import annotations

import json

from slurm_hooks.cli import main
from tests.test_slurm_accounting import line


def test_bad_input_is_counted_in_clear_buckets(tmp_path) -> None:
    ok = "slurm-hooks/v1 label=app_segfault node=gb-r07-c01 driver=580.95.05 cdmm=on"
    rows = [
        line("1", ok),
        line("2", "slurm-hooks/v1 label=flux_capacitor_fault node=gb-r07-c01"),  # a newer version's label
        line("3", ok.upper()),  # case changed by some tool: still ours (24.11 keeps case, 22.05 lowers)
        line("4", "slurm-hooks/v1 label=app_segf"),  # truncated
        line("5", "js1:eyjqb2jzdgf0cyi6mx0="),  # jobstats, lowercased
        line("6", ok, nodes="None assigned", n_nodes="0"),  # no nodes
        line("7", ok, comment="B" * 10_000_000),  # a 10 MB comment
        line("8", ok, comment="a | b\nc\x1fd"),  # pipes, newlines, our delimiter
        "\x00garbage\n",
    ]
    data = tmp_path / "sacct.txt"
    data.write_text("".join(rows))
    out = tmp_path / "report.json"
    config = tmp_path / "config.yaml"
    config.write_text(f"spool_dir: {tmp_path}/spool\nlog_file: ''\n")
    assert (
        main(
            [
                "report",
                "--input",
                str(data),
                "--since",
                "2026-11-01",
                "--until",
                "2026-12-01",
                "--config",
                str(config),
                "--format",
                "json",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert {k: v for k, v in doc["records"].items() if v} == {
        "ours": 5,
        "unknown_label": 1,
        "truncated": 1,
        "jobstats": 1,
    }
    assert doc["input"] == {
        "rows": 9,
        "unreadable_rows": 1,
        "no_nodes": 1,
        "comment_cut": 1,
        "comment_newline": 1,
        "comment_delimiter": 1,
    }
    assert doc["totals"]["failed"] == 8 and doc["totals"]["coverage"]["diagnosed"] == 5
    reasons = {u["reason"]: u["job_ids"] for u in doc["totals"]["coverage"]["uncovered"]}
    assert reasons == {"unreadable_record": ["2", "4"], "foreign_admin_comment": ["5"]}


def test_bad_arguments_say_what_is_wrong(tmp_path, capsys) -> None:
    assert main(["report", "--since", "yesterday-ish", "--input", "/dev/null"]) == 2
    assert "neither a duration" in capsys.readouterr().err
    assert main(["report", "--format", "html", "--input", "/dev/null"]) == 2
    assert "needs -o FILE" in capsys.readouterr().err
    assert main(["report", "--input", str(tmp_path / "missing.txt")]) == 1
