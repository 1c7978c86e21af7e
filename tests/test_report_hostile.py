"""Issue 27, "report and CLI inputs": saved sacct output (`report --input`) is anyone's text.

Numbers are bounded where they are read: a negative, huge or 5,000-digit ElapsedRaw, NNodes, GPU
count, job id or host-list index costs its row (counted in `input.unreadable_rows`), never the
report (a traceback) nor the totals (negative node-hours). CSV cells that a spreadsheet would run
as a formula are escaped as OWASP advises. Each case runs `slurm-hooks report` as a process, with
a memory limit; under `make reliability` each is a row of docs/reliability.md.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_hooks.report.render_text import csv_cell
from slurm_hooks.slurm.accounting import FIELDS
from slurm_hooks.slurm.client import SEP
from tests.reliability import Row, record

ROOT = Path(__file__).parent.parent
BUDGET_S = 120  # `report` is no hook; the cases take a second each
CHILD_AS = 2 << 30  # the report and its workers: a regression that balloons dies here
BIG = "9" * 5000  # past int()'s 4,300 digits: ValueError where it is read
GOOD = "slurm-hooks/v1 label=app_segfault node=gb-r07-c01"


def row(job: str = "101", **given: str) -> str:
    """One sacct line, FIELDS in order, `given` by field name (lowercase, as AccountingRow spells them)."""
    fields = {
        "jobidraw": job,
        "state": "FAILED",
        "exitcode": "1:0",
        "derivedexitcode": "0:11",
        "start": "2026-11-27T03:00:00",
        "end": "2026-11-27T04:00:00",
        "elapsedraw": "3600",
        "nodelist": "gb-r07-c[01-02]",
        "nnodes": "2",
        "alloctres": "billing=8,cpu=288,gres/gpu=8,node=2",
        "partition": "batch",
        "user": "alice",
        "account": "ml",
        "admincomment": GOOD,
        "comment": "",
    }
    fields.update(given)
    values = [fields[name.lower()] for name in FIELDS[:-1]]
    return SEP.join([*values, job]) + "\n"


def report(tmp_path: Path, text: str, *extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    data = tmp_path / "sacct.txt"
    data.write_text(text)
    config = tmp_path / "config.yaml"
    config.write_text(f"spool_dir: {tmp_path}/spool\nlog_file: ''\n")
    limit = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({CHILD_AS}, {CHILD_AS}))\n"
    argv = ["report", "--input", str(data), "--since", "2026-11-01", "--until", "2026-12-01", "--config", str(config)]
    t0 = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            limit + "import sys; from slurm_hooks.cli import main; sys.exit(main(sys.argv[1:]))",
            *argv,
            *extra,
        ],
        capture_output=True,
        timeout=BUDGET_S,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - t0
    # decoded here: text=True would turn a CR inside a CSV cell into a newline
    out, err = done.stdout.decode(), done.stderr.decode(errors="replace")
    return subprocess.CompletedProcess(done.args, done.returncode, out, err), seconds


# (what the row holds, the field, its value); each case's one bad row sits after a good one
BAD_NUMBERS = [
    ("a negative ElapsedRaw", "elapsedraw", "-360000"),
    ("a 400-digit ElapsedRaw (the hours overflow a float)", "elapsedraw", "9" * 400),
    ("a 5,000-digit ElapsedRaw", "elapsedraw", BIG),
    ("a negative NNodes", "nnodes", "-5"),
    ("a 400-digit GPU count", "alloctres", "gres/gpu=" + "9" * 400),
    ("a 5,000-digit GPU count", "alloctres", "gres/gpu=" + BIG),
]


def _matrix_row(tried: str, held: str, seconds: float, done: subprocess.CompletedProcess[str]) -> None:
    """This attack's row of docs/reliability.md (written only under `make reliability`)."""
    if os.environ.get("RELIABILITY_OUT"):
        record(Row(tried, held, seconds, BUDGET_S, [done.returncode], 0, 0, 0.0, where="unit", annotated="-"))


@pytest.mark.parametrize(("what", "field", "value"), BAD_NUMBERS, ids=[c[0] for c in BAD_NUMBERS])
def test_a_bad_number_costs_its_row_never_the_report(tmp_path: Path, what: str, field: str, value: str) -> None:
    done, seconds = report(tmp_path, row("100") + row("101", **{field: value}), "--format", "json")
    _matrix_row(
        f"`report --input`: a row with {what}", "counted as unreadable; no traceback, no negative hours", seconds, done
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert (doc["input"]["rows"], doc["input"]["unreadable_rows"]) == (2, 1)
    assert (doc["totals"]["node_hours"], doc["totals"]["gpu_hours"]) == (2.0, 8.0)  # the good row's alone
    assert all(lab["node_hours"] >= 0 and lab["gpu_hours"] >= 0 for lab in doc["labels"])


def test_a_negative_duration_read_the_careful_way_is_refused_too(tmp_path: Path) -> None:
    """The same class on the other reading path: a Comment with a newline sends the block record by record."""
    text = row("100") + row("101", elapsedraw="-7200", comment="two\nlines")
    done, _ = report(tmp_path, text, "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["input"]["unreadable_rows"] == 1 and doc["totals"]["node_hours"] == 2.0


def test_a_5000_digit_job_id_or_host_index_costs_its_row(tmp_path: Path) -> None:
    text = row("100") + row(BIG) + row("102", nodelist=f"gb-r07-c[{BIG}]", nnodes="1")
    done, seconds = report(tmp_path, text, "--format", "json", "--details", "5")
    _matrix_row(
        "`report --input`: a 5,000-digit job id, a 5,000-digit host-list index",
        "row counted; report done",
        seconds,
        done,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert doc["input"]["unreadable_rows"] == 1 and doc["input"]["node_list_bad"] == 1


def test_out_of_range_spans_are_an_error_not_a_traceback(tmp_path: Path) -> None:
    done, _ = report(tmp_path, row("100"), "--since", "999999999w")  # the last --since wins
    assert done.returncode == 2 and "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr


FORMULAS = ['=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tx", "\rx"]


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(tmp_path: Path) -> None:
    """User, account and partition names, and a record's node and exception kind, reach the CSV:
    a cell starting with = + - @ tab or CR is prefixed with a single quote (OWASP); numbers stay numbers."""
    text = "".join(row(str(100 + i), user=name) for i, name in enumerate(FORMULAS))
    done, seconds = report(tmp_path, text, "--format", "csv", "--group-by", "user")
    _matrix_row(
        "`report --format csv`: user names that start a spreadsheet formula (= + - @ tab CR)",
        "each cell quoted with a leading '",
        seconds,
        done,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cells = list(csv.reader(io.StringIO(done.stdout, newline="")))
    users = {r[0] for r in cells[1:]}
    assert users == {"'" + name.replace("\r", "\\r") for name in FORMULAS}, users  # a CR would start a row
    assert all(not c.startswith(("=", "+", "-", "@", "\t", "\r")) for r in cells for c in r)


def test_a_number_cell_is_never_prefixed() -> None:
    assert csv_cell(-0.25) == -0.25 and csv_cell(-3) == -3 and csv_cell("-3") == "'-3" and csv_cell("n-1") == "n-1"
    assert csv_cell("a\r=cmd()") == "a\\r=cmd()"  # no row of its own for what follows a CR
