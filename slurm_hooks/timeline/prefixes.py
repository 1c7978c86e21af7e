"""Strip the launcher prefixes that sit in front of a job-log line (log-signatures §6.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass

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
    rank: int | None  # c10 [rankN]
    body: str


def strip_prefixes(line: str) -> Prefixed:
    m = _PREFIX.match(line)
    assert m is not None  # every part is optional, so the pattern always matches
    task, lrank, rank = m.group("task"), m.group("lrank"), m.group("rank")
    return Prefixed(
        task=int(task) if task is not None else None,
        local_rank=int(lrank) if lrank is not None else None,
        rank=int(rank) if rank is not None else None,
        body=line[m.end() :],
    )
