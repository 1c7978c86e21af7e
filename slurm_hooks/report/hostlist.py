"""Slurm's compressed host lists (`gb-r[07-08]-c[01,03-04],login1`) expanded without a subprocess:
a report over a million jobs cannot run `scontrol show hostnames` for each.

Saved sacct input is anyone's text: a list is expanded no further than the row's own NNodes
(`n[0-99998,0-99998,...]` in 16 KB names billions), lazily, so the work is the names kept plus
the text's length; what is past the limit is counted, not made. Digits are ASCII digits, at most
MAX_DIGITS of them: `n[²]` or a 5,000-digit index is a row that does not parse, never an exception.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from typing import NamedTuple

_RANGE = re.compile(r"\[([^\]]*)\]")
MAX_HOSTS = 100_000  # names kept from one list when the row gives no NNodes
MAX_BRACKETS = 8  # ranges in one name (gb-r[01-18]-c[01-18] has two); more is not a host list
MAX_DIGITS = 18  # of one index: a longer number is no host's


class Hosts(NamedTuple):
    names: list[str]
    cut: int  # names the list holds past the limit, counted and not made
    bad: bool  # the list does not parse (a row-level error)


Dimension = list[tuple[int, int, int]]  # (first, last, width) of each range in one bracket


def expand_bounded(node_list: str, limit: int = MAX_HOSTS) -> Hosts:
    """At most `limit` names of `node_list`, with the count of the rest; bad=True when it does not parse."""
    if not node_list or node_list.startswith("None"):
        return Hosts([], 0, False)
    parts: list[tuple[list[str], list[Dimension], int]] = []
    for part in _split_top(node_list):
        parsed = _parse_one(part)
        if parsed is None:
            return Hosts([], 0, True)
        parts.append(parsed)
    names: list[str] = []
    total = 0
    for literals, dims, count in parts:
        total += count
        if len(names) < limit:
            names += islice(_names(literals, dims), limit - len(names))
    return Hosts(names, total - len(names), False)


def expand(node_list: str) -> list[str]:
    """The host names; an empty list for "", "None assigned", a list that does not parse or one past MAX_HOSTS."""
    hosts = expand_bounded(node_list, MAX_HOSTS)
    return [] if hosts.cut else hosts.names


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


def _parse_one(part: str) -> tuple[list[str], list[Dimension], int] | None:
    """(literals between brackets, each bracket's ranges, how many names the part holds) or None."""
    pieces = _RANGE.split(part)  # literal, range, literal, range, ..., literal
    if len(pieces) > 2 * MAX_BRACKETS + 1:
        return None
    literals, dims, count = pieces[0::2], [], 1
    for spec in pieces[1::2]:
        dim = _ranges(spec)
        if dim is None:
            return None
        dims.append(dim)
        count *= sum(last - first + 1 for first, last, _ in dim)
    return literals, dims, count


def _ranges(spec: str) -> Dimension | None:
    out: Dimension = []
    for item in spec.split(","):
        lo, _, hi = item.partition("-")
        if not (lo.isascii() and lo.isdigit()) or (hi and not (hi.isascii() and hi.isdigit())):
            return None
        if len(lo) > MAX_DIGITS or len(hi) > MAX_DIGITS:  # no host index; int() refuses 4,300 digits
            return None
        first, last = int(lo), int(hi or lo)
        if last < first:
            return None
        out.append((first, last, len(lo)))
    return out


def _names(literals: list[str], dims: list[Dimension], prefix: str = "") -> Iterator[str]:
    """The part's names in Slurm's order, made one at a time (the caller takes what it keeps)."""
    if not dims:
        yield prefix + literals[0]
        return
    head = prefix + literals[0]
    if len(dims) == 1:  # most lists: one bracket, names made at C speed a range at a time
        tail = literals[1]
        for first, last, width in dims[0]:
            yield from (f"{head}{n:0{width}d}{tail}" for n in range(first, last + 1))
        return
    for first, last, width in dims[0]:
        for n in range(first, last + 1):
            yield from _names(literals[1:], dims[1:], head + str(n).zfill(width))
