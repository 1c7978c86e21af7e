"""Findings about members of the fleet against the rest of it: a configuration, a node, a group."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.causes import CODE_LABELS
from slurm_hooks.report.factors import Cell, Cells, subsets
from slurm_hooks.report.finding import (
    GROUP_MIN_JOBS,
    GROUP_RATIO,
    MIN_FAILURES,
    MIN_RATIO,
    NOT_COMPUTED,
    Test,
    failure_labels,
    pair,
    testable,
)
from slurm_hooks.report.significance import (
    Z95,
    binom_sf,
    fisher_greater,
    relative_risk,
)
from slurm_hooks.report.stats import NODE_NAMES, RACK_NAMES
from slurm_hooks.report.wording import CONFIG_KEYS


def config_cells(t: Tally) -> Cells:
    """Recorded jobs by configuration and the node and rack buckets they span."""
    by_cell: dict[Cell, Counter[str]] = defaultdict(Counter)
    last_node, last_rack = len(NODE_NAMES) - 1, len(RACK_NAMES) - 1
    for (label, config, recorded, width, racks, _), n in t.shape.items():
        if recorded:
            by_cell[config, NODE_NAMES[min(width, last_node)], RACK_NAMES[min(racks, last_rack)]][label] += n
    return Cells(by_cell)


def _cell_lost(t: Tally, cells: Cells) -> dict[tuple[str, Cell], tuple[float, float]]:
    """Seconds lost by (label, cell): counted by configuration and width, shared among the width's
    rack buckets by their failures (hours lost are not kept by racks)."""
    lost: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for (label, config, width), (node_s, gpu_s) in t.lost.items():
        entry = lost[label, config, NODE_NAMES[min(width, len(NODE_NAMES) - 1)]]
        entry[0] += node_s
        entry[1] += gpu_s
    failed: Counter[tuple[str, str, str]] = Counter()
    for (config, nodes, _), labels in cells.by_cell.items():
        for label, n in labels.items():
            failed[label, config, nodes] += n
    out = {}
    for cell, labels in cells.by_cell.items():
        for label, n in labels.items():
            node_s, gpu_s = lost.get((label, cell[0], cell[1]), (0, 0))
            share = n / failed[label, cell[0], cell[1]]
            out[label, cell] = (node_s * share, gpu_s * share)
    return out


def config_tests(t: Tally) -> Iterator[Test]:
    """Each configuration factor alone, each pair of factors (one may be the width: factors.subsets),
    against the other recorded jobs."""
    cells = config_cells(t)
    configs = {cell[0] for cell in cells.by_cell}
    if len(configs) < 2:
        return
    lost = _cell_lost(t, cells)
    fleet = sum(cells.by_cell.values(), Counter[str]())
    jobs = sum(fleet.values())
    gpu_all = t.exposure.recorded_gpu_s()
    found = list(subsets(sorted(cells.by_cell)))
    for label in failure_labels(t, fleet):
        lost_all = sum(lost.get((label, cell), (0, 0))[1] for cell in cells.by_cell)
        for subset in found:
            a, n1 = cells.count(subset.cells, label)
            c, n2 = fleet[label] - a, jobs - n1
            if a < MIN_FAILURES or n2 == 0:
                continue
            ratio = relative_risk(a, n1, c, n2)
            large = ratio[0] >= MIN_RATIO
            node_s = sum(lost.get((label, cell), (0, 0))[0] for cell in subset.cells)
            gpu_in = sum(lost.get((label, cell), (0, 0))[1] for cell in subset.cells)
            gpu_rates = (0.0, 0.0)  # by GPU-hours: kept by configuration, so for configuration factors only
            if all(k in CONFIG_KEYS for k in subset.factors):
                gpu_of = sum(t.exposure.config_gpu_s[config] for config in {cell[0] for cell in subset.cells})
                gpu_rates = (
                    round(gpu_in / gpu_of, 4) if gpu_of else 0.0,
                    round((lost_all - gpu_in) / (gpu_all - gpu_of), 4) if gpu_all > gpu_of else 0.0,
                )
            yield Test(
                "config",
                label,
                # every configuration key, as before factors: "" where its value varies within the subset
                {"cluster": t.cluster, **dict.fromkeys(CONFIG_KEYS, ""), **subset.values},
                n1,
                a,
                a / n1,
                c / n2,
                ratio,
                fisher_greater(a, n1 - a, c, n2 - c) if large else NOT_COMPUTED,
                (round(node_s), round(gpu_in)),
                large,
                {
                    "baseline_jobs": n2,
                    "gpu_rate": gpu_rates[0],
                    "gpu_baseline_rate": gpu_rates[1],
                    "factors": list(subset.factors),
                },
                subset.cells,
            )


def node_tests(t: Tally) -> Iterator[Test]:
    """Roots of a label on a node against its share of the jobs (a job on k nodes: 1/k each); for a
    label whose code is the first suspect (causes.CODE_LABELS), also the distinct users among them."""
    rooted: Counter[str] = Counter()
    for (_, label), n in t.roots.items():
        rooted[label] += n
    exposure = t.exposure
    by_node = exposure.jobs_by_node()
    shares = {node: exposure.share(node) for node in by_node}  # once per node, not per (node, label)
    total = sum(shares.values())
    if total <= 0:
        return
    users = _users(t)
    for (node, label), observed in sorted(t.roots.items()):
        share = shares.get(node, 0)
        if observed < MIN_FAILURES or not t.shown(label) or not testable(label) or share <= 0:
            continue
        expected = rooted[label] * share / total
        large = observed >= MIN_RATIO * expected
        p = binom_sf(observed, rooted[label], share / total) if large else NOT_COMPUTED
        extra: dict[str, Any] = {"expected": round(expected, 2), "days": sorted(t.root_days.get(node, ()))}
        if label in CODE_LABELS:
            by_user = users[label]
            seen = len(users[node, label])
            # each user's failures rooted anywhere: the chance at least one of them lands on this node
            chance = sum(1 - (1 - share / total) ** n for n in by_user.values())
            large = large and seen >= 2 and seen >= MIN_RATIO * chance
            # both tests must hold (an intersection-union test: the larger p is a valid p); a
            # Poisson-binomial count's upper tail is at most the binomial's of the same mean (Hoeffding)
            if large:
                p = max(p, binom_sf(seen, len(by_user), chance / len(by_user)))
            p = p if large else NOT_COMPUTED
            extra.update(users=seen, users_expected=round(chance, 2))
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
            p,
            pair(t.root_lost.get((node, label), [0, 0])),
            large,
            extra,
        )


def _users(t: Tally) -> dict[Any, Any]:
    """label -> {user: its roots of the label on any node}; (node, label) -> the users rooted there."""
    out: dict[Any, Any] = defaultdict(Counter)
    for (label, user), n in t.user_roots.items():
        out[label][user] += n
    for key, users in t.root_users.items():
        out[key] = users
    return out


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
