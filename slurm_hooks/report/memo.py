"""A function's answers by argument, bounded: `map(memo.__getitem__, column)` looks a whole column
up at C speed, and only a text not seen yet costs a Python call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(dict[K, V], Generic[K, V]):
    def __init__(self, compute: Callable[[K], V], cap: int) -> None:
        super().__init__()
        self.compute, self.cap = compute, cap

    def __missing__(self, key: K) -> V:
        if len(self) >= self.cap:  # a million distinct texts must not grow memory: start over
            self.clear()
        value = self[key] = self.compute(key)
        return value
