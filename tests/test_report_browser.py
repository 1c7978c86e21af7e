"""The HTML report in a real headless Chromium (Debian's): every chart drawn with its series and
labels, and not one network request. A screenshot is kept for a person under test-output/."""

from __future__ import annotations

import io
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from bench.report_scale import synthetic_rows
from slurm_hooks.config import Config
from slurm_hooks.report.read import Filters
from slurm_hooks.report.run import render, report
from slurm_hooks.slurm.accounting import parse_rows

CHROMIUM = "/usr/bin/chromium"
OUTPUT = Path(os.environ.get("SLURM_HOOKS_TEST_OUTPUT", Path(__file__).parent.parent / "test-output"))
CHARTS = ("per-day", "config-heatmap", "scale-nodes", "scale-racks", "root-racks")


def _browser_or_skip() -> None:
    reason = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "playwright is not installed (pip install -e '.[dev]')"
    if reason is None and not shutil.which(CHROMIUM):
        reason = f"{CHROMIUM} missing: `make browser` installs Debian's chromium"
    if reason:
        if os.environ.get("SLURM_HOOKS_REQUIRE_CLUSTER") == "1":  # CI: a skip would hide a missing install step
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory) -> tuple[Path, dict]:
    _browser_or_skip()
    tmp = tmp_path_factory.mktemp("html")
    rows = parse_rows(io.BytesIO(synthetic_rows(3000)))
    doc = report(
        rows,
        Config(spool_dir=str(tmp / "spool")),
        Filters(),
        datetime(2026, 11, 1, tzinfo=timezone.utc),
        datetime(2026, 12, 1, tzinfo=timezone.utc),
    )
    path = tmp / "report.html"
    path.write_text(render(doc, "html", None))
    return path, doc


def test_every_chart_renders_offline(page_file: tuple[Path, dict]) -> None:
    from playwright.sync_api import sync_playwright

    path, doc = page_file
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 1000})
            page.on("request", lambda r: requests.append(r.url))
            page.goto(path.as_uri())
            page.wait_for_load_state("networkidle")
            box = page.locator("#findings")  # the page opens with it, above every chart
            assert box.is_visible() and box.bounding_box()["y"] < page.locator("svg").first.bounding_box()["y"]
            items = box.locator("li")
            assert items.count() == len(doc["findings"]) > 0
            assert items.first.inner_text().endswith(doc["findings"][0]["text"])
            kinds = {f["kind"] for f in doc["findings"]}
            assert "config" in kinds and page.locator('svg[data-chart="config-heatmap"] [data-finding]').count() >= 1
            for name in CHARTS:
                chart = page.locator(f'svg[data-chart="{name}"]')
                box = chart.bounding_box()
                assert box and box["width"] > 100 and box["height"] > 20, name
                assert chart.locator("[data-series]").count() > 0, name
            series = set(
                page.locator('svg[data-chart="per-day"] [data-series]').evaluate_all(
                    "els => els.map(e => e.getAttribute('data-series'))"
                )
            )
            assert series == {r["label"] for r in doc["per_day"]}
            legend = page.locator('svg[data-chart="per-day"] text').all_text_contents()
            assert "cdmm_checkpoint_segfault" in legend and "11-01" in legend
            heat = page.locator('svg[data-chart="config-heatmap"]').inner_html()
            assert "580.95.05 cdmm=on" in heat and "%" in heat
            assert page.locator('svg[data-chart="scale-nodes"] [data-ci]').count() == len(doc["scale"]["nodes"])
            racks = page.locator('svg[data-chart="root-racks"] [data-category]').count()
            assert racks == len(doc["root_racks"]) > 1
            OUTPUT.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(OUTPUT / "report.png"), full_page=True)
        finally:
            browser.close()
    assert requests == [path.as_uri()]  # the page itself, nothing else
