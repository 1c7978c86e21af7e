"""One flight-recorder dump's bytes -> plain data, never running anything the bytes name.

PyTorch writes its recorder as pickle protocol 2 of dicts, lists, tuples, strings, numbers,
booleans and None (`_dump_fr_trace`), or as JSON (`_dump_fr_trace_json`). A dump sits in a
directory its user writes, so it is hostile input: the unpickler refuses every class and every
persistent id, so nothing but plain containers, strings and numbers can come out of it and nothing
can be called. (An opcode allow-list checked with pickletools first was measured at ~1 MB/s: a
real 2000-entry dump per rank would not fit the Epilog's budget; the refusals cover the same.)
What the refusals cannot bound (the memory, CPU and time a dump's numbers or nesting cost) the
reader bounds: it runs `decode` in a child of its own per dump (scan.py, core/sandbox.py).
"""

from __future__ import annotations

import io
import json
import pickle
from typing import Any


class DumpRefused(ValueError):
    """The bytes are not a flight-recorder dump we read: the reason is the message."""


class _PlainUnpickler(pickle.Unpickler):
    """Every way from pickle bytes to code goes through a class or a persistent id: GLOBAL,
    STACK_GLOBAL, INST, OBJ and the extension codes ask find_class, PERSID asks persistent_load.
    Both refuse, so REDUCE, BUILD and NEWOBJ only ever find plain data on the stack, which cannot
    be called (a TypeError, refused like any other damage)."""

    def find_class(self, module: str, name: str) -> Any:
        raise DumpRefused(f"names a class ({module}.{name}); refused")

    def persistent_load(self, pid: Any) -> Any:
        raise DumpRefused("uses a persistent id; refused")


def decode_pickle(raw: bytes) -> Any:
    try:
        return _PlainUnpickler(io.BytesIO(raw)).load()
    except DumpRefused:
        raise
    except Exception as exc:  # truncated, garbled, an int of 10^6 digits: all "not a dump"
        raise DumpRefused(f"not a readable pickle ({type(exc).__name__})") from None


def decode(raw: bytes) -> tuple[str, Any]:
    """(format, data): JSON when the bytes start like a JSON object, else pickle."""
    if raw.lstrip()[:1] == b"{":
        try:
            return "json", json.loads(raw.decode("utf-8"))
        except (ValueError, RecursionError) as exc:
            raise DumpRefused(f"not valid JSON ({type(exc).__name__})") from None
    return "pickle", decode_pickle(raw)
