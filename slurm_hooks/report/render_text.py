"""Terminal tables and CSV from the named views."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from slurm_hooks.report.views import DEFAULT_TEXT, view

TITLES = {
    "coverage": "Totals and coverage",
    "records": "What accounting held",
    "label": "Labels (lost = failed jobs)",
    "config": "Label x driver x CDMM x ncore x GPU (rate within that configuration)",
    "nodes": "Failure rate by nodes spanned",
    "racks": "Failure rate by racks spanned",
    "root-node": "Repeat root nodes (candidates to check, nothing is drained)",
    "day": "Failures per day",
    "partition": "By partition",
    "user": "By user",
    "account": "By account",
    "details": "Failed jobs with their spooled diagnosis (--details)",
}


def table(columns: list[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(c) for c in columns]] + [[_cell(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def _cell(value: Any) -> str:
    """One cell for a person: no Python repr (None, lists, mappings), no control characters."""
    if value is None:
        text = "not read"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(_cell(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text if text.isprintable() else text.encode("unicode_escape").decode()  # a comment cannot draw


def to_text(doc: dict[str, Any], names: Sequence[str] = DEFAULT_TEXT) -> str:
    w = doc["window"]
    out = [f"slurm-hooks report {w['since']} .. {w['until']}\n"]
    if doc["details"] and "details" not in names and len(names) > 1:
        names = [*names, "details"]
    for name in names:
        columns, rows = view(doc, name)
        out.append(f"\n{TITLES[name]}\n")
        out.append(table(columns, rows) if rows else "  (none)\n")
    return "".join(out)


def to_csv(doc: dict[str, Any], name: str) -> str:
    columns, rows = view(doc, name)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(rows)
    return buf.getvalue()
