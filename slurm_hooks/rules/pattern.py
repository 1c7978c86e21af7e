"""Rule patterns run on RE2: time linear in the line's length, for every pattern an operator can write.

Python's `re` backtracks: `^(.*)*(.*)*Z$` or a shipped pattern with two lazy `.*?` runs for
minutes on one crafted 8 KiB line. RE2 (google-re2, wheels for x86_64 and aarch64) has no
backtracking, so it has no lookaround or backreferences either; a rule that needs to exclude
something says so with `unless:` (a second pattern) instead of `(?!...)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import re2  # type: ignore[import-untyped]  # google-re2 ships no type hints

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # the error comes back in the exception; nothing on the hook's stderr
_OPTIONS.max_mem = 8 << 20  # per pattern; past it RE2 falls back to its NFA, still linear
# RE2's instructions in a pattern's program, either way it runs: its work on a byte that makes it
# build a DFA state (or run its NFA) grows with them. The shipped pack's largest is 2,770 (a
# `[^']{1,300}` of UTF-8); `.{0,1000}` alone is 9,005. RE2 itself refuses a repeat past 1,000,
# nested repeats included (`(?:a{1,1000}){1,1000}`).
MAX_PROGRAM = 4096


class Match(Protocol):
    def groupdict(self) -> dict[str, str | None]: ...

    def end(self) -> int: ...


class LinearPattern(Protocol):
    """What the engine needs of a compiled pattern (RE2's, or `re`'s in tests of the guarantee)."""

    pattern: str

    def search(self, text: str) -> Match | None: ...


class PatternError(ValueError):
    """The pattern is not valid RE2 syntax (or uses lookaround/backreferences, which RE2 lacks)."""


class PatternTooLarge(PatternError):
    """The pattern is valid RE2 but its program is past MAX_PROGRAM."""


Spans = list[tuple[int, int]]  # (start, end) bytes of the whole match, then of each group; (-1, -1): none


class _Utf8Match:
    """A match found in a line's UTF-8 bytes, answering in the line's own characters."""

    __slots__ = ("_data", "_names", "_spans")

    def __init__(self, data: bytes, spans: Spans, names: tuple[tuple[str, int], ...]) -> None:
        self._data, self._spans, self._names = data, spans, names

    def groupdict(self) -> dict[str, str | None]:
        data, spans = self._data, self._spans
        return {
            k: None if (s := spans[i])[0] < 0 else data[s[0] : s[1]].decode("utf-8", "replace") for k, i in self._names
        }

    def end(self) -> int:
        end = self._spans[0][1]
        return end if self._data.isascii() else len(self._data[:end].decode("utf-8", "replace"))


def _span_finder(compiled: Any) -> Callable[[bytes], Spans | None]:
    """The spans of the first match in some bytes, or None.

    pyre2's own search wraps each call of its C++ RE2 in a generator and a match object (half the
    time of a rule's search on a short line): its `_regexp.Match` is what that search calls, so it
    is used directly where it answers as expected, and the public search where it does not.
    """
    match: Any = getattr(getattr(compiled, "_regexp", None), "Match", None)
    anchor = getattr(getattr(re2, "_Anchor", None), "UNANCHORED", None)
    try:
        probe = match(anchor, b"", 0, 0) if match is not None and anchor is not None else None
    except Exception:  # another pyre2 than the one this was written against: the public path
        probe = None
    if isinstance(probe, list) and len(probe) == compiled.groups + 1:

        def direct(data: bytes) -> Spans | None:
            spans: Spans = match(anchor, data, 0, len(data))
            return None if spans[0][0] < 0 else spans

        return direct

    def public(data: bytes) -> Spans | None:
        m = compiled.search(data)
        return None if m is None else [m.span(i) for i in range(compiled.groups + 1)]

    return public


class _Utf8Pattern:
    """An RE2 pattern run on the text's UTF-8 bytes. pyre2's own str path maps every offset of every
    match back to characters in Python: 7 us a search on a 100-character line, 2 us on its bytes,
    and a 1,152-node job log puts tens of thousands of lines through the rules. The same RE2 program
    either way (pyre2 compiles a str pattern as its UTF-8), so it matches the same lines, and a match
    ends on a character boundary; the strict encode fails on a lone surrogate as pyre2's own does."""

    __slots__ = ("_find", "_names", "pattern")

    def __init__(self, pattern: str, options: Any) -> None:
        self.pattern = pattern
        compiled = re2.compile(pattern.encode("utf-8"), options)
        size = max(compiled.programsize, compiled.reverseprogramsize)
        if size > MAX_PROGRAM:
            raise PatternTooLarge(
                f"its RE2 program has {size} instructions, more than {MAX_PROGRAM}: "
                "use smaller repeats ({0,100}, not {0,1000}) or fewer alternatives"
            )
        index: dict[bytes, int] = compiled.groupindex
        self._names = tuple(sorted(((k.decode("utf-8"), i) for k, i in index.items()), key=lambda n: n[1]))
        self._find = _span_finder(compiled)

    def search(self, text: str) -> _Utf8Match | None:
        data = text.encode("utf-8")
        spans = self._find(data)
        return None if spans is None else _Utf8Match(data, spans, self._names)


def compile_linear(pattern: str) -> LinearPattern:
    try:
        compiled: LinearPattern = _Utf8Pattern(pattern, _OPTIONS)
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


def _literal_options() -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = 32 << 20  # room for the DFA of MAX_KEYWORDS literals, so it never falls back to the NFA
    return options


def literal_needle(literals: list[str]) -> BytesNeedle:
    """One RE2 pattern finding any of `literals` in raw bytes (linear; fast up to MAX_KEYWORDS)."""
    needle: BytesNeedle = re2.compile(b"|".join(re2.escape(k.encode()) for k in literals), _literal_options())
    return needle


class KeywordSet:
    """Which of `literals` a line holds, in one linear pass (RE2's Set): a line costs the same with a
    hundred keywords as with one, where a substring test per keyword grows with the pack."""

    def __init__(self, literals: list[str]) -> None:
        self._set = re2.Set.SearchSet(_literal_options())
        for literal in literals:
            self._set.Add(re2.escape(literal.encode()))
        self._set.Compile()

    def found(self, text: str) -> list[int]:
        """The places in `literals` of those in `text`."""
        return self._set.Match(text.encode("utf-8", "surrogatepass")) or []  # a lone surrogate is no keyword


def any_of(patterns: Sequence[LinearPattern]) -> Callable[[str], bool]:
    """Whether any of `patterns` is found in a text: one RE2 pass (a Set) for them all, where one
    builds; else a search each (a test's stand-ins for RE2)."""
    try:
        together = re2.Set.SearchSet(_OPTIONS)
        for pattern in patterns:
            together.Add(pattern.pattern.encode("utf-8"))
        together.Compile()
    except Exception:  # pyre2 raises its own error types, and none for an empty set on some versions
        return lambda text: any(p.search(text) for p in patterns)
    return lambda text: bool(together.Match(text.encode("utf-8", "surrogatepass")))
