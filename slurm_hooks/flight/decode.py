"""One flight-recorder dump's bytes -> plain data, never running anything the bytes name.

PyTorch writes its recorder as pickle protocol 2 of dicts, lists, tuples, strings, numbers,
booleans and None (`_dump_fr_trace`), or as JSON (`_dump_fr_trace_json`). A dump sits in a
directory its user writes, so it is hostile input: every opcode is checked against an allow-list
of plain-data opcodes before anything is unpickled (no GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
persistent ids or extension codes), and the unpickler refuses classes and persistent ids besides.
"""

from __future__ import annotations

import io
import json
import pickle
import pickletools
from typing import Any

_PLAIN_OPCODES = frozenset(
    """PROTO FRAME STOP MARK POP POP_MARK DUP NONE NEWTRUE NEWFALSE INT BININT BININT1 BININT2 LONG LONG1
    LONG4 FLOAT BINFLOAT STRING BINSTRING SHORT_BINSTRING BINBYTES SHORT_BINBYTES BINBYTES8 UNICODE
    SHORT_BINUNICODE BINUNICODE BINUNICODE8 EMPTY_LIST APPEND APPENDS LIST EMPTY_TUPLE TUPLE TUPLE1
    TUPLE2 TUPLE3 EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET GET BINGET LONG_BINGET
    PUT BINPUT LONG_BINPUT MEMOIZE""".split()  # noqa: SIM905
)


class DumpRefused(ValueError):
    """The bytes are not a flight-recorder dump we read: the reason is the message."""


class _PlainUnpickler(pickle.Unpickler):
    """Second line of defence: even an opcode the allow-list missed cannot reach a class."""

    def find_class(self, module: str, name: str) -> Any:
        raise DumpRefused(f"names a class ({module}.{name}); refused")

    def persistent_load(self, pid: Any) -> Any:
        raise DumpRefused("uses a persistent id; refused")


def decode_pickle(raw: bytes) -> Any:
    try:
        for op, _arg, _pos in pickletools.genops(raw):
            if op.name not in _PLAIN_OPCODES:
                raise DumpRefused(f"pickle opcode {op.name} is not plain data; refused")
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
