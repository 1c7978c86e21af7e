"""`make accuracy`'s figures per set and per seen case, for the terminal (docs/accuracy.md: accuracy_doc.py).

Held-out cases appear only in aggregate figures and, where not fully right, by their number
(`heldout/public-24`, never the slug that says what is in it): never their truth, their answers
or their matrix values one by one (the coverage matrix counts them).
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.accuracy_score import SETS, Answer, Marks, Scored, Tally

GROUPS = (  # (title, the sets it adds up); a group with no case is left out
    ("public seen", ("public",)),
    ("real seen", ("real",)),
    ("seen total", ("public", "real")),
    ("held-out public", ("heldout-public",)),
    ("held-out real", ("heldout-real",)),
    ("held-out total", ("heldout-public", "heldout-real")),
    ("all", tuple(SETS)),
)
COLUMNS = "cases", "label", "node", "rank", "fully right", "low conf.", "confidently wrong", "node named", "rank named"


def marks_of(s: Scored, tool: str) -> Marks | None:
    return s.ours_marks if tool == "slurm-hooks" else s.nvrx_marks


def tally(scored: list[Scored], tool: str) -> Tally:
    t = Tally()
    for s in scored:
        if (m := marks_of(s, tool)) is not None:
            t.add(s.case.truth, m)
    return t


def groups(scored: list[Scored]) -> list[tuple[str, list[Scored]]]:
    names = sorted({s.case.set for s in scored})
    if any(n not in SETS for n in names):  # --dir: one set of its own name
        return [(n, [s for s in scored if s.case.set == n]) for n in names]
    out = [(title, [s for s in scored if s.case.set in sets]) for title, sets in GROUPS]
    return [(title, members) for title, members in out if members]


def _pct(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.0f} %)" if whole else "-"


def _row(t: Tally) -> list[str]:
    return [
        str(t.cases),
        _pct(t.label, t.cases),
        _pct(t.node, t.cases),
        _pct(t.rank, t.cases),
        _pct(t.full, t.cases),
        str(t.low),
        str(t.confidently_wrong) + (f" ({t.error} errors)" if t.error else ""),
        _pct(t.node_named, t.node_truths),
        _pct(t.rank_named, t.rank_truths),
    ]


def figures(scored: list[Scored], nvrx: bool) -> list[tuple[str, str, list[str]]]:
    rows = []
    for title, members in groups(scored):
        rows.append((title, "slurm-hooks", _row(tally(members, "slurm-hooks"))))
        if nvrx:
            rows.append((title, "NVRx", _row(tally(members, "NVRx"))))
    return rows


def details(scored: list[Scored]) -> list[tuple[str, str]]:
    """Per group, how often slurm-hooks' details agree with the optional keys expected.json names."""
    out = []
    for title, members in groups(scored):
        t = tally(members, "slurm-hooks")
        out.append((title, ", ".join(f"{k} {_pct(t.details_agree[k], n)}" for k, n in sorted(t.details_given.items()))))
    return out


def who(a: Answer | None) -> str:
    if a is None:
        return "-"
    if a.error:
        return f"error: {a.error}"
    node, rank = a.node or "-", "-" if a.rank is None else f"r{a.rank}"
    return f"{a.label} {node} {rank}" + (f" [{a.said}]" if a.said else "")


def verdict(m: Marks | None) -> str:
    if m is None:
        return ""
    if m.full:
        return "right"
    wrong = ",".join(k for k in ("label", "node", "rank") if not getattr(m, k))
    return ("CONFIDENTLY WRONG " if m.confidently_wrong else "") + f"wrong {wrong}"


def _short(case_id: str) -> str:
    """A held-out case's id without the slug that would tell its content: `heldout/public-24`."""
    m = re.match(r"heldout/(?:public|real)-\d+", case_id)
    return m.group(0) if m else case_id


def heldout_wrong(scored: list[Scored]) -> tuple[list[str], list[str]]:
    held = [s for s in scored if not s.case.seen]
    return (
        [_short(s.case.id) for s in held if not s.ours_marks.full],
        [_short(s.case.id) for s in held if s.ours_marks.confidently_wrong],
    )


def text(scored: list[Scored], root: Path, version: str | None) -> str:
    shown = root.resolve().relative_to(Path.cwd()) if root.resolve().is_relative_to(Path.cwd()) else root
    out = [f"make accuracy: {len(scored)} cases under {shown}; NVRx: {version or 'skipped'}", ""]
    rows = [["set", "tool", *COLUMNS]] + [[t, tool, *cells] for t, tool, cells in figures(scored, version is not None)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    out += ["", "details the truth names (slurm-hooks agrees / cases):"]
    out += [f"  {title}: {cells}" for title, cells in details(scored) if cells]
    out += ["", "seen cases (truth | slurm-hooks | NVRx):"]
    for s in (s for s in scored if s.case.seen):
        t = s.case.truth
        truth = f"{t.label} {t.node or '-'} {'-' if t.rank is None else f'r{t.rank}'}"
        out.append(f"  {s.case.id}: {truth} | {who(s.ours)} {verdict(s.ours_marks)}")
        if s.nvrx is not None:
            out.append(f"  {' ' * len(s.case.id)}  NVRx: {who(s.nvrx)} {verdict(s.nvrx_marks)}")
    wrong, sure = heldout_wrong(scored)
    if any(not s.case.seen for s in scored):
        out += ["", f"held-out cases not fully right (slurm-hooks): {', '.join(wrong) or 'none'}"]
        out.append(f"held-out cases confidently wrong (slurm-hooks): {', '.join(sure) or 'none'}")
    return "\n".join(out) + "\n"
