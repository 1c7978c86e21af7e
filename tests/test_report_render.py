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
