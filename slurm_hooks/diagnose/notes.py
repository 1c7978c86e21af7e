"""`skipped`, summarised: what was left out, a line per reason, never thousands of lines.

A 1,152-node bundle can leave a note per file (each kernel log's lines outside the window, each
file past a cap). Notes that differ only in their file and numbers are one reason: up to
EXAMPLES of them are kept as they are; more become one line with their count and a few examples.
"""

from __future__ import annotations

import re

EXAMPLES = 3
_PATH = re.compile(r"^(?P<path>(?:job\.json|tarball|(?:logs|nodes|kernel)/[^:]*)): (?P<reason>.*)$", re.S)
_NUMBER = re.compile(r"\d+")


def summarise(notes: list[str], examples: int = EXAMPLES) -> list[str]:
    """The notes in order of first appearance, each reason shown at most `examples` times plus a count."""
    groups: dict[str, list[tuple[str, str]]] = {}
    for note in notes:
        m = _PATH.match(note)
        path, reason = (m["path"], m["reason"]) if m else ("", note)
        groups.setdefault(_NUMBER.sub("N", reason) if m else note, []).append((path, note))
    out: list[str] = []
    for members in groups.values():
        if len(members) <= examples + 1:
            out += dict.fromkeys(note for _, note in members)  # the same note twice is said once
            continue
        shown = ", ".join(path for path, _ in members[1:examples])
        out.append(f"{members[0][1]} (and {len(members) - 1:,} more files like it: {shown}, …)")
    return out
