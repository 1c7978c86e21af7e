"""A function's answers by argument, bounded: `map(memo.__getitem__, column)` looks a whole column
up at C speed, and only a text not seen yet costs a Python call. `Memo(Key, cap)` interns values
as Keys."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V], Generic[K, V]):
    """At most `cap` answers and, when `weigh` is given, at most `budget` of their weight (bytes,
    roughly): 300 distinct 99,999-node lists are few entries and gigabytes."""

    def __init__(
        self, compute: Callable[[K], V], cap: int, weigh: Callable[[V], int] | None = None, budget: int = 0
    ) -> None:
        super().__init__()
        self.compute, self.cap, self.weigh, self.budget = compute, cap, weigh, budget
        self.weight = 0

    def __missing__(self, key: K) -> V:
        value = self.compute(key)
        cost = self.weigh(value) if self.weigh else 0
        if len(self) >= self.cap or self.weight + cost > self.budget >= cost:  # memory must not grow: start over
            self.clear()
            self.weight = 0
        if cost <= self.budget or not self.weigh:  # one answer heavier than the budget is not kept at all
            self[key] = value
            self.weight += cost
        return value


class Key(Generic[K]):
    """A value that hashes and compares as its object's identity: interned (a Memo of Keys gives one
    object per value), a row's key made of Keys costs a pointer's hash each, not a hash of every
    field of each value. Two Keys of one value (a memo that started over) count apart: whoever
    counts by Keys sums their values' counts."""

    __slots__ = ("value",)

    def __init__(self, value: K) -> None:
        self.value = value
