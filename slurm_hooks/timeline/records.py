"""JSON and logfmt text read with bounded work, whatever a job wrote (log-signatures §8.35).

A job's log line is the user's: it may be cut at `limits.line_bytes`, nest a thousand levels,
repeat a key, carry lone surrogates or a number of a million digits. The readers here walk the
text once, left to right, with an explicit stack (never recursion on the input's shape), keep
leaves no deeper than MAX_DEPTH objects, and read what a cut line holds up to its cut. What they
give back is flat: each leaf's dotted path and the values it had, in order.
"""

from __future__ import annotations

import json
import re

MAX_DEPTH = 3  # objects whose leaves are kept: loguru's record.extra.rank, fluent-bit's kubernetes.host
MAX_NEST = 64  # containers open at once; deeper text is not read on (the leaves so far are kept)
MAX_LEAVES = 256  # leaves kept of one record
MAX_KEY = 64  # characters of a key; a longer one is no field of ours
MAX_SCALAR = 32  # characters of a number or literal kept; a longer one (a million digits) is dropped

Leaves = dict[str, list[str]]  # dotted path -> its values in the record's order (a repeated key: several)

_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|(.))", re.DOTALL)
_SIMPLE = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'"}
_SURROGATE = re.compile("[\ud800-\udfff]")
_SCALAR_END = re.compile(r"[,\]}\s]")
_LOGFMT_KEY = re.compile(r"[A-Za-z_@][\w.\-/@]{0,63}")
_SPACE = re.compile(r"\s*")


def unescape(text: str) -> str:
    """JSON's and Go's escapes (`\\n`, `\\"`, `\\u00e9`, `\\x1b`) as the characters they stand for;
    a surrogate pair as its one character, a lone surrogate as U+FFFD. Linear in the text: JSON's
    own escapes at C speed, any other (Go's `\\x1b`, a cut one) by one regex pass."""
    if "\\" not in text:
        return text
    try:
        out = json.loads(f'"{text}"', strict=False)
    except ValueError:
        out = _ESCAPE.sub(_one, text)
    if _SURROGATE.search(out):
        out = out.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return str(out)


def _one(m: re.Match[str]) -> str:
    if m.group(1):
        return chr(int(m.group(1), 16))
    if m.group(2):
        return chr(int(m.group(2), 16))
    return _SIMPLE.get(m.group(3), m.group(3))


def string_end(text: str, start: int) -> int:
    """The index of the quote that closes the string whose body starts at `start`, or -1 (cut).

    Each quote's backslashes are counted back to the previous quote at most: linear overall."""
    at = start
    while (quote := text.find('"', at)) >= 0:
        back = quote
        while back > start and text[back - 1] == "\\":
            back -= 1
        if (quote - back) % 2 == 0:
            return quote
        at = quote + 1
    return -1


class _Object:
    __slots__ = ("array", "keep", "key", "path")

    def __init__(self, path: str, array: bool, keep: bool) -> None:
        self.path = path  # dotted path of this container ("" at the top)
        self.key: str | None = None  # the key whose value comes next (objects)
        self.array = array
        self.keep = keep  # its leaves are kept (an object no deeper than MAX_DEPTH, not in an array)


def json_leaves(text: str) -> tuple[Leaves, str | None] | None:
    """(leaves, where the text was cut) of a JSON object at the start of `text`, or None when it holds
    none. Where: None for a record that closed, the path of the string value the cut fell in (its last
    line is partial), "" for a cut anywhere else. Arrays are walked over, their leaves not kept."""
    if not text.startswith("{"):
        return None
    leaves: Leaves = {}
    stack: list[_Object] = [_Object("", False, True)]
    kept, i, n = 0, 1, len(text)
    while stack:
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]  # `\s*` always matches
        if i >= n:
            return leaves, ""
        top, c = stack[-1], text[i]
        if c in "}]":
            stack.pop()
            i += 1
            continue
        if c == ",":
            i += 1
            continue
        if not top.array and top.key is None:  # a key, then its colon
            if c != '"':
                return (leaves, "") if leaves else None  # not JSON past here: what came before stands
            end = string_end(text, i + 1)
            if end < 0:
                return leaves, ""
            top.key = unescape(text[i + 1 : end]) if end - i - 1 <= MAX_KEY * 6 else ""
            i = _SPACE.match(text, end + 1).end()  # type: ignore[union-attr]
            if i >= n or text[i] != ":":
                return leaves, "" if i >= n else None
            i += 1
            continue
        key, top.key = top.key, None
        path = f"{top.path}.{key}" if top.path else (key or "")
        keep = top.keep and not top.array and bool(key) and len(key or "") <= MAX_KEY and kept < MAX_LEAVES
        if c in "{[":
            if len(stack) >= MAX_NEST:
                return leaves, ""
            stack.append(_Object(path, c == "[", keep and c == "{" and len(stack) < MAX_DEPTH))
            i += 1
            continue
        if c == '"':
            end = string_end(text, i + 1)
            value, cut = (text[i + 1 :], True) if end < 0 else (text[i + 1 : end], False)
            if keep:
                leaves.setdefault(path, []).append(unescape(value))
                kept += 1
            if cut:
                return leaves, path if keep else ""
            i = end + 1
            continue
        m = _SCALAR_END.search(text, i)
        end = m.start() if m else n
        if keep and end - i <= MAX_SCALAR:
            leaves.setdefault(path, []).append(text[i:end])
            kept += 1
        if m is None:
            return leaves, ""
        i = end
    return leaves, None


def logfmt_leaves(text: str) -> Leaves | None:
    """The pairs of a logfmt line (`time=… level=error msg="a \\"b\\""`), or None unless every word of
    it is a `key=value` pair (a bare key allowed) and there are two pairs at least."""
    leaves: Leaves = {}
    i, n, pairs = 0, len(text), 0
    while i < n:
        m = _LOGFMT_KEY.match(text, i)
        if m is None:
            return None
        key, i = m.group(), m.end()
        value = ""
        if i < n and text[i] == "=":
            i += 1
            pairs += 1
            if i < n and text[i] == '"':
                end = string_end(text, i + 1)
                if end < 0:  # cut inside a quoted value: the line's head stands
                    value, i = unescape(text[i + 1 :]), n
                else:
                    value, i = unescape(text[i + 1 : end]), end + 1
            else:
                end = i
                while end < n and not text[end].isspace():
                    end += 1
                if '"' in text[i:end]:
                    return None
                value, i = text[i:end], end
        if i < n and not text[i].isspace():
            return None
        if len(leaves) < MAX_LEAVES:
            leaves.setdefault(key, []).append(value)
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]
    return leaves if pairs >= 2 else None
