"""Rule patterns run on RE2: time linear in the line's length, for every pattern an operator can write.

Python's `re` backtracks: `^(.*)*(.*)*Z$` or a shipped pattern with two lazy `.*?` runs for
minutes on one crafted 8 KiB line. RE2 (google-re2, wheels for x86_64 and aarch64) has no
backtracking, so it has no lookaround or backreferences either; a rule that needs to exclude
something says so with `unless:` (a second pattern) instead of `(?!...)`.
"""

from __future__ import annotations

from typing import Protocol

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error comes back in the exception; nothing on the hook's stderr
_OPTIONS.max_mem = 8 << 20  # per pattern; past it RE2 falls back to its NFA, still linear


class Match(Protocol):
    def groupdict(self) -> dict[str, str | None]: ...

    def end(self) -> int: ...


class LinearPattern(Protocol):
    """What the engine needs of a compiled pattern (RE2's, or `re`'s in tests of the guarantee)."""

    pattern: str

    def search(self, text: str) -> Match | None: ...


class PatternError(ValueError):
    """The pattern is not valid RE2 syntax (or uses lookaround/backreferences, which RE2 lacks)."""


def compile_linear(pattern: str) -> LinearPattern:
    try:
        compiled: LinearPattern = re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid"
        reason = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(f"{reason} (RE2 syntax: no lookaround, no backreferences)") from None
    return compiled


class NeedleMatch(Protocol):
    def start(self) -> int: ...

    def end(self) -> int: ...


class BytesNeedle(Protocol):
    def search(self, data: bytes, pos: int = ..., endpos: int = ...) -> NeedleMatch | None: ...


def literal_needle(literals: list[str]) -> BytesNeedle:
    """One RE2 pattern finding any of `literals` in raw bytes (linear; fast up to MAX_KEYWORDS)."""
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 32 << 20  # room for the DFA of MAX_KEYWORDS literals, so it never falls back to the NFA
    needle: BytesNeedle = re2.compile(b"|".join(re2.escape(k.encode()) for k in literals), options)
    return needle
