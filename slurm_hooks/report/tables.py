"""One cluster's tally as the document's tables: labels with hours lost and both weightings,
rates per configuration (by jobs and by GPU-hours), per day; each also counts crashes inside
COMPLETED jobs apart (`crashed`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from slurm_hooks.report.aggregate import Tally
from slurm_hooks.report.stats import rate


def labels(t: Tally) -> list[dict[str, Any]]:
    labels: Counter[str] = Counter()
    crashed: Counter[str] = Counter()
    for (label, *_, crash), n in t.shape.items():
        labels[label] += n
        crashed[label] += n if crash else 0
    lost: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (label, _, _), (node_s, gpu_s) in t.lost.items():
        lost[label][0] += node_s
        lost[label][1] += gpu_s
    jobs, gpu_s = sum(labels.values()), t.exposure.gpu_s
    lost["success"][1] = gpu_s - sum(g for lab, (_, g) in lost.items() if lab != "success")
    return [
        {
            "label": lab,
            "jobs": n,
            "node_hours": round(lost[lab][0] / 3600, 2) if lab != "success" else 0.0,
            "gpu_hours": round(lost[lab][1] / 3600, 2) if lab != "success" else 0.0,
            "crashed": crashed[lab],
            "job_share": round(n / jobs, 4) if jobs else 0.0,
            "gpu_share": round(lost[lab][1] / gpu_s, 4) if gpu_s else 0.0,
            **({"kinds": most_first(t.kinds)} if lab == "app_exception" else {}),
        }
        for lab, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
        if lab == "success" or t.shown(lab)
    ]


def per_day(t: Tally) -> list[dict[str, Any]]:
    day_jobs = t.exposure.day_jobs
    days: Counter[tuple[str, str]] = Counter()
    crashed: Counter[tuple[str, str]] = Counter()
    for (day, label, crash), n in t.per_day.items():
        days[day, label] += n
        crashed[day, label] += n if crash else 0
    return [
        {"day": d, "label": lab, "failures": n, "crashed": crashed[d, lab], "jobs": day_jobs[d]}
        for (d, lab), n in sorted(days.items())
        if t.shown(lab)
    ]


def configs(t: Tally) -> list[dict[str, Any]]:
    configs: dict[str, Counter[str]] = defaultdict(Counter)
    crashed: Counter[tuple[str, str]] = Counter()
    for (label, config, recorded, *_, crash), n in t.shape.items():
        if recorded:
            configs[config][label] += n
            crashed[config, label] += n if crash else 0
    gpu_lost: Counter[tuple[str, str]] = Counter()
    for (label, config, _), (_, gpu_s) in t.lost.items():
        gpu_lost[config, label] += gpu_s
    out = []
    for config, labels in sorted(configs.items()):
        driver, cdmm, ncore, gpu = config.split(" ")
        total, gpu_of = sum(labels.values()), t.exposure.config_gpu_s[config]
        for label, n in most_first(labels).items():
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
                    "crashed": crashed[config, label],
                    # the same rate weighted by GPU-hours (success: what the failures left)
                    "gpu_rate": round(_gpu_part(gpu_lost, config, label, gpu_of) / gpu_of, 4) if gpu_of else 0.0,
                }
            )
    return out


def _gpu_part(gpu_lost: Counter[tuple[str, str]], config: str, label: str, gpu_of: int) -> int:
    if label != "success":
        return gpu_lost[config, label]
    return gpu_of - sum(v for (c, lab), v in gpu_lost.items() if c == config and lab != "success")


def most_first(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
