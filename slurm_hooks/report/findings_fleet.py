"""Findings about members of the fleet against the rest of it: a configuration, a node, a group."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.finding import (
    GROUP_MIN_JOBS,
    GROUP_RATIO,
    MIN_FAILURES,
    MIN_RATIO,
    NOT_COMPUTED,
    Test,
    failure_labels,
    pair,
)
from slurm_hooks.report.significance import (
    Z95,
    binom_sf,
    fisher_greater,
    relative_risk,
)
from slurm_hooks.report.wording import CONFIG_KEYS


def config_tests(t: Tally) -> Iterator[Test]:
    by_config: dict[str, Counter[str]] = defaultdict(Counter)
    lost: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for (label, config, recorded, *_), n in t.shape.items():
        if recorded:
            by_config[config][label] += n
    for (label, config, _), (node_s, gpu_s) in t.lost.items():
        lost[label, config][0] += node_s
        lost[label, config][1] += gpu_s
    if len(by_config) < 2:
        return
    fleet = sum(by_config.values(), Counter[str]())
    jobs = sum(fleet.values())
    gpu_all = t.exposure.recorded_gpu_s()
    for label in failure_labels(t, fleet):
        for config, labels in sorted(by_config.items()):
            a, n1 = labels[label], sum(labels.values())
            c, n2 = fleet[label] - a, jobs - n1
            if a < MIN_FAILURES or n2 == 0:
                continue
            ratio = relative_risk(a, n1, c, n2)
            large = ratio[0] >= MIN_RATIO
            gpu_in, gpu_of = lost[label, config][1], t.exposure.config_gpu_s[config]
            gpu_out = sum(lost[label, other][1] for other in by_config if other != config)
            yield Test(
                "config",
                label,
                {"cluster": t.cluster, **dict(zip(CONFIG_KEYS, config.split(" "), strict=True))},
                n1,
                a,
                a / n1,
                c / n2,
                ratio,
                fisher_greater(a, n1 - a, c, n2 - c) if large else NOT_COMPUTED,
                pair(lost[label, config]),
                large,
                {
                    "baseline_jobs": n2,
                    "gpu_rate": round(gpu_in / gpu_of, 4) if gpu_of else 0.0,
                    "gpu_baseline_rate": round(gpu_out / (gpu_all - gpu_of), 4) if gpu_all > gpu_of else 0.0,
                },
            )


def node_tests(t: Tally) -> Iterator[Test]:
    """Roots of a label on a node against its share of the jobs (a job on k nodes: 1/k each)."""
    rooted: Counter[str] = Counter()
    for (_, label), n in t.roots.items():
        rooted[label] += n
    exposure = t.exposure
    by_node = exposure.jobs_by_node()
    shares = {node: exposure.share(node) for node in by_node}  # once per node, not per (node, label)
    total = sum(shares.values())
    if total <= 0:
        return
    for (node, label), observed in sorted(t.roots.items()):
        share = shares.get(node, 0)
        if observed < MIN_FAILURES or not t.shown(label) or share <= 0:
            continue
        expected = rooted[label] * share / total
        large = observed >= MIN_RATIO * expected
        low, high = _poisson_interval(observed)
        yield Test(
            "node",
            label,
            {"cluster": t.cluster, "node": node},
            sum(by_node[node].values()),
            observed,
            observed / share,
            rooted[label] / total,
            (observed / expected, low / expected, high / expected),
            binom_sf(observed, rooted[label], share / total) if large else NOT_COMPUTED,
            pair(t.root_lost.get((node, label), [0, 0])),
            large,
            {"expected": round(expected, 2), "days": sorted(t.root_days.get(node, ()))},
        )


def _poisson_interval(k: int) -> tuple[float, float]:
    """Byar's approximation of the exact 95% interval of a Poisson count."""
    low = k * (1 - 1 / (9 * k) - Z95 / (3 * math.sqrt(k))) ** 3 if k else 0.0
    k1 = k + 1
    return low, k1 * (1 - 1 / (9 * k1) + Z95 / (3 * math.sqrt(k1))) ** 3


def group_tests(t: Tally) -> Iterator[Test]:
    """Each partition, user and account's failure rate against the rest of its cluster's jobs."""
    group_lost = t.group_lost
    for i, (kind, (jobs, failed, _)) in enumerate(zip(("partition", "user", "account"), t.groups, strict=True)):
        all_jobs, all_failed = sum(jobs.values()), sum(failed.values())
        for name, n1 in sorted(jobs.items()):
            a, n2 = failed[name], all_jobs - n1
            c = all_failed - a
            if n1 < GROUP_MIN_JOBS or a < MIN_FAILURES or n2 < GROUP_MIN_JOBS:
                continue
            ratio = relative_risk(a, n1, c, n2)
            large = ratio[0] >= GROUP_RATIO and a / n1 - c / n2 >= 0.05
            yield Test(
                "group",
                "failed",
                {"cluster": t.cluster, kind: name},
                n1,
                a,
                a / n1,
                c / n2,
                ratio,
                fisher_greater(a, n1 - a, c, n2 - c) if large else NOT_COMPUTED,
                pair(group_lost.get((i, name), [0, 0])),
                large,
                {"baseline_jobs": n2},
            )
