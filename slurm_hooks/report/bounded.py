"""Bounded, order-independent keepers: the lowest job ids seen, the earliest days, seconds summed
by key. Parts of a stream counted apart merge into what the whole stream would have given."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from typing import TypeVar

K = TypeVar("K")
MAX_DAYS = 31  # days listed per root node


def zero_seconds() -> list[int]:  # a named factory: a Tally crosses process boundaries pickled
    return [0, 0]


def add_day(days: set[str], day: str) -> None:
    """Keep the earliest MAX_DAYS days: the same set whatever order the failures come in."""
    if len(days) < MAX_DAYS:
        days.add(day)
    elif day not in days and day < (latest := max(days)):
        days.remove(latest)
        days.add(day)


def sums(items: Iterable[tuple[K, list[int]]]) -> dict[K, list[int]]:
    out: dict[K, list[int]] = defaultdict(zero_seconds)
    for key, (node_s, gpu_s) in items:
        entry = out[key]
        entry[0] += node_s
        entry[1] += gpu_s
    return dict(out)


class Lowest:
    """The n lowest job ids seen, each with its payload: a bounded, order-independent sample."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.heap: list[tuple[int, str, tuple[str, ...]]] = []  # (-id, id, payload): the root is the highest kept

    def add(self, job_id: str, *payload: str) -> None:
        if self.n <= 0:
            return
        item = (-int(job_id), job_id, payload)
        if len(self.heap) < self.n:
            heapq.heappush(self.heap, item)
        elif item > self.heap[0]:
            heapq.heapreplace(self.heap, item)

    def merge(self, other: Lowest) -> None:
        for _, job_id, payload in other.heap:
            self.add(job_id, *payload)

    def sorted(self) -> list[tuple[str, tuple[str, ...]]]:
        return [(job_id, payload) for _, job_id, payload in sorted(self.heap, reverse=True)]
