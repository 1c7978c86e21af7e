"""Slurm's output filename patterns (`--output=out/%x-%j.out`), expanded the way Slurm does, bounded.

The pattern is the job user's text, expanded by a root process: `%100000000j` must not become a
100 MB string. Slurm itself pads to at most 10 digits (sbatch(1), "filename pattern"), and no
path longer than PATH_MAX can be opened, so both are the bounds here.
"""

from __future__ import annotations

import re

MAX_PAD = 10  # sbatch(1): "The maximal padding is 10"
MAX_PATH = 4096  # PATH_MAX: a longer result names no file the Epilog could open
_SPEC = re.compile(r"%(\d{0,9})([a-zA-Z%])")  # at most 9 digits: the width never becomes a huge int
_NUMERIC = set("jJAast")


def expand(pattern: str, values: dict[str, str]) -> str | None:
    """`pattern` with each `%[width]X` replaced from `values` (X -> text), or None when a
    specifier has no known value or the result would exceed MAX_PATH.

    A backslash anywhere turns expansion off, as in Slurm; the backslashes are dropped.
    """
    if "\\" in pattern:
        plain = pattern.replace("\\", "")
        return plain if len(plain) <= MAX_PATH else None
    out: list[str] = []
    size, i = 0, 0
    while i < len(pattern):
        at = pattern.find("%", i)
        literal = pattern[i:] if at < 0 else pattern[i:at]
        out.append(literal)
        size += len(literal)
        if at < 0 or at + 1 >= len(pattern):
            if at >= 0:
                out.append("%")
                size += 1
            break
        spec = _SPEC.match(pattern, at)
        if not spec or spec.group(2) not in values:
            return None
        value = values[spec.group(2)]
        width = min(int(spec.group(1) or 0), MAX_PAD)
        piece = value.zfill(width) if spec.group(2) in _NUMERIC else value
        out.append(piece)
        size += len(piece)
        if size > MAX_PATH:
            return None
        i = spec.end()
    return "".join(out) if size <= MAX_PATH else None
