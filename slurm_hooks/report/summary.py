"""The report's document from its tallies (one per cluster): findings, totals and coverage, labels
with hours lost, rates per configuration and per scale bucket, repeat root nodes and racks, the
per-day trend and groups."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.coverage import REASONS
from slurm_hooks.report.records import BUCKETS, LOW_CONFIDENCE
from slurm_hooks.report.stats import NODE_BUCKETS, NODE_NAMES, RACK_BUCKETS, RACK_NAMES, rate
from slurm_hooks.report.tables import configs, labels, most_first, per_day

SCHEMA = "slurm-hooks-report/1"
GROUPS = ("partition", "user", "account")


def summarize(
    tallies: list[Tally],
    rack_of: Callable[[str], str],
    repeat_min: int,
    window: dict[str, str],
    filters: dict[str, list[str]],
) -> dict[str, Any]:
    """The report's document (schema SCHEMA) from a whole window's tallies, one per cluster: every
    count covers the same jobs (those that ended in the window), every row names its cluster."""
    from slurm_hooks.report.findings import findings

    per = [_totals(t) for t in tallies]
    totals = {
        k: sum(p[k] for p in per)
        for k in (
            "jobs",
            "succeeded",
            "failed",
            "crashed",
            "not_ended",
            "low_confidence",
            "requeued_runs",
            "succeeded_after_requeue",
        )
    }
    bad = totals["failed"] + totals["crashed"]
    diagnosed = sum(p["diagnosed"] for p in per)
    outside = sum((t.outside for t in tallies), Counter[str]())
    uncovered = sum((t.uncovered for t in tallies), Counter[str]())
    return {
        "schema": SCHEMA,
        "window": window,
        "filters": filters,
        "clusters": [t.cluster for t in tallies],
        "findings": findings(tallies),
        "totals": {
            **totals,
            "outside": {"not_ended": totals["not_ended"], **{k: outside[k] for k in OUTSIDE}},
            "node_hours": round(sum(t.exposure.node_s for t in tallies) / 3600, 1),
            "gpu_hours": round(sum(t.exposure.gpu_s for t in tallies) / 3600, 1),
            "coverage": {
                "failed": bad,
                "diagnosed": diagnosed,
                "ratio": round(diagnosed / bad, 4) if bad else 1.0,
                "uncovered": [
                    {"reason": r, "jobs": uncovered[r], "job_ids": _ids(tallies, r)} for r in REASONS if uncovered[r]
                ],
            },
        },
        "input": {
            k: sum(t.inputs[k] for t in tallies)
            for k in (
                "rows",
                "unreadable_rows",
                "no_nodes",
                "comment_cut",
                "comment_newline",
                "comment_delimiter",
                "node_list_cut",
                "node_list_bad",
            )
        },
        "records": {b: sum(t.records[b] for t in tallies) for b in BUCKETS},
        "labels": _each(tallies, labels),
        "configs": _each(tallies, configs),
        "scale": {
            "nodes": _each(tallies, lambda t: _scale(t, 3, NODE_NAMES, NODE_BUCKETS)),
            "racks": _each(tallies, lambda t: _scale(t, 4, RACK_NAMES, RACK_BUCKETS)),
        },
        "root_nodes": _each(tallies, lambda t: _roots(t, rack_of, repeat_min)),
        "root_racks": _each(tallies, lambda t: _root_racks(t, rack_of)),
        "per_day": _each(tallies, per_day),
        "groups": {g: _each(tallies, lambda t, g=g: _groups(t)[g]) for g in GROUPS},  # type: ignore[misc]
        "details": [
            {"job_id": job_id, "label": label, "state": state, "diagnosis": t.spool.diagnosis(job_id)}
            | {"cluster": t.cluster}
            for t in tallies
            for job_id, (label, state) in t.details.sorted()
        ],
    }


OUTSIDE = ("ended_before_window", "ended_after_window", "filtered_out")


def _each(tallies: list[Tally], rows: Callable[[Tally], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return [{**row, "cluster": t.cluster} for t in tallies for row in rows(t)]


def _ids(tallies: list[Tally], reason: str) -> list[str]:
    return [i for t in tallies for i, _ in t.uncovered_ids[reason].sorted()]


def _totals(t: Tally) -> dict[str, int]:
    labels: Counter[str] = Counter()
    crashed = 0
    for (label, *_, crash), n in t.shape.items():
        labels[label] += n
        crashed += n if crash else 0
    jobs = sum(labels.values())
    bad = jobs - labels["success"]
    return {
        "jobs": jobs,
        "succeeded": labels["success"],
        "failed": bad - crashed,
        "crashed": crashed,
        "not_ended": t.not_ended,
        "diagnosed": bad - sum(t.uncovered.values()),
        # failed or crashed with a diagnosis its Epilog called a guess: in "diagnosed", never in a finding
        "low_confidence": sum(n for label, n in labels.items() if label.endswith(LOW_CONFIDENCE)),
        # sacct -D: each run of a requeued job is counted (in `jobs`); these say how many were requeues
        "requeued_runs": t.runs["requeued"],
        "succeeded_after_requeue": t.runs["rerun_ok"],
    }


def _scale(t: Tally, at: int, names: list[str], buckets: tuple[tuple[int, str], ...]) -> list[dict[str, Any]]:
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    crashed: Counter[str] = Counter()
    for key, n in t.shape.items():
        name = names[min(key[at], len(names) - 1)]
        rows[name][key[0]] += n
        crashed[name] += n if key[-1] and t.shown(key[0]) else 0
    out = []
    for _, name in buckets:
        if name not in rows:
            continue
        labels = rows[name]
        jobs = sum(labels.values())
        labels = Counter({k: v for k, v in labels.items() if k == "success" or t.shown(k)})
        failed = sum(labels.values()) - labels.get("success", 0)
        out.append(
            {
                "bucket": name,
                "jobs": jobs,
                "failed": failed,
                **rate(failed, jobs),
                "labels": most_first(labels),
                "crashed": crashed[name],
            }
        )
    return out


def _groups(t: Tally) -> dict[str, list[dict[str, Any]]]:
    return {
        group: [
            {group: k, "jobs": n, "failed": failed[k], **rate(failed[k], n), "crashed": crashed[k]}
            for k, n in sorted(jobs.items())
        ]
        for group, (jobs, failed, crashed) in zip(GROUPS, t.groups, strict=True)
    }


def _by_node(t: Tally) -> dict[str, Counter[str]]:
    """Failures of the labels shown, by root node."""
    nodes: dict[str, Counter[str]] = defaultdict(Counter)
    for (node, label), n in t.roots.items():
        if t.shown(label):
            nodes[node][label] += n
    return nodes


def _roots(t: Tally, rack_of: Callable[[str], str], repeat_min: int) -> list[dict[str, Any]]:
    rows = [(sum(c.values()), node, c) for node, c in _by_node(t).items()]
    return [
        {
            "node": node,
            "rack": rack_of(node),
            "failures": n,
            "labels": most_first(c),
            "days": sorted(t.root_days[node]),
        }
        for n, node, c in sorted(rows, key=lambda r: (-r[0], r[1]))
        if n >= repeat_min
    ]


def _root_racks(t: Tally, rack_of: Callable[[str], str]) -> list[dict[str, Any]]:
    racks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for node, counts in _by_node(t).items():
        cell = racks[rack_of(node)]
        cell[0] += sum(counts.values())
        cell[1] += 1
    return [
        {"rack": r, "failures": f, "nodes": n} for r, (f, n) in sorted(racks.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
