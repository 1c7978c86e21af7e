"""Findings about trends: a rate that steps at a point in time, a rate that grows with width."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.finding import (
    CHANGE_MIN_JOBS,
    GROUP_MIN_JOBS,
    MIN_FAILURES,
    MIN_RATIO,
    NOT_COMPUTED,
    Test,
    failure_labels,
    pair,
)
from slurm_hooks.report.significance import (
    cochran_armitage,
    fisher_two_sided,
    relative_risk,
)
from slurm_hooks.report.stats import NODE_BUCKETS, NODE_NAMES, RACK_BUCKETS, RACK_NAMES
from slurm_hooks.report.wording import CONFIG_KEYS


def change_tests(t: Tally) -> Iterator[Test]:
    """For each label, every day as a change point (before it against from it on); all count as tests."""
    day_jobs = t.exposure.day_jobs
    days = sorted(d for d in day_jobs if d)
    if len(days) < 2:
        return
    per_day: dict[str, Counter[str]] = defaultdict(Counter)
    for (day, label, _), n in t.per_day.items():
        per_day[label][day] += n
    jobs = [day_jobs[d] for d in days]
    first_seen = _first_seen(t)
    day_lost = t.day_lost
    for label in failure_labels(t, Counter({lab: sum(c.values()) for lab, c in per_day.items()})):
        fails = [per_day[label][d] for d in days]
        for k in range(1, len(days)):
            n1, n2 = sum(jobs[k:]), sum(jobs[:k])
            a, c = sum(fails[k:]), sum(fails[:k])
            if min(n1, n2) < CHANGE_MIN_JOBS:
                continue
            ratio = relative_risk(a, n1, c, n2)
            large = max(a, c) >= MIN_FAILURES and (ratio[0] >= MIN_RATIO or ratio[0] <= 1 / MIN_RATIO)
            p = fisher_two_sided(a, n1 - a, c, n2 - c) if large else NOT_COMPUTED
            lost = [sum(day_lost.get((d, label), [0, 0])[i] for d in days[k:]) for i in (0, 1)] if large else [0, 0]
            yield Test(
                "change",
                label,
                {"cluster": t.cluster, "day": days[k], "direction": "up" if a / n1 > c / n2 else "down"},
                n1,
                a,
                a / n1,
                c / n2,
                ratio,
                p,
                (lost[0], lost[1]),
                large,
                {"new": first_seen.get(days[k], {}), "baseline_jobs": n2},
            )


def _first_seen(t: Tally) -> dict[str, dict[str, list[str]]]:
    """Day -> the driver, CDMM, ncore and GPU values first seen that day (after the window's first)."""
    first: dict[tuple[int, str], str] = {}
    for config, day in sorted(t.exposure.first_day.items(), key=lambda kv: (kv[1], kv[0])):
        for i, value in enumerate(config.split(" ")):
            if value:
                first.setdefault((i, value), day)
    start = min(t.exposure.day_jobs, default="")
    out: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for (i, value), day in sorted(first.items()):
        if day > start:
            out[day][CONFIG_KEYS[i]].append(value)
    return {day: dict(values) for day, values in out.items()}


def scale_tests(t: Tally) -> Iterator[Test]:
    """Cochran–Armitage over the width buckets (score: the bucket's rank); jobs on no node left out."""
    for spanned, at, names, buckets in (("nodes", 3, NODE_NAMES, NODE_BUCKETS), ("racks", 4, RACK_NAMES, RACK_BUCKETS)):
        order = [name for _, name in buckets][1:]
        jobs: Counter[str] = Counter()
        cases: dict[str, Counter[str]] = defaultdict(Counter)
        lost: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for key, n in t.shape.items():
            if key[at] > 0:
                bucket = names[min(key[at], len(names) - 1)]
                jobs[bucket] += n
                cases[key[0]][bucket] += n
        if spanned == "nodes":
            for (label, _, width), (node_s, gpu_s) in t.lost.items():
                bucket = names[min(width, len(names) - 1)]
                lost[label, bucket][0] += node_s
                lost[label, bucket][1] += gpu_s
        present = [b for b in order if jobs[b]]
        if len(present) < 2:
            continue
        total = Counter({lab: sum(c.values()) for lab, c in cases.items()})
        for label in failure_labels(t, total):
            counts = [cases[label][b] for b in present]
            z, p = cochran_armitage(range(len(present)), counts, [jobs[b] for b in present])
            wide = next(b for b in reversed(present) if jobs[b] >= GROUP_MIN_JOBS or b == present[0])
            cut = present.index(wide)
            a, n1 = cases[label][wide], jobs[wide]
            c, n2 = sum(counts[:cut]), sum(jobs[b] for b in present[:cut])
            ratio = relative_risk(a, n1, c, n2) if n2 else (1.0, 1.0, 1.0)
            yield Test(
                "scale",
                label,
                {"cluster": t.cluster, "spanned": spanned, "bucket": wide},
                n1,
                a,
                a / n1,
                c / n2 if n2 else 0.0,
                ratio,
                p,
                pair(lost[label, wide]),
                z > 0 and a >= MIN_FAILURES and ratio[0] >= MIN_RATIO,
            )
