"""Terminal tables and CSV from the named views. The default text fits a screen or two: the
findings, totals and coverage, then the top rows of each view (`--full`: all of them)."""

from __future__ import annotations

import csv
import io
import textwrap
from collections.abc import Sequence
from typing import Any

from slurm_hooks.report.views import DEFAULT_TEXT, RATES, TOP_BY, view

TOP = 10  # rows of each view in the default text
TITLES = {
    "findings": "Findings (what to act on: strongest evidence first, then costliest)",
    "coverage": "Totals and coverage",
    "records": "What accounting held (the same jobs)",
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
    rates = [c in RATES for c in columns]
    cells = [[str(c) for c in columns]] + [[cell(c, r) for c, r in zip(row, rates, strict=True)] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


def cell(value: Any, is_rate: bool = False) -> str:
    """A value as people read it: rates as percentages; no Python repr (None, lists, mappings);
    text that cannot draw on a terminal (a comment cannot draw)."""
    if is_rate and isinstance(value, float):
        return f"{100 * value:.1f}%"
    if value is None:
        text = "not read"
    elif isinstance(value, (list, tuple)):
        text = ", ".join(cell(v) for v in value)
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={cell(v)}" for k, v in value.items())
    else:
        text = str(value)
    return text if text.isprintable() else text.encode("unicode_escape").decode()


def top(name: str, columns: list[str], rows: list[list[Any]], n: int = TOP) -> list[list[Any]]:
    """The n rows that matter most (by TOP_BY's column, else as listed), in the view's own order."""
    by = TOP_BY.get(name)
    if len(rows) <= n:
        return rows
    if by is None:
        return rows[:n]
    at = columns.index(by)
    keep = set(sorted(range(len(rows)), key=lambda i: (-rows[i][at], i))[:n])
    return [row for i, row in enumerate(rows) if i in keep]


def findings_text(doc: dict[str, Any]) -> str:
    found = doc.get("findings", [])
    if not found:
        return "  None: no configuration, node, day, scale or group stood out beyond chance.\n"
    return "".join(
        textwrap.fill(cell(f["text"]), 100, initial_indent=f"{i:>3}. ", subsequent_indent="     ") + "\n"
        for i, f in enumerate(found, start=1)
    )


def to_text(doc: dict[str, Any], names: Sequence[str] = DEFAULT_TEXT, full: bool = False) -> str:
    w = doc["window"]
    out = [f"slurm-hooks report {w['since']} .. {w['until']}\n"]
    if len(names) > 1:
        out.append(f"\n{TITLES['findings']}\n{findings_text(doc)}")
        if doc["details"] and "details" not in names:
            names = [*names, "details"]
    for name in names:
        if name == "findings":
            out.append(f"\n{TITLES[name]}\n{findings_text(doc)}")
            continue
        columns, rows = view(doc, name)
        shown = rows if full or len(names) == 1 else top(name, columns, rows)
        out.append(f"\n{TITLES[name]}\n")
        out.append(table(columns, shown) if rows else "  (none)\n")
        if len(shown) < len(rows):
            out.append(f"  ({len(rows) - len(shown)} more rows: --full, or --group-by {name})\n")
    return "".join(out)


def to_csv(doc: dict[str, Any], name: str) -> str:
    columns, rows = view(doc, name)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([list(map(csv_cell, row)) for row in rows])
    return buf.getvalue()


FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # OWASP CSV injection: a spreadsheet reads these as a formula


def csv_cell(value: Any) -> Any:
    """A text cell that a spreadsheet would run as a formula, prefixed with a single quote (OWASP):
    node names, exception kinds, users come from records and logs a job can shape. A CR inside is
    written `\\r`: the writer quotes only cells with a newline, and a bare CR would start a row of
    its own (one that could start with a formula). Numbers stay numbers: the report's own ints and
    floats cannot be formulas, and a rate must stay a rate."""
    if not isinstance(value, str):
        return value
    return ("'" + value if value.startswith(FORMULA_START) else value).replace("\r", "\\r")
