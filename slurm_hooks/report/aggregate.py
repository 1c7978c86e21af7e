"""One pass over the jobs, bounded memory: counters keyed by label, configuration, scale bucket,
root node, day and group, never a list of jobs (samples of job ids are capped)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

from slurm_hooks.report.coverage import REASONS, SpoolView
from slurm_hooks.report.read import Job
from slurm_hooks.report.records import BUCKETS, OURS
from slurm_hooks.report.stats import NODE_BUCKETS, NODE_NAMES, RACK_BUCKETS, RACK_NAMES, rate

SCHEMA = "slurm-hooks-report/1"
UNRECORDED = "(no record)"  # failed, but no record the report may trust
SAMPLE = 100
GROUPS = ("partition", "user", "account")


class Tally:
    def __init__(
        self,
        rack_of: Callable[[str], str],
        spool: SpoolView,
        repeat_root_min: int,
        details_limit: int = 0,
        focus: frozenset[str] = frozenset(),
    ) -> None:
        # --label: rates of these labels among all jobs (filtering the jobs would make every rate 100%)
        self.focus = focus
        self.rack_of, self.spool, self.repeat_min, self.details_limit = rack_of, spool, repeat_root_min, details_limit
        self.not_ended = 0
        self.inputs: Counter[str] = Counter()
        self.records: Counter[str] = Counter()
        self.uncovered: dict[str, list[Any]] = {r: [0, []] for r in REASONS}
        # One counter per row shape, split up at the end: a dict update per job is what costs here.
        self.shape: Counter[tuple[Any, ...]] = Counter()  # label, config, recorded, n_nodes, n_racks
        self.who: Counter[tuple[Any, ...]] = Counter()  # partition, user, account, failed
        self.lost: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.roots: dict[str, Counter[str]] = defaultdict(Counter)
        self.root_days: dict[str, set[str]] = defaultdict(set)
        self.per_day: Counter[tuple[str, str]] = Counter()
        self.details: list[dict[str, Any]] = []

    def unreadable(self) -> None:
        self.inputs["rows"] += 1
        self.inputs["unreadable_rows"] += 1

    def add(self, job: Job) -> None:
        inputs = self.inputs
        inputs["rows"] += 1
        if job.comment:
            inputs["comment_cut"] += job.comment_cut
            inputs["comment_newline"] += "\n" in job.comment
            inputs["comment_delimiter"] += "|" in job.comment or "\x1f" in job.comment
        if not job.n_nodes:
            inputs["no_nodes"] += 1
        self.records[job.bucket] += 1
        if not job.ended:
            self.not_ended += 1
            return
        label = job.label or (UNRECORDED if job.failed else "success")
        self.shape[(label, job.config, job.label != "", job.n_nodes, job.n_racks)] += 1
        self.who[(job.partition, job.user, job.account, job.failed)] += 1
        if not job.failed:
            return
        entry = self.lost[label]
        entry[0] += job.elapsed_s * job.n_nodes / 3600
        entry[1] += job.elapsed_s * job.n_gpus / 3600
        self.per_day[(job.day, label)] += 1
        if job.root_node:
            self.roots[job.root_node][label] += 1
            if len(self.root_days[job.root_node]) < 31:
                self.root_days[job.root_node].add(job.day)
        if job.bucket != OURS:
            reason = self.uncovered[self.spool.reason(job.job_id, job.bucket, job.comment)]
            reason[0] += 1
            if len(reason[1]) < SAMPLE:
                reason[1].append(job.job_id)
        if len(self.details) < self.details_limit:
            self.details.append(
                {
                    "job_id": job.job_id,
                    "label": label,
                    "state": job.state,
                    "diagnosis": self.spool.diagnosis(job.job_id),
                }
            )

    def result(self, window: dict[str, str], filters: dict[str, list[str]]) -> dict[str, Any]:
        labels: Counter[str] = Counter()
        for (label, *_), n in self.shape.items():
            labels[label] += n
        jobs = sum(labels.values())
        failed = jobs - labels["success"]
        diagnosed = failed - sum(c for c, _ in self.uncovered.values())
        return {
            "schema": SCHEMA,
            "window": window,
            "filters": filters,
            "totals": {
                "jobs": jobs,
                "succeeded": labels["success"],
                "failed": failed,
                "not_ended": self.not_ended,
                "coverage": {
                    "failed": failed,
                    "diagnosed": diagnosed,
                    "ratio": round(diagnosed / failed, 4) if failed else 1.0,
                    "uncovered": [
                        {"reason": r, "jobs": c, "job_ids": ids} for r, (c, ids) in self.uncovered.items() if c
                    ],
                },
            },
            "input": {
                k: self.inputs[k]
                for k in ("rows", "unreadable_rows", "no_nodes", "comment_cut", "comment_newline", "comment_delimiter")
            },
            "records": {b: self.records[b] for b in BUCKETS},
            "labels": [
                {
                    "label": lab,
                    "jobs": n,
                    "node_hours": round(self.lost[lab][0], 2) if lab in self.lost else 0.0,
                    "gpu_hours": round(self.lost[lab][1], 2) if lab in self.lost else 0.0,
                }
                for lab, n in sorted(labels.items(), key=lambda kv: (-kv[1], kv[0]))
                if lab == "success" or self.shown(lab)
            ],
            "configs": self._configs(),
            "scale": {
                "nodes": self._scale(3, NODE_NAMES, NODE_BUCKETS),
                "racks": self._scale(4, RACK_NAMES, RACK_BUCKETS),
            },
            "root_nodes": self._roots(),
            "root_racks": self._root_racks(),
            "per_day": [
                {"day": d, "label": lab, "failures": n}
                for (d, lab), n in sorted(self.per_day.items())
                if self.shown(lab)
            ],
            "groups": self._groups(),
            "details": self.details,
        }

    def shown(self, label: str) -> bool:
        return not self.focus or label in self.focus

    def _configs(self) -> list[dict[str, Any]]:
        configs: dict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
        for (label, config, recorded, *_), n in self.shape.items():
            if recorded:
                configs[config][label] += n
        out = []
        for (driver, cdmm, ncore, gpu), labels in sorted(configs.items()):
            total = sum(labels.values())
            for label, n in sorted(labels.items(), key=lambda kv: -kv[1]):
                if not self.shown(label):
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

    def _scale(self, at: int, names: list[str], buckets: tuple[tuple[int, str], ...]) -> list[dict[str, Any]]:
        rows: dict[str, Counter[str]] = defaultdict(Counter)
        for key, n in self.shape.items():
            rows[names[min(key[at], len(names) - 1)]][key[0]] += n
        out = []
        for _, name in buckets:
            if name not in rows:
                continue
            labels = rows[name]
            jobs = sum(labels.values())
            labels = Counter({k: v for k, v in labels.items() if k == "success" or self.shown(k)})
            failed = sum(labels.values()) - labels.get("success", 0)
            out.append(
                {
                    "bucket": name,
                    "jobs": jobs,
                    "failed": failed,
                    **rate(failed, jobs),
                    "labels": dict(labels.most_common()),
                }
            )
        return out

    def _groups(self) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for i, group in enumerate(GROUPS):
            cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for key, n in self.who.items():
                cell = cells[key[i]]
                cell[0] += n
                cell[1] += n if key[3] else 0
            out[group] = [
                {group: k, "jobs": v[0], "failed": v[1], **rate(v[1], v[0])} for k, v in sorted(cells.items())
            ]
        return out

    def _roots(self) -> list[dict[str, Any]]:
        shown = ((node, Counter({k: v for k, v in c.items() if self.shown(k)})) for node, c in self.roots.items())
        rows = [(sum(c.values()), node, c) for node, c in shown]
        return [
            {
                "node": node,
                "rack": self.rack_of(node),
                "failures": n,
                "labels": dict(c.most_common()),
                "days": sorted(self.root_days[node]),
            }
            for n, node, c in sorted(rows, key=lambda r: (-r[0], r[1]))
            if n >= self.repeat_min
        ]

    def _root_racks(self) -> list[dict[str, Any]]:
        racks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for node, labels in self.roots.items():
            cell = racks[self.rack_of(node)]
            failures = sum(n for label, n in labels.items() if self.shown(label))
            cell[0] += failures
            cell[1] += failures > 0
        return [{"rack": r, "failures": f, "nodes": n} for r, (f, n) in sorted(racks.items(), key=lambda kv: -kv[1][0])]
