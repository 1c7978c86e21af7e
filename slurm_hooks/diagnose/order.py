"""Before/after between two events, knowing what each clock can tell apart (log-signatures §6.3, §8.10)."""

from __future__ import annotations

from datetime import timedelta

from slurm_hooks.timeline.events import Event


class Order:
    def __init__(self, tolerance_s: float) -> None:
        self.tol = timedelta(seconds=tolerance_s)

    @staticmethod
    def near(a: Event, b: Event, span: timedelta) -> bool:
        """Within `span` of each other, or in one file with no clock to say otherwise."""
        if a.when and b.when:
            return abs(a.when - b.when) <= span
        return a.source == b.source

    def coincide(self, a: Event, b: Event, span: timedelta) -> bool:
        """Within `span`, or too close (or too vaguely placed) for the clocks to order."""
        return self.precedes(a, b) is None or self.near(a, b, span)

    def precedes(self, a: Event, b: Event) -> bool | None:
        """True/False when the order is known; None when the clocks cannot separate them."""
        if a.source == b.source:  # one file: position is the order (srun forwards per-task streams in order)
            return a.line_no < b.line_no
        # An untimed line is only known to lie between its neighbours' stamps.
        if a.latest and b.earliest and a.latest < b.earliest - self.tol:
            return True
        if b.latest and a.earliest and b.latest < a.earliest - self.tol:
            return False
        return None
