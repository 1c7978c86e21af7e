"""Slurm's compressed host lists (`gb-r[07-08]-c[01,03-04],login1`) expanded without a subprocess:
a report over a million jobs cannot run `scontrol show hostnames` for each."""

from __future__ import annotations

import itertools
import re

_RANGE = re.compile(r"\[([^\]]*)\]")
MAX_HOSTS = 100_000  # a malformed range such as [1-99999999] is not expanded


def expand(node_list: str) -> list[str]:
    """The host names; an empty list for "", "None assigned" or a list that does not parse."""
    if not node_list or node_list.startswith("None"):
        return []
    out: list[str] = []
    for part in _split_top(node_list):
        names = _expand_one(part)
        if names is None or len(out) + len(names) > MAX_HOSTS:
            return []
        out.extend(names)
    return out


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _expand_one(part: str) -> list[str] | None:
    pieces = _RANGE.split(part)  # literal, range, literal, range, ..., literal
    choices: list[list[str]] = []
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            choices.append([piece])
            continue
        numbers = _numbers(piece)
        if numbers is None:
            return None
        choices.append(numbers)
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_HOSTS:
        return None
    return ["".join(combo) for combo in itertools.product(*choices)]


def _numbers(spec: str) -> list[str] | None:
    out: list[str] = []
    for item in spec.split(","):
        lo, _, hi = item.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        width = len(lo)
        first, last = int(lo), int(hi or lo)
        if last < first or last - first >= MAX_HOSTS:
            return None
        out.extend(str(n).zfill(width) for n in range(first, last + 1))
    return out
