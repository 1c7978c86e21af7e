"""sacct rows as a stream: free text in comments (delimiters, newlines, 10 MB) never breaks a row."""

from __future__ import annotations

import io

import pytest

from slurm_hooks.slurm.accounting import FIELDS, MAX_RECORD, TRUNCATED, parse_rows, sacct_argv, sacct_output
from slurm_hooks.slurm.client import SEP, AccountingRow, SlurmError

ALLOC = "billing=8,cpu=288,gres/gpu=8,gres/gpu:gb200=8,mem=1T,node=2"


def line(
    job: str = "101",
    admin: str = "",
    comment: str = "",
    nodes: str = "gb-r07-c[01-02]",
    tres: str = ALLOC,
    state: str = "FAILED",
    n_nodes: str = "2",
    sep: str = SEP,
) -> str:
    fields = [
        job,
        state,
        "1:0",
        "0:11",
        "2026-11-27T03:00:00",
        "2026-11-27T04:00:00",
        "3600",
        nodes,
        n_nodes,
        tres,
        "batch",
        "alice",
        "ml",
        admin,
        comment,
        job,
    ]
    assert len(fields) == len(FIELDS)
    return sep.join(fields) + "\n"


def rows(text: str | bytes) -> list:
    return list(parse_rows(io.BytesIO(text if isinstance(text, bytes) else text.encode())))


def test_a_plain_row() -> None:
    (row,) = rows(line(admin="slurm-hooks/v1 label=app_segfault"))
    assert (row.job_id, row.state, row.exit_code, row.elapsed_s, row.n_nodes, row.n_gpus) == (
        "101",
        "FAILED",
        "1:0",
        3600,
        2,
        8,
    )
    assert (row.node_list, row.partition, row.user, row.account) == ("gb-r07-c[01-02]", "batch", "alice", "ml")
    assert row.admin_comment == "slurm-hooks/v1 label=app_segfault" and row.comment == ""


def test_newlines_pipes_and_delimiters_stay_in_the_comment() -> None:
    comment = f"two\nlines | and{SEP}a delimiter\n102{SEP}FAILED"
    got = rows(line("101", comment=comment) + line("103", comment="x|y"))
    assert [r.job_id for r in got] == ["101", "103"]
    assert got[0].comment == comment and got[1].comment == "x|y"


def test_a_10_mb_comment_is_cut_and_the_next_row_survives() -> None:
    got = rows(line("101", comment="A" * 10_000_000) + line("102"))
    assert [r.job_id for r in got] == ["101", "102"]
    assert got[0].comment.endswith(TRUNCATED) and len(got[0].comment) <= MAX_RECORD


def test_a_10_mb_comment_with_newlines_is_cut_too() -> None:
    got = rows(line("101", comment="spam\n" * 2_000_000) + line("102"))
    assert [r.job_id for r in got] == ["101", "102"] and got[0].comment.endswith(TRUNCATED)


def test_unreadable_lines_come_back_with_an_empty_job_id() -> None:
    got = rows(
        "garbage without fields\n"
        + line("101")
        + SEP.join(["104", "FAILED", "x"])
        + "\n"
        + line("105")
        + line("106", n_nodes="many")
    )
    assert [r.job_id for r in got] == ["", "101", "", "105", ""]
    assert got[0].comment.startswith("garbage")


def test_a_row_cut_by_the_end_of_the_stream_is_unreadable() -> None:
    assert [r.job_id for r in rows(line("101") + line("102")[:40])] == ["101", ""]


def test_jobs_without_nodes_or_gpus() -> None:
    (row,) = rows(line(nodes="None assigned", tres="", n_nodes="0", state="CANCELLED by 2001"))
    assert (row.n_nodes, row.n_gpus, row.state) == (0, 0, "CANCELLED by 2001")


def test_sacct_argv_asks_for_every_user_and_every_run_in_local_time() -> None:
    from datetime import datetime, timezone

    argv = sacct_argv(datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 11, 8, tzinfo=timezone.utc))
    assert argv[:7] == ["sacct", "-a", "-n", "-X", "-D", "-P", f"--delimiter={SEP}"]  # -D: each run of a job a row
    assert argv[argv.index("-o") + 1].split(",") == list(FIELDS)
    assert argv[-4] == "-S" and argv[-2] == "-E"


def streamed(argv: list[str], timeout_s: float) -> list[AccountingRow]:
    with sacct_output(argv, timeout_s) as out:
        return list(parse_rows(out))


def test_sacct_output_reads_a_real_process(tmp_path) -> None:
    data = tmp_path / "sacct.txt"
    data.write_text(line("101") + line("102", comment="a\nb"))
    assert [r.job_id for r in streamed(["cat", str(data)], 10)] == ["101", "102"]


def test_sacct_output_reports_a_failing_or_hanging_sacct() -> None:
    with pytest.raises(SlurmError, match="exit 1"):
        streamed(["false"], 10)
    with pytest.raises(SlurmError, match="did not finish"):
        streamed(["sleep", "30"], 0.5)
    with pytest.raises(SlurmError):
        streamed(["/nonexistent/sacct"], 1)


def test_a_random_separator_leaves_no_way_to_forge_a_row() -> None:
    from slurm_hooks.slurm.client import fresh_separator

    sep = fresh_separator()
    forged = "x\n" + line("999", admin="slurm-hooks/v1 label=success", state="COMPLETED") + "y"  # \x1f-separated
    got = list(parse_rows(io.BytesIO((line("101", comment=forged, sep=sep) + line("102", sep=sep)).encode()), sep))
    assert [r.job_id for r in got] == ["101", "102"]
    assert got[0].comment == forged and got[0].admin_comment == ""
    # the same comment against the fixed separator does break its row (why the CLI never uses it)
    assert [r.job_id for r in rows(line("101", comment=forged) + line("102"))] == ["", "999", "", "102"]
