"""The report's statistics: failure rates with 95% Wilson intervals, and the buckets of the scale
table (how many nodes, how many racks a job spans)."""

from __future__ import annotations

import math
from typing import Any

NODE_BUCKETS = (
    (0, "0"),
    (1, "1"),
    (2, "2"),
    (4, "3-4"),
    (8, "5-8"),
    (16, "9-16"),
    (32, "17-32"),
    (64, "33-64"),
    (10**9, "65+"),
)
RACK_BUCKETS = ((0, "0"), (1, "1"), (2, "2"), (4, "3-4"), (8, "5-8"), (10**9, "9+"))


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval: 1 failure in 3 jobs reads 6%-79%, not 33%."""
    if n == 0:
        return 0.0, 0.0
    p = k / n
    d = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k: int, n: int) -> dict[str, Any]:
    low, high = wilson(k, n)
    return {"rate": round(k / n, 4) if n else 0.0, "ci_low": round(low, 4), "ci_high": round(high, 4)}


def _lookup(buckets: tuple[tuple[int, str], ...]) -> list[str]:
    """Bucket names indexed by count up to the last finite bound (beyond it: the last name)."""
    return [next(name for top, name in buckets if n <= top) for n in range(buckets[-2][0] + 2)]


NODE_NAMES, RACK_NAMES = _lookup(NODE_BUCKETS), _lookup(RACK_BUCKETS)
