"""`sacct -X -P` rows for a time range, read as a stream with bounded memory per row.

The delimiter is random per call (client.fresh_separator): no comment can hold it, so no comment
can shift a field or forge a row. Field order keeps free text last: the fixed-format fields, then
AdminComment (only admins and tools write it), the user's Comment, then JobIDRaw again as an end
marker: a comment with newlines spans lines, which are joined until one ends in the row's own job
id. A record longer than MAX_RECORD keeps its head, and its Comment ends in TRUNCATED. A row whose
end never comes is closed, unread, at the next line that is a whole row by itself. Saved output
(`report --input`, the benchmark) uses the fixed SEP; there surplus fields join back into Comment.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from datetime import datetime
from typing import IO, Protocol

from slurm_hooks.core.proc import TOOL_ENV, kill_group
from slurm_hooks.slurm.client import SEP, AccountingRow, SlurmError

FIELDS = (
    "JobIDRaw",
    "State",
    "ExitCode",
    "DerivedExitCode",
    "Start",
    "End",
    "ElapsedRaw",
    "NodeList",
    "NNodes",
    "AllocTRES",
    "Partition",
    "User",
    "Account",
    "AdminComment",
    "Comment",
    "JobIDRaw",
)
MAX_RECORD = 160 << 10  # an AdminComment holds up to 65535 bytes; a Comment of 10 MB is cut to this
TRUNCATED = "\0truncated"  # NUL never occurs in sacct's text, so this cannot be forged
_TAIL = 64  # enough to see the end marker of a cut record
_GPU = "gres/gpu="


def sacct_argv(since: datetime, until: datetime, sep: str = SEP, cluster: str = "") -> list[str]:
    """sacct takes naive local times: turn the window into this host's zone (sacct's zone too).
    `cluster`: another cluster of the same slurmdbd (sacct -M); "" is sacct's own. `-D`: every run
    of a requeued job is a row (without it sacct keeps only a job id's latest run), and each run's
    record is on its own row: the Epilog writes it while that run is the job's latest."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    return [
        "sacct",
        "-a",
        "-n",
        "-X",
        "-D",
        "-P",
        f"--delimiter={sep}",
        "-o",
        ",".join(FIELDS),
        "-S",
        since.astimezone().strftime(fmt),
        "-E",
        until.astimezone().strftime(fmt),
        *(["-M", cluster] if cluster else []),
    ]


@contextlib.contextmanager
def sacct_output(argv: list[str], timeout_s: float) -> Iterator[IO[bytes]]:
    """sacct's stdout as a stream; SlurmError once it is read if sacct failed or overran timeout_s."""
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, start_new_session=True, env=TOOL_ENV
            )
        except OSError as exc:
            raise SlurmError(f"{argv[0]}: {exc.strerror or exc}") from None
        timer = threading.Timer(timeout_s, kill_group, (proc.pid,))
        timer.start()
        try:
            assert proc.stdout is not None
            yield proc.stdout
            proc.wait()
        finally:
            timer.cancel()
            if proc.returncode is None:  # the reader stopped early: sacct must not stay behind
                kill_group(proc.pid)
                proc.wait()
        if timer.finished.is_set() and proc.returncode == -signal.SIGKILL:
            raise SlurmError(f"sacct did not finish within {timeout_s:g}s")
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read()[-500:].decode(errors="replace").strip().splitlines()
            raise SlurmError(f"sacct: exit {proc.returncode}: {tail[-1] if tail else ''}")


def parse_rows(stream: IO[bytes], sep: str = SEP) -> Iterator[AccountingRow]:
    """The parsing path for real sacct output and for the benchmark alike."""
    for record, cut in records(stream, sep.encode()):
        yield parse_record(record, cut, sep)


class Lines(Protocol):
    def readline(self, limit: int, /) -> bytes: ...


def records(stream: Lines, bsep: bytes) -> Iterator[tuple[bytes, bool]]:
    """Logical records: physical lines joined until one ends in the separator + the row's own job id."""
    head, tail, cut, marker = b"", b"", False, b""
    while True:
        piece = stream.readline(MAX_RECORD)
        if not piece:
            if head:
                yield head + tail, cut  # the stream ended inside a record: it will not parse
            return
        if head and whole_row(piece, bsep):
            # A row whose end never came ends here, unread, and takes no others along. So after a whole
            # row nothing is pending: the report cuts sacct's output there to read its parts in parallel.
            yield head, False
            head, tail, cut = b"", b"", False
        if not head:
            at = piece.find(bsep)
            first = piece[:at] if at > 0 else b""
            if not first.isdigit():
                yield piece, False  # not the start of a row: count it, don't swallow what follows
                continue
            marker = bsep + first + b"\n"
            if piece.endswith(marker):
                yield piece, False  # the common case: one line, one row
                continue
        if cut:
            tail = (tail + piece)[-_TAIL:]
        elif len(head) + len(piece) > MAX_RECORD:
            head, tail, cut = head + piece[: MAX_RECORD - len(head)], piece[-_TAIL:], True
        else:
            head += piece
        if (tail if cut else head).endswith(marker):
            yield (head + marker if cut else head), cut  # a cut record keeps its head and its end marker
            head, tail, cut = b"", b"", False


def whole_row(line: bytes, bsep: bytes) -> bool:
    """A line that is one row by itself: after it, `records` has nothing pending."""
    first = line.split(bsep, 1)[0]
    return first.isdigit() and line.endswith(bsep + first + b"\n") and line.count(bsep) >= len(FIELDS) - 1


def parse_record(record: bytes, cut: bool, sep: str = SEP) -> AccountingRow:
    """One record of `records` as a row (the report's workers call this on their batches)."""
    text = record.decode("utf-8", "replace")
    fields = text.split(sep)
    fields[-1] = fields[-1].rstrip("\n")
    if len(fields) < len(FIELDS) or fields[0] != fields[-1]:
        return _unreadable(text)
    try:
        elapsed, n_nodes = int(fields[6] or 0), int(fields[8] or 0)
    except ValueError:
        return _unreadable(text)
    comment = sep.join(fields[14:-1])  # a delimiter inside the user's Comment made surplus fields
    # positional: this runs once per job, a million times for a year of a large cluster
    return AccountingRow(
        fields[0],
        fields[1],
        fields[2],
        fields[3],
        fields[4],
        fields[5],
        elapsed,
        fields[7],
        n_nodes,
        gpu_count(fields[9]),
        fields[10],
        fields[11],
        fields[12],
        comment + TRUNCATED if cut else comment,
        fields[13],
    )


@functools.lru_cache(maxsize=4096)  # a cluster has few distinct allocations: a million rows repeat them
def gpu_count(tres: str) -> int:
    """GPUs in an AllocTRES value (`billing=8,cpu=288,gres/gpu=8,mem=2T,node=2`), 0 without any."""
    at = tres.find(_GPU)
    gpus = tres[at + len(_GPU) :].split(",", 1)[0] if at >= 0 else ""
    return int(gpus) if gpus.isascii() and gpus.isdigit() else 0


def _unreadable(text: str) -> AccountingRow:
    return AccountingRow(
        job_id="",
        state="",
        exit_code="",
        derived_exit_code="",
        start="",
        end="",
        elapsed_s=0,
        node_list="",
        n_nodes=0,
        n_gpus=0,
        partition="",
        user="",
        account="",
        comment=text[:200],
        admin_comment="",
    )
