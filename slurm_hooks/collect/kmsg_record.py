"""One /dev/kmsg record -> one line of `journalctl -k -o short-iso-precise`, what kernel.py reads back.

`2026-11-27T03:50:02.100000+00:00 node3 kernel: python[9]: segfault at 0 ...`: always UTC with a
`+00:00` offset (Python 3.10's fromisoformat reads no other form of an offset). A record is never
more than one line: a stream that is not the kernel's (or a kernel bug) must not be able to forge
a second, stamped line into another job's window, so control bytes are escaped as the kernel
escapes them (`\\x0a`), bytes that are not UTF-8 become `\\xff`, and the text is cut at MAX_TEXT.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

MAX_TEXT = 2048  # bytes of a record's text kept; printk's own limit is about 1 KiB
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_HOST = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class KmsgRecord:
    seq: int
    usec: int  # microseconds of the kernel's record clock (see kmsg_device.DevKmsg.booted_at)
    text: str  # one line, escaped


def parse_record(raw: bytes) -> KmsgRecord | None:
    """`prio,seq,usec,flags[,...];text\\n KEY=value...`; None for anything else."""
    head, sep, rest = raw.partition(b";")
    fields = head.split(b",")
    if not sep or len(fields) < 3 or not all(f.isdigit() and len(f) <= 20 for f in fields[:3]):
        return None
    text = rest.split(b"\n", 1)[0][:MAX_TEXT].decode("utf-8", errors="backslashreplace")
    return KmsgRecord(seq=int(fields[1]), usec=int(fields[2]), text=_CONTROL.sub(_escape, text))


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def host_token(name: str) -> str:
    """The host field of the line: one word, whatever the node name holds."""
    return _HOST.sub("_", name)[:64] or "localhost"


def format_line(record: KmsgRecord, booted_at: float, host: str) -> str | None:
    """The journal's line for `record`; None if its stamp is no date (a stream that is not the kernel's)."""
    try:
        when = datetime.fromtimestamp(booted_at + record.usec / 1e6, timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return f"{when.isoformat(timespec='microseconds')} {host} kernel: {record.text}\n"
