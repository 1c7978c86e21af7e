"""Accounting rows saved for a later `report --input`, and the delimiter they were saved with.

A row's fields are split by a delimiter and its end is `delimiter + JobID`. A job's user writes
its Comment (sbatch --comment, scontrol update), so with a delimiter the user can know (sacct's
`|`, a fixed `\\x1f`) a Comment can close its own row and append whole rows of its own: a report
that blames a healthy node. The live read asks sacct for a fresh random delimiter each call
(slurm.client.fresh_separator); `report --save` does the same and writes that delimiter in the
file's first line, so a saved file is as safe as a live read. A file without that line was saved
with the fixed delimiter: it is still read, and the report says it could be forged.
"""

from __future__ import annotations

import os
import re
import shutil
from datetime import datetime
from typing import IO

from slurm_hooks.slurm.cli_backend import SlurmCli
from slurm_hooks.slurm.client import SEP

HEADER = b"#slurm-hooks-sacct/1 sep="
_HEADER_LINE = re.compile(rb"#slurm-hooks-sacct/1 sep=((?:[0-9a-f]{2}){4,64})\n")
FORGEABLE = "fixed: a job's Comment can forge rows in this file; save with `slurm-hooks report --save FILE`"


def save_rows(slurm: SlurmCli, since: datetime, until: datetime, cluster: str, path: str) -> None:
    """sacct's rows for the window into `path`, a new file (never one someone made first, never
    through a link), its first line naming the fresh delimiter sacct was asked for."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as out, slurm.accounting_output(since, until, cluster) as (rows, sep):
        out.write(HEADER + sep.encode().hex().encode() + b"\n")
        shutil.copyfileobj(rows, out)


def input_separator(stream: IO[bytes]) -> tuple[str, str]:
    """The delimiter of a saved file (the stream left at its first row) and how it was chosen:
    `fresh` (named in the file's first line by --save) or FORGEABLE (the fixed one)."""
    head = stream.peek(len(HEADER) + 130)[: len(HEADER) + 130] if hasattr(stream, "peek") else b""
    if not head.startswith(HEADER):
        return SEP, FORGEABLE
    line = stream.readline(len(HEADER) + 130)
    found = _HEADER_LINE.fullmatch(line)
    if found is None:
        raise ValueError("the first line names no delimiter a --save could have written")
    return bytes.fromhex(found.group(1).decode()).decode("utf-8", "replace"), "fresh"
