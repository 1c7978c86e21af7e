"""Print a node's facts for a person (`slurm-hooks facts`; the JSON form is the facts dict itself).
Text is wrapped, never cut; a value that could not be read says so, and no Python repr reaches the page."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

NOT_READ = "not read"


def as_text(value: Any) -> str:
    """One fact for a person: None is "not read"; a mapping is key=value pairs; a list is comma-joined."""
    if value is None or value == "":
        return NOT_READ
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={as_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(as_text(v) for v in value) or "none"
    return str(value)


def facts_text(facts: Mapping[str, Any], config_source: str, width: int = 100) -> str:
    """`slurm-hooks facts`: which config was read, every fact (wrapped), then what could not be read."""
    out = textwrap.wrap(f"config: {config_source}", width, subsequent_indent="  ")
    for key, value in facts.items():
        if key != "errors":
            out += textwrap.wrap(f"{key}: {as_text(value)}", width, subsequent_indent="  ", break_on_hyphens=False)
    errors = facts.get("errors") or []
    out.append("errors: none" if not errors else "errors:")
    for error in errors:
        out += textwrap.wrap(str(error), width, initial_indent="  - ", subsequent_indent="    ")
    return "\n".join(out) + "\n"
