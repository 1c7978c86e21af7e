"""The report's output for one fixed input, byte for byte, in every format: a change made to count
faster must not change a byte of what is counted. The input is the benchmark's synthetic fleet
(crashes in COMPLETED jobs, app_exception kinds, jobs still running, ends outside the window, the
records that are not ours and odd lines added), counted on one process and on two.

After a change that is meant to change the output: `REPORT_GOLDEN_WRITE=1 pytest tests/test_report_golden.py`
rewrites tests/fixtures/report_golden/, and the diff shows what changed."""

from __future__ import annotations

import io
import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.report_scale import synthetic_rows
from slurm_hooks.config import Config
from slurm_hooks.diagnose import LABELS
from slurm_hooks.report.coverage import SpoolView
from slurm_hooks.report.parallel import Counting, count_stream
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import document, render, sacct_window
from tests.test_slurm_accounting import line

GOLDEN = Path(__file__).parent / "fixtures" / "report_golden"
# wide enough that no synthetic job's End is near an edge in any time zone (the window is local time)
SINCE, UNTIL = datetime(2026, 1, 1, tzinfo=timezone.utc), datetime(2027, 1, 1, tzinfo=timezone.utc)
STACK = "driver=580.95.05 cdmm=on ncore=3.6.2 gpu=nvidia_gb200"


def extra() -> bytes:
    rows = [
        line("900001", f"slurm-hooks/v1 label=app_segfault node=gb-r07-c01 {STACK} state=completed", state="COMPLETED"),
        line("900002", f"slurm-hooks/v1 label=app_exception node=gb-r07-c02 {STACK} exc=cuda_oom excnode=1"),
        line("900003", f"slurm-hooks/v1 label=app_exception node=gb-r07-c02 {STACK} exc=import"),
        line("900004", "SLURM-HOOKS/V1 LABEL=GPU_XID NODE=GB-R07-C01 " + STACK.upper()),
        line("900005", "slurm-hooks/v2 label=gpu_xid"),
        line("900006", "slurm-hooks/v1 label=warp_core_breach"),
        line("900007", "slurm-hooks/v1 label=app_seg"),
        line("900008", comment="slurm-hooks/v1 label=success"),
        line("900009", state="RUNNING"),
        line("900010", state="TIMEOUT", nodes="None assigned", n_nodes="0"),
        line("900011", f"slurm-hooks/v1 label=gpu_xid node=gb-r07-c01 driver=d{7} cdmm=off ncore=1 gpu=g"),
        line("900012", comment="a\nb | c"),
    ]
    outside = line("900013", "slurm-hooks/v1 label=gpu_xid").replace("2026-11-27T04:00:00", "2025-06-01T00:00:00")
    return "".join([*rows, outside, "\x00garbage\n"]).encode()


@pytest.fixture(scope="module")
def data() -> bytes:
    rows = synthetic_rows(6000, seed=5)
    middle = rows.index(b"\n", len(rows) // 2) + 1
    return rows[:middle] + extra() + rows[middle:]


def outputs(data: bytes, workers: int, tmp_path: Path) -> dict[str, str]:
    config = Config(spool_dir=str(tmp_path))
    spool = SpoolView(str(tmp_path), "annotate")
    counting = Counting(LABELS, config.report.rack_pattern, False, Filters(), spool, 20, sacct_window(SINCE, UNTIL))
    doc = document([count_stream(io.BytesIO(data), "\x1f", counting, workers)], config, Filters(), SINCE, UNTIL)
    out = {f"report.{fmt}": render(doc, fmt, None) for fmt in ("json", "csv", "text", "html")}
    out["report.full.text"] = render(doc, "text", None, full=True)
    out["report.user.csv"] = render(doc, "csv", "user")
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_every_format_is_byte_for_byte_as_saved(data: bytes, workers: int, tmp_path: Path) -> None:
    got = outputs(data, workers, tmp_path)
    if os.environ.get("REPORT_GOLDEN_WRITE"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for name, text in got.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    for name, text in got.items():
        assert text == (GOLDEN / name).read_text(encoding="utf-8"), name
