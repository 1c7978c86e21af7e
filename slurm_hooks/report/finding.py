"""One test the report made towards a finding: what decides it (its raw p-value, whether the
effect is large enough) and what its sentence and the JSON document need."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.records import LOW_CONFIDENCE
from slurm_hooks.report.stats import wilson

ALPHA = 0.001  # corrected p-value below which a test can become a finding
MIN_FAILURES = 5  # fewer failures than this in the subject: no test is made (nothing could be acted on)
MIN_RATIO = 2.0  # the effect must also be large: twice (or half) the rest's rate
GROUP_RATIO = 1.5  # a group: half again the rest's failure rate, and 5 points above it
GROUP_MIN_JOBS = 20
# The p-value given to a test whose effect is too small to act on: it counts in the correction (which
# it only makes stricter) but can never be a finding, so its exact tail is not summed.
NOT_COMPUTED = 1.0
CHANGE_MIN_JOBS = 50  # jobs on each side of a change point


@dataclass
class Test:
    kind: str
    label: str
    subject: dict[str, Any]
    jobs: int
    failures: int
    rate: float
    baseline_rate: float
    ratio: tuple[float, float, float]  # the ratio and its 95% interval
    p_raw: float
    lost: tuple[int, int]  # node-, GPU-seconds lost
    large: bool  # the effect is large enough to act on
    extra: dict[str, Any] = field(default_factory=dict)  # what the sentence needs beyond the keys
    members: frozenset[Any] = frozenset()  # the cells (factors.Cell) a configuration or width finding covers

    def finding(self, p_value: float) -> dict[str, Any]:
        low, high = wilson(self.failures, self.jobs) if self.kind != "node" else (0.0, 0.0)
        return {
            "kind": self.kind,
            "label": self.label,
            "subject": self.subject,
            "jobs": self.jobs,
            "failures": self.failures,
            "rate": round(self.rate, 4),
            "baseline_rate": round(self.baseline_rate, 4),
            "ratio": round(self.ratio[0], 2),
            "ci_low": round(self.ratio[1], 2),
            "ci_high": round(self.ratio[2], 2),
            "rate_ci_low": round(low, 4),
            "rate_ci_high": round(high, 4),
            "p_value": float(f"{p_value:.3g}"),
            "tests": 0,  # set by findings(): how many tests the correction covered
            "node_hours": round(self.lost[0] / 3600, 1),
            "gpu_hours": round(self.lost[1] / 3600, 1),
            **self.extra,
        }


def pair(seconds: list[int]) -> tuple[int, int]:
    return seconds[0], seconds[1]


def failure_labels(t: Tally, counts: Counter[str]) -> list[str]:
    return sorted(lab for lab, n in counts.items() if testable(lab) and n >= MIN_FAILURES and t.shown(lab))


def testable(label: str) -> bool:
    """A failure label the findings test: not success, not a diagnosis its Epilog called a guess."""
    return label != "success" and not label.endswith(LOW_CONFIDENCE)
