"""One self-contained HTML page: inline CSS and SVG, no script, no external URL, so it works
offline and survives being mailed around. Tables come from the same views as the terminal."""

from __future__ import annotations

from html import escape
from typing import Any

from slurm_hooks.report import svg
from slurm_hooks.report.render_text import TITLES, cell
from slurm_hooks.report.views import DEFAULT_TEXT, RATES, view

STYLE = """body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}
th{background:#f3f3f3}.chart{overflow-x:auto}.note{color:#666;font-size:12px}
#findings{border:2px solid #d62728;background:#fff5f5;padding:8px 16px;margin:12px 0}
#findings li{margin:6px 0}#findings .kind{font-weight:bold;text-transform:uppercase;font-size:11px;color:#d62728}"""


def _table(columns: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    rates = [c in RATES for c in columns]
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell(c, r))}</td>" for c, r in zip(row, rates, strict=True)) + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>" if rows else '<p class="note">(none)</p>'


def _config_row(r: dict[str, Any]) -> str:
    return f"{r['driver'] or '-'} cdmm={r['cdmm'] or '-'} ncore={r['ncore'] or '-'} {r['gpu'] or ''}".strip()


def findings_box(doc: dict[str, Any]) -> str:
    found = doc.get("findings", [])
    items = "".join(
        f"<li data-kind='{escape(f['kind'])}' data-label='{escape(f['label'])}'><span class='kind'>"
        f"{escape(f['kind'])}</span> {escape(cell(f['text']))}</li>"
        for f in found
    )
    body = f"<ol>{items}</ol>" if found else "<p>None: nothing stood out beyond chance.</p>"
    title = "Findings (strongest evidence first, then costliest)"
    return f"<section id='findings' data-findings='{len(found)}'><h2>{title}</h2>{body}</section>"


def charts(doc: dict[str, Any]) -> dict[str, str]:
    """The charts by name: per-day, config-heatmap, scale-nodes/scale-racks, root-racks; each marks
    what a finding points at (its day, its configuration and label, its node's rack)."""
    found = doc.get("findings", [])
    out = {}
    days = sorted({r["day"] for r in doc["per_day"]})
    labels = sorted({r["label"] for r in doc["per_day"]})
    series = {lab: [0.0] * len(days) for lab in labels}
    for r in doc["per_day"]:
        series[r["label"]][days.index(r["day"])] += r["failures"]
    change_days = frozenset(f["subject"]["day"] for f in found if f["kind"] == "change")
    out["per-day"] = svg.stacked_bars("per-day", days, series, change_days)
    rows = []
    cells = {}
    for r in doc["configs"]:
        row = _config_row(r)
        rows.append(row)
        cells[(row, r["label"])] = (r["rate"], r["jobs"], r["config_jobs"])
    columns = sorted({r["label"] for r in doc["configs"]} - {"success"})
    marked = frozenset((_config_row(f["subject"]), f["label"]) for f in found if f["kind"] == "config")
    out["config-heatmap"] = svg.heatmap("config-heatmap", list(dict.fromkeys(rows)), columns, cells, marked)
    for kind in ("nodes", "racks"):
        scale = doc["scale"][kind]
        scaled = [f["subject"] for f in found if f["kind"] == "scale"]
        wide = frozenset(f"{s['bucket']} {kind}" for s in scaled if s["spanned"] == kind)
        out[f"scale-{kind}"] = svg.bars(
            f"scale-{kind}",
            [f"{r['bucket']} {kind}" for r in scale],
            [r["rate"] for r in scale],
            [(r["ci_low"], r["ci_high"]) for r in scale],
            unit="%",
            series="failure rate",
            marked=wide,
        )
    racks = doc["root_racks"]
    rack_of = {r["node"]: r["rack"] for r in doc["root_nodes"]}
    sick = frozenset(f"rack {rack_of.get(f['subject']['node'], '?')}" for f in found if f["kind"] == "node")
    names = [f"rack {r['rack']}" for r in racks]
    out["root-racks"] = svg.bars("root-racks", names, [r["failures"] for r in racks], series="failures", marked=sick)
    return out


def to_html(doc: dict[str, Any]) -> str:
    w, cov = doc["window"], doc["totals"]["coverage"]
    c = charts(doc)
    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>slurm-hooks report</title>"
        f"<style>{STYLE}</style></head><body>",
        f"<h1>slurm-hooks report: {escape(w['since'])} .. {escape(w['until'])}</h1>",
        findings_box(doc),
        f"<p>{doc['totals']['jobs']} jobs ended, {doc['totals']['failed']} failed; {cov['diagnosed']} of the "
        f"failed have a diagnosis in accounting ({cov['ratio']:.1%}).</p>",
        "<h2>Failures per day by label</h2>",
        f"<div class='chart'>{c['per-day']}</div>",
        "<h2>Failure rate by label x driver x CDMM x ncore x GPU</h2>",
        "<p class='note'>Cell: share of that configuration's jobs with that label (jobs); shade by rate. "
        "The table below gives 95% Wilson intervals.</p>",
        f"<div class='chart'>{c['config-heatmap']}</div>",
        "<h2>Failure rate by scale (bars: rate, whiskers: 95% CI)</h2>",
        f"<div class='chart'>{c['scale-nodes']}</div><div class='chart'>{c['scale-racks']}</div>",
        "<h2>Root nodes of failures, by rack</h2>",
        f"<div class='chart'>{c['root-racks']}</div>",
    ]
    for name in (*DEFAULT_TEXT, "partition", "user", "account", *(("details",) if doc["details"] else ())):
        parts.append(f"<h2>{escape(TITLES[name])}</h2>" + _table(*view(doc, name)))
    parts.append("</body></html>\n")
    return "".join(parts)
