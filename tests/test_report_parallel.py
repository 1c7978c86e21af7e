"""Counting on several processes gives the document of counting in one, and a broken worker
stops the report with an error instead of hanging it."""

from __future__ import annotations

import io
import time
from datetime import datetime, timezone

import pytest

from bench.report_scale import synthetic_rows
from slurm_hooks.config import Config
from slurm_hooks.diagnose import LABELS
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.parallel import Counting, count_stream
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import document
from slurm_hooks.slurm.client import SEP
from tests.test_slurm_accounting import line

WHEN = datetime(2026, 11, 1, tzinfo=timezone.utc)
ODD = "".join(
    [
        line("900001", comment="a\nb | c"),
        "\x00garbage\n",
        line("900002", "JS1:abc", comment="x" * 200_000),
        line("900003", "slurm-hooks/v1 label=app_seg"),
    ]
).encode()


def counted(data: bytes, workers: int, filters: Filters, tmp_path) -> dict[str, object]:
    config = Config(spool_dir=str(tmp_path))
    counting = Counting(LABELS, config.report.rack_pattern, False, filters, SpoolView(str(tmp_path), "annotate"), 20)
    return document([count_stream(io.BytesIO(data), SEP, counting, workers)], config, filters, WHEN, WHEN)


def test_workers_count_what_one_process_counts(tmp_path) -> None:
    data = synthetic_rows(40_000)  # about 11 MB: several blocks for each worker
    middle = data.index(b"\n", len(data) // 2) + 1
    data = data[:middle] + ODD + data[middle:]
    one, two = counted(data, 1, Filters(), tmp_path), counted(data, 2, Filters(), tmp_path)
    assert one == two
    assert one["input"] == {  # the odd lines, each counted where it belongs
        "rows": 40_004,
        "unreadable_rows": 1,
        "no_nodes": 0,
        "comment_cut": 1,
        "comment_newline": one["input"]["comment_newline"],  # type: ignore[index]
        "comment_delimiter": one["input"]["comment_delimiter"],  # type: ignore[index]
        "node_list_cut": 0,
        "node_list_bad": 0,
    }
    assert one["records"]["truncated"] >= 1 and len(one["details"]) == 20  # type: ignore[arg-type,index]


def test_workers_filter_as_one_process_does(tmp_path) -> None:
    data = synthetic_rows(40_000)
    picked = Filters(user=frozenset({"user7", "user9"}), label=frozenset({"gpu_xid"}))
    one, two = counted(data, 1, picked, tmp_path), counted(data, 2, picked, tmp_path)
    assert one == two
    assert [row["user"] for row in one["groups"]["user"]] == ["user7", "user9"]  # type: ignore[index]
    assert {row["label"] for row in one["per_day"]} == {"gpu_xid"}  # type: ignore[attr-defined]


def test_a_worker_that_dies_fails_the_report_quickly(tmp_path) -> None:
    broken = Counting(LABELS, "(", False, Filters(), SpoolView(str(tmp_path), "annotate"), 0)  # no such regex
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="report worker died"):
        count_stream(io.BytesIO(synthetic_rows(50_000)), SEP, broken, 2)
    assert time.monotonic() - started < 30
