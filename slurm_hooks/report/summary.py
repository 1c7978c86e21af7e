"""The report's document from a tally: totals and coverage, labels with hours lost, rates per
configuration and per scale bucket, repeat root nodes and racks, the per-day trend and groups."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.coverage import REASONS
from slurm_hooks.report.records import BUCKETS
from slurm_hooks.report.stats import NODE_BUCKETS, NODE_NAMES, RACK_BUCKETS, RACK_NAMES, rate

SCHEMA = "slurm-hooks-report/1"
GROUPS = ("partition", "user", "account")


def summarize(
    t: Tally, rack_of: Callable[[str], str], repeat_min: int, window: dict[str, str], filters: dict[str, list[str]]
) -> dict[str, Any]:
    """The report's document (schema SCHEMA) from a whole window's tally."""
    labels: Counter[str] = Counter()
    for (label, *_), n in t.shape.items():
        labels[label] += n
    jobs = sum(labels.values())
    failed = jobs - labels["success"]
    diagnosed = failed - sum(t.uncovered.values())
    return {
        "schema": SCHEMA,
        "window": window,
        "filters": filters,
        "totals": {
            "jobs": jobs,
            "succeeded": labels["success"],
            "failed": failed,
            "not_ended": t.not_ended,
            "coverage": {
                "failed": failed,
                "diagnosed": diagnosed,
                "ratio": round(diagnosed / failed, 4) if failed else 1.0,
                "uncovered": [
                    {"reason": r, "jobs": t.uncovered[r], "job_ids": [i for i, _ in t.uncovered_ids[r].sorted()]}
                    for r in REASONS
                    if t.uncovered[r]
                ],
            },
        },
        "input": {
            k: t.inputs[k]
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
        "records": {b: t.records[b] for b in BUCKETS},
        "labels": [
            {
                "label": lab,
                "jobs": n,
                "node_hours": round(t.lost[lab][0] / 3600, 2) if lab in t.lost else 0.0,
                "gpu_hours": round(t.lost[lab][1] / 3600, 2) if lab in t.lost else 0.0,
                **({"kinds": _most_first(t.kinds)} if lab == "app_exception" else {}),
            }
            for lab, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
            if lab == "success" or t.shown(lab)
        ],
        "configs": _configs(t),
        "scale": {
            "nodes": _scale(t, 3, NODE_NAMES, NODE_BUCKETS),
            "racks": _scale(t, 4, RACK_NAMES, RACK_BUCKETS),
        },
        "root_nodes": _roots(t, rack_of, repeat_min),
        "root_racks": _root_racks(t, rack_of),
        "per_day": [
            {"day": d, "label": lab, "failures": n} for (d, lab), n in sorted(t.per_day.items()) if t.shown(lab)
        ],
        "groups": _groups(t),
        "details": [
            {"job_id": job_id, "label": label, "state": state, "diagnosis": t.spool.diagnosis(job_id)}
            for job_id, (label, state) in t.details.sorted()
        ],
    }


def _configs(t: Tally) -> list[dict[str, Any]]:
    configs: dict[str, Counter[str]] = defaultdict(Counter)
    for (label, config, recorded, *_), n in t.shape.items():
        if recorded:
            configs[config][label] += n
    out = []
    for config, labels in sorted(configs.items()):
        driver, cdmm, ncore, gpu = config.split(" ")
        total = sum(labels.values())
        for label, n in _most_first(labels).items():
            if not t.shown(label):
                continue
            out.append(
                {
                    "driver": driver,
                    "cdmm": cdmm,
                    "ncore": ncore,
                    "gpu": gpu,
                    "label": label,
                    "jobs": n,
                    "config_jobs": total,
                    **rate(n, total),
                }
            )
    return out


def _scale(t: Tally, at: int, names: list[str], buckets: tuple[tuple[int, str], ...]) -> list[dict[str, Any]]:
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    for key, n in t.shape.items():
        rows[names[min(key[at], len(names) - 1)]][key[0]] += n
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
                "labels": _most_first(labels),
            }
        )
    return out


def _groups(t: Tally) -> dict[str, list[dict[str, Any]]]:
    return {
        group: [{group: k, "jobs": n, "failed": failed[k], **rate(failed[k], n)} for k, n in sorted(jobs.items())]
        for group, (jobs, failed) in zip(GROUPS, t.groups, strict=True)
    }


def _by_node(t: Tally) -> dict[str, Counter[str]]:
    """Failures of the labels shown, by root node."""
    nodes: dict[str, Counter[str]] = defaultdict(Counter)
    for (node, label), n in t.roots.items():
        if t.shown(label):
            nodes[node][label] += n
    return nodes


def _most_first(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _roots(t: Tally, rack_of: Callable[[str], str], repeat_min: int) -> list[dict[str, Any]]:
    rows = [(sum(c.values()), node, c) for node, c in _by_node(t).items()]
    return [
        {
            "node": node,
            "rack": rack_of(node),
            "failures": n,
            "labels": _most_first(c),
            "days": sorted(t.root_days[node]),
        }
        for n, node, c in sorted(rows, key=lambda r: (-r[0], r[1]))
        if n >= repeat_min
    ]


def _root_racks(t: Tally, rack_of: Callable[[str], str]) -> list[dict[str, Any]]:
    racks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for node, labels in _by_node(t).items():
        cell = racks[rack_of(node)]
        cell[0] += sum(labels.values())
        cell[1] += 1
    return [
        {"rack": r, "failures": f, "nodes": n} for r, (f, n) in sorted(racks.items(), key=lambda kv: (-kv[1][0], kv[0]))
    ]
