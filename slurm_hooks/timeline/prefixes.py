"""Strip the launcher prefixes that sit in front of a job-log line (log-signatures §6.1, §8.19)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from slurm_hooks.rules.pattern import LinearPattern

# srun --label (` 93: `), torchrun --tee (`[default3]:`), c10 (`[rank3]:`), outer to inner.
# `[rank3]:` alone is c10's, not a torchrun role named `rank`: a global rank (log-signatures §8.13).
# Runs are bounded: `\w*?` then `\d+` backtracked quadratically over `[a000…` in Python's `re`.
_PREFIX = re.compile(
    r"^(?:\s*(?P<task>\d{1,6}): ?)?(?:\[(?!rank\d)(?P<role>[A-Za-z_]\w{0,63}?)(?P<lrank>\d{1,9})\]:)?"
    r"(?:\[rank(?P<rank>\d{1,9})\]:)?"
)


@dataclass(frozen=True)
class Prefixed:
    task: int | None  # srun task id
    local_rank: int | None  # torchrun [defaultN]
    rank: int | None  # c10 [rankN], or a launcher's global rank (Open MPI [1,N])
    body: str
    host: str | None = None  # the job's node a launcher prefix (pdsh `host: `) names


def strip_prefixes(
    line: str, launchers: Sequence[LinearPattern] = (), hosts: Callable[[str], str | None] | None = None
) -> Prefixed:
    """`launchers` (the pack's, outermost first) are stripped before srun's and torchrun's own; a
    prefix naming a host counts only when `hosts` maps the name to one of the job's nodes."""
    host = launcher_rank = None
    for pattern in launchers:
        found = pattern.search(line)
        if found is None or found.end() == 0:
            continue
        groups = found.groupdict()
        if (name := groups.get("host")) is not None:
            node = hosts(name) if hosts else None
            if node is None:
                continue
            host = node
        if (rank := groups.get("rank")) is not None and rank.isdigit():
            launcher_rank = int(rank)
        line = line[found.end() :]
    (task, local_rank, c10_rank), body = split_stream(line)
    return Prefixed(task, local_rank, c10_rank if c10_rank is not None else launcher_rank, body, host)


def split_stream(line: str) -> tuple[tuple[int | None, int | None, int | None], str]:
    """((srun task, torchrun local rank, c10 rank), body): srun's and torchrun's prefixes alone, no
    record built (the traceback reader asks this of every line after a traceback's start)."""
    m = _PREFIX.match(line)
    assert m is not None  # every part is optional, so the pattern always matches
    if not m.end():
        return (None, None, None), line
    task, lrank, rank = m.group("task", "lrank", "rank")
    return (
        int(task) if task is not None else None,
        int(lrank) if lrank is not None else None,
        int(rank) if rank is not None else None,
    ), line[m.end() :]


def inherit(pre: Prefixed, first: Prefixed) -> Prefixed:
    """A `\\r` segment after the first carries no launcher prefix of its own: it is the first's line."""
    if pre.task is not None or pre.rank is not None or pre.local_rank is not None or pre.host is not None:
        return pre
    return Prefixed(first.task, first.local_rank, first.rank, pre.body, first.host)
