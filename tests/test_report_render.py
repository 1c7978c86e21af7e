"""Terminal, CSV, JSON and HTML from one document; hostile names cannot draw on a terminal or a page."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import replace
from datetime import datetime, timezone

import pytest

from slurm_hooks.config import Config
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import render, report
from slurm_hooks.report.views import VIEWS
from tests.test_report_aggregate import BASE, rec

SINCE, UNTIL = datetime(2026, 11, 1, tzinfo=timezone.utc), datetime(2026, 12, 1, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def doc(tmp_path_factory) -> dict:
    rows = [
        replace(
            BASE,
            job_id=str(n),
            admin_comment=rec(label, "gb-r07-c02" if label != "success" else ""),
            state="COMPLETED" if label == "success" else "FAILED",
            user=user,
        )
        for n, (label, user) in enumerate(
            [
                ("success", "alice"),
                ("success", "alice"),
                ("cdmm_checkpoint_segfault", "alice"),
                ("app_segfault", "<script>x</script>\x1b[31m"),
            ],
            start=1,
        )
    ]
    config = Config(spool_dir=str(tmp_path_factory.mktemp("spool")))
    return report(rows, config, Filters(), SINCE, UNTIL)


def test_text_shows_every_section_and_escapes_control_characters(doc: dict) -> None:
    text = render(doc, "text", None)
    for title in (
        "Totals and coverage",
        "Labels",
        "Failure rate by nodes spanned",
        "Repeat root nodes",
        "Failures per day",
    ):
        assert title in text
    assert "\x1b" not in render(doc, "text", "user") and "\\x1b[31m" in render(doc, "text", "user")


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_in_text_and_csv(doc: dict, view: str) -> None:
    assert render(doc, "text", view)
    rows = list(csv.reader(io.StringIO(render(doc, "csv", view))))
    assert rows[0] and all(len(r) == len(rows[0]) for r in rows)


def test_csv_and_json_agree(doc: dict) -> None:
    rows = {r["label"]: int(r["jobs"]) for r in csv.DictReader(io.StringIO(render(doc, "csv", "label")))}
    again = json.loads(render(doc, "json", None))
    assert (
        rows
        == {r["label"]: r["jobs"] for r in again["labels"]}
        == {"success": 2, "cdmm_checkpoint_segfault": 1, "app_segfault": 1}
    )
    assert again["schema"] == "slurm-hooks-report/1"


def test_html_is_self_contained_and_escaped(doc: dict) -> None:
    html = render(doc, "html", None)
    assert "<script" not in html and "&lt;script&gt;" in html
    assert not re.search(r"(src|href)=|url\(|@import|https?://(?!www\.w3\.org/2000/svg)", html)
    assert html.count("<svg") == 5


def test_text_cells_show_no_python_repr() -> None:
    from slurm_hooks.report.render_text import table

    text = table(["driver", "labels", "counts"], [[None, ["oom_killed", "nccl_timeout"], {"a": 1}]])
    assert "None" not in text and "[" not in text and "{" not in text
    assert "not read" in text and "oom_killed, nccl_timeout" in text and "a=1" in text


def test_csv_cells_are_numbers(doc: dict) -> None:
    rows = list(csv.DictReader(io.StringIO(render(doc, "csv", "config"))))
    assert rows and all(r["label"] != "success" for r in rows)  # the rates of failures only
    for r in rows:
        low, rate, high = float(r["ci_low"]), float(r["rate"]), float(r["ci_high"])
        assert 0 <= low <= rate <= high <= 1 and int(r["jobs"]) <= int(r["of"])
    head = next(csv.reader(io.StringIO(render(doc, "csv", None))))
    assert head[:3] == ["kind", "label", "subject"]  # csv's default: the findings, as everywhere


def test_default_text_shows_the_top_rows_and_full_shows_all(doc: dict) -> None:
    from slurm_hooks.report.render_text import TOP

    many = {**doc, "per_day": [{**doc["per_day"][0], "day": f"2026-11-{d:02d}", "failures": d} for d in range(1, 29)]}
    text = render(many, "text", None)
    assert text.index("Findings") < text.index("Totals and coverage") < text.index("Labels")
    days = [line.split()[0] for line in text.splitlines() if line.startswith("2026-11-")]
    assert days == [f"2026-11-{d:02d}" for d in range(29 - TOP, 29)]  # the busiest days, in order
    assert f"({28 - TOP} more rows: --full, or --group-by day)" in text
    full = render(many, "text", None, full=True)
    assert sum(line.startswith("2026-11-") for line in full.splitlines()) == 28
    assert render(many, "text", "day").count("\n2026-11-") == 28  # one view: all of its rows


def test_html_opens_with_the_findings_box_and_marks_what_it_names(doc: dict) -> None:
    finding = {
        "kind": "config",
        "label": "cdmm_checkpoint_segfault",
        "subject": {"cluster": "", "driver": "580.95.05", "cdmm": "on", "ncore": "3.6.2", "gpu": "nvidia_gb200"},
        "text": "<b>bold</b> claim",
    }
    html = render({**doc, "findings": [finding]}, "html", None)
    assert html.index("id='findings'") < html.index("<svg")
    assert "&lt;b&gt;bold&lt;/b&gt; claim" in html and "data-findings='1'" in html
    heat = html[html.index('data-chart="config-heatmap"') :]
    marked = heat[: heat.index("</svg>")].split('data-finding="1"')
    assert len(marked) == 2 and 'data-series="cdmm_checkpoint_segfault"' in marked[1][:80]
    assert "None: nothing stood out" in render(doc, "html", None)
