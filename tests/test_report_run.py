"""`slurm-hooks report --input`: hostile sacct output end to end, each oddity counted, nothing crashes."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from slurm_hooks.cli import main
from slurm_hooks.report.saved import FORGEABLE
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
        "node_list_cut": 0,
        "node_list_bad": 0,
        "delimiter": FORGEABLE,  # saved by hand with the fixed delimiter, not by --save
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


def _ending(job: str, end: str, state: str = "FAILED") -> str:
    ok = "slurm-hooks/v1 label=app_segfault node=gb-r07-c01 driver=580.95.05 cdmm=on"
    return line(job, ok, state=state).replace("2026-11-27T04:00:00", end)


def test_the_window_cuts_saved_input_as_it_cuts_a_live_read(tmp_path) -> None:
    data = tmp_path / "month.txt"
    data.write_text(
        _ending("1", "2026-11-20T10:00:00")
        + _ending("2", "2026-11-02T10:00:00")  # before the week asked for
        + _ending("3", "2026-11-29T10:00:00")  # after it
        + _ending("4", "Unknown", state="PENDING")
        + _ending("5", "2026-11-23T23:59:59", state="COMPLETED")  # a crash in a job that completed
    )
    out = tmp_path / "week.json"
    config = tmp_path / "config.yaml"
    config.write_text(f"spool_dir: {tmp_path}/spool\nlog_file: ''\n")
    argv = ["report", "--input", str(data), "--since", "2026-11-17", "--until", "2026-11-24", "--config", str(config)]
    assert main([*argv, "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    t = doc["totals"]
    assert (t["jobs"], t["failed"], t["crashed"]) == (2, 1, 1)  # only the jobs that ended in the week
    assert t["outside"] == {"not_ended": 1, "ended_before_window": 1, "ended_after_window": 1, "filtered_out": 0}
    assert doc["records"]["ours"] == 2 and doc["input"]["rows"] == 5  # every count covers the same 2 jobs
    assert sum(r["jobs"] for r in doc["labels"]) == 2
    assert main([*argv, "--group-by", "coverage", "-o", str(out)]) == 0
    text = out.read_text()
    assert "not counted: ended before window  1" in text and "completed, with a crash" in text


def test_input_names_its_one_cluster(tmp_path, capsys) -> None:
    data = tmp_path / "rows.txt"
    data.write_text(_ending("1", "2026-11-20T10:00:00"))
    out = tmp_path / "doc.json"
    argv = ["report", "--input", str(data), "--since", "2026-11-01", "--until", "2026-12-01"]
    assert main([*argv, "--clusters", "a,b"]) == 2
    assert "one cluster" in capsys.readouterr().err
    assert main([*argv, "--clusters", "gb200", "--format", "json", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["clusters"] == ["gb200"] and {r["cluster"] for r in doc["labels"]} == {"gb200"}


def test_help_gives_the_sacct_command_that_writes_input() -> None:
    from slurm_hooks.report.args import SAVE_COMMAND
    from slurm_hooks.report.run import sacct_window
    from slurm_hooks.slurm.accounting import FIELDS, sacct_argv

    assert f"-o {','.join(FIELDS)} " in SAVE_COMMAND
    when = datetime(2026, 11, 1, tzinfo=timezone.utc)
    argv = sacct_argv(when, when, cluster="gb200")
    assert argv[-2:] == ["-M", "gb200"] and all(a in SAVE_COMMAND for a in argv[1:5])
    assert "-M" not in sacct_argv(when, when)
    assert sacct_window(when, when)[0] == argv[argv.index("-S") + 1]  # the window as sacct reads it
