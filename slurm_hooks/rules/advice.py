"""Advice templates: `{name}` placeholders filled from a fixed set, nothing else interpreted.

`str.format` would let a rule file reach attributes (`{node.__class__}`), index arguments
(`{0}`) or pad without limit (`{node:>99999999}`); here a template can only name a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PLACEHOLDERS = (
    "node",
    "rank",
    "who",
    "driver",
    "cuda_driver",
    "cdmm",
    "ncore",
    "gpu_model",
    "versions",
    "xid",
    "state",
    "exception",  # an app_exception's `Type: message`, cut, control bytes removed
    "path",  # the path its message names
)
MAX_VALUE = 160  # characters of one filled-in value (facts come from files a job may have touched; {versions} joins 5)
_TOKEN = re.compile(r"\{([^{}]*)\}")  # no nesting, one pass: linear in the template


def template_errors(line: str) -> list[str]:
    """What is wrong with one advice line: placeholders that are not plain known names."""
    return [
        f"unknown placeholder {{{name}}} (known: {', '.join(PLACEHOLDERS)})"
        for name in _TOKEN.findall(line)
        if name not in PLACEHOLDERS
    ]


def placeholders(line: str) -> set[str]:
    return set(_TOKEN.findall(line))


def fill(line: str, values: Mapping[str, object]) -> str:
    """`line` with each known `{name}` replaced by its value ("unknown" when missing)."""

    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in PLACEHOLDERS:
            return m.group(0)
        got = values.get(name)
        return str(got)[:MAX_VALUE] if got is not None else "unknown"

    return _TOKEN.sub(value, line)
