"""Time as the hooks see it, behind one small Protocol so tests can wait without sleeping."""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float: ...  # for budgets and waits
    def time(self) -> float: ...  # wall clock, seconds since the epoch (queue ages)
    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def utc_now(clock: Clock) -> datetime:
    return datetime.fromtimestamp(clock.time(), timezone.utc)
