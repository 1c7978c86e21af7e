"""Noisy log text made readable and safe: ANSI escapes, tqdm's `\\r` segments, control bytes (§8.24).

A job's log is the user's: colour codes sit in front of crash lines, a progress bar rewrites its
line with `\\r` and a crash header lands on the same physical line, and any byte may be in it.
Rules match each `\\r` segment with its escapes removed; nothing printed back (text output, the
evidence lines) holds a raw control byte.
"""

from __future__ import annotations

import re

# CSI (`ESC [ ... final`), OSC (`ESC ] ... BEL|ST`) and two-byte escapes. The character classes
# are disjoint, so matching is linear whatever the line holds.
_ANSI = re.compile(r"\x1b\[[0-9;:?<=>]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-9;?]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
MAX_SEGMENTS = 64  # `\r` segments read per line: a bar redrawn 10,000 times is read at its ends


def strip_ansi(text: str) -> str:
    if "\x1b" not in text and "\x9b" not in text:  # every escape starts with one: most lines have none
        return text
    return _ANSI.sub("", text)


def printable(text: str) -> str:
    """`text` without escapes, every other control byte (also `\\r`) shown as `?`: safe on a terminal.

    Unicode's invisible characters go the same way (format: bidi overrides and isolates, zero-width
    marks; line and paragraph separators; unassigned), so a log line cannot reorder or hide what
    an operator reads ("Trojan Source", CVE-2021-42574). Tabs stay.
    """
    if text.isprintable():  # no control character at all (every escape starts with one): most lines
        return text
    cleaned = _CONTROL.sub("?", strip_ansi(text))
    if cleaned.isprintable() or ("\t" in cleaned and cleaned.replace("\t", " ").isprintable()):
        return cleaned  # only C0/C1 controls and escapes: the common slow path, at C speed
    return "".join(c if c.isprintable() or c == "\t" else "?" for c in cleaned)


def segments(text: str) -> list[str]:
    """The `\\r`-separated parts of one line worth matching (escapes removed, blank ones left out).

    A bar redrawn many times keeps its first and last segments: a crash header is printed after
    the bar's last redraw, and the first carries the line's launcher prefix.
    """
    parts = [p for p in strip_ansi(text).split("\r") if p.strip()]
    if len(parts) > MAX_SEGMENTS:
        parts = parts[:1] + parts[-(MAX_SEGMENTS - 1) :]
    return parts or [""]
