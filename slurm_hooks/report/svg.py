"""Plain inline SVG charts: no library, no script, no fetch; every mark carries its series name
(`data-series`) and a <title> so a reader (or a test) can tell what it shows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = (
    "#d62728",
    "#ff7f0e",
    "#9467bd",
    "#1f77b4",
    "#17becf",
    "#8c564b",
    "#e377c2",
    "#bcbd22",
    "#7f7f7f",
    "#2ca02c",
    "#393b79",
    "#637939",
    "#843c39",
    "#5254a3",
)
FONT = 'font-family="sans-serif" font-size="11"'


def colours(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _svg(name: str, width: int, height: int, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" data-chart="{name}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img">' + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} {extra}>{escape(text)}</text>'


def _legend(x: float, y: float, palette: dict[str, str]) -> list[str]:
    out = []
    for i, (name, colour) in enumerate(palette.items()):
        out.append(
            f'<rect x="{x}" y="{y + i * 16}" width="10" height="10" fill="{colour}" data-legend="{escape(name)}"/>'
        )
        out.append(_text(x + 14, y + i * 16 + 9, name))
    return out


MARK = 'stroke="#000" stroke-width="2" data-finding="1"'  # what a finding points at


def stacked_bars(
    name: str, categories: Sequence[str], series: Mapping[str, Sequence[float]], marked: frozenset[str] = frozenset()
) -> str:
    """One bar per category, stacked by series (failures per day by label); a marked category
    (a finding's day) gets a frame around its bar."""
    palette = colours(list(series))
    left, top, plot_h = 40, 10, 220
    step = max(12, min(40, 700 // max(1, len(categories))))
    width = left + step * len(categories) + 220
    peak = max([sum(values[i] for values in series.values()) for i in range(len(categories))] or [1]) or 1
    body = [
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + step * len(categories)}" y2="{top + plot_h}" '
        'stroke="#333"/>',
        _text(left - 4, top + 8, f"{peak:g}", "end"),
        _text(left - 4, top + plot_h, "0", "end"),
    ]
    for i, category in enumerate(categories):
        y = float(top + plot_h)
        for label, values in series.items():
            h = values[i] / peak * plot_h
            if h <= 0:
                continue
            y -= h
            body.append(
                f'<rect x="{left + i * step + 1}" y="{y:.1f}" width="{step - 2}" height="{h:.1f}" '
                f'fill="{palette[label]}" data-series="{escape(label)}"><title>{escape(category)} '
                f"{escape(label)}: {values[i]:g}</title></rect>"
            )
        if category in marked:
            body.append(
                f'<rect x="{left + i * step}" y="{top}" width="{step}" height="{plot_h}" fill="none" {MARK} '
                f'data-category="{escape(category)}"><title>finding: {escape(category)}</title></rect>'
            )
        if i % max(1, len(categories) // 12) == 0 or category in marked:
            body.append(_text(left + i * step + step / 2, top + plot_h + 14, category[5:], "middle"))
    body += _legend(left + step * len(categories) + 16, top, palette)
    height = max(top + plot_h + 24, top + 16 * len(series) + 10)
    return _svg(name, width, height, body)


def bars(
    name: str,
    categories: Sequence[str],
    values: Sequence[float],
    errors: Sequence[tuple[float, float]] = (),
    unit: str = "",
    series: str = "value",
    marked: frozenset[str] = frozenset(),
) -> str:
    """Horizontal bars, optionally with a confidence interval whisker per bar."""
    left, row, plot_w = 90, 22, 360
    peak = max([*values, *(hi for _, hi in errors)] or [1]) or 1
    body = []
    for i, (category, value) in enumerate(zip(categories, values, strict=True)):
        y = 6 + i * row
        w = value / peak * plot_w
        shown = f"{value:.1%}" if unit == "%" else f"{value:g}"
        body.append(_text(left - 6, y + 13, category, "end"))
        body.append(
            f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{row - 6}" '
            f'fill="{"#d62728" if category in marked else "#1f77b4"}" {MARK if category in marked else ""} '
            f'data-series="{escape(series)}" data-category="{escape(category)}"><title>{escape(category)}: '
            f"{shown}{' (finding)' if category in marked else ''}</title></rect>"
        )
        if errors:
            lo, hi = errors[i]
            body.append(
                f'<line x1="{left + lo / peak * plot_w:.1f}" x2="{left + hi / peak * plot_w:.1f}" '
                f'y1="{y + (row - 6) / 2}" y2="{y + (row - 6) / 2}" stroke="#000" data-ci="1"/>'
            )
        body.append(_text(left + max(w, errors[i][1] / peak * plot_w if errors else 0) + 6, y + 13, shown))
    return _svg(name, left + plot_w + 120, 12 + row * len(categories), body)


Cell = tuple[float, int, int]  # rate, n, of


def heatmap(
    name: str,
    rows: Sequence[str],
    columns: Sequence[str],
    cells: dict[tuple[str, str], Cell],
    marked: frozenset[tuple[str, str]] = frozenset(),
) -> str:
    """Rows x columns, shaded by rate; each cell says rate and n/of (a rate over 3 jobs shows its 3)."""
    left, top, cw, ch = 330, 110, 74, 26
    peak = max([rate for rate, _, _ in cells.values()] or [1]) or 1
    body = [
        _text(
            left + j * cw + cw / 2,
            top - 6,
            col,
            "start",
            f'transform="rotate(-35 {left + j * cw + cw / 2:.1f} {top - 6})"',
        )
        for j, col in enumerate(columns)
    ]
    for i, row in enumerate(rows):
        y = top + i * ch
        body.append(_text(left - 6, y + ch / 2 + 4, row, "end"))
        for j, col in enumerate(columns):
            rate, n, of = cells.get((row, col), (0.0, 0, 0))
            shade = 0.08 + 0.92 * rate / peak if n else 0.0
            edge = MARK if (row, col) in marked else 'stroke="#ddd"'
            body.append(
                f'<rect x="{left + j * cw}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="#d62728" '
                f'fill-opacity="{shade:.2f}" {edge} '
                f'data-series="{escape(col)}" '
                f'data-row="{escape(row)}"><title>{escape(row)} / {escape(col)}: {n} of {of} ({rate:.1%})'
                "</title></rect>"
            )
            if n:
                body.append(_text(left + j * cw + cw / 2, y + ch / 2 + 4, f"{rate:.1%} ({n})", "middle"))
    return _svg(name, left + cw * len(columns) + 10, top + ch * len(rows) + 10, body)
