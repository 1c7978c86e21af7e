"""The report document as named tables: what `--group-by` selects and what text, CSV and HTML
print. Cells are values (counts, rates as fractions, each interval bound its own column): CSV
writes them as they are, and text and HTML format the columns named in RATES as percentages."""

from __future__ import annotations

from typing import Any

Table = tuple[list[str], list[list[Any]]]
VIEWS = (
    "findings",
    "coverage",
    "records",
    "label",
    "config",
    "nodes",
    "racks",
    "root-node",
    "day",
    "partition",
    "user",
    "account",
    "details",
)
DEFAULT_TEXT = ("coverage", "records", "label", "config", "nodes", "racks", "root-node", "day")
RATES = frozenset({"rate", "ci_low", "ci_high", "job share", "GPU-hour share", "rate by GPU-hours", "fleet rate"})
# what the top rows of a view are, in the default text: the column to rank by (None: as listed)
TOP_BY: dict[str, str | None] = {"config": "jobs", "day": "failures", "root-node": None, "label": None}
_RATE = ("rate", "ci_low", "ci_high")
FINDING_COLUMNS = ["kind", "label", "subject", "jobs", "failures", "rate", "baseline_rate", "ratio", "ratio_ci_low"]
FINDING_COLUMNS += ["ratio_ci_high", "p_value", "node_hours", "gpu_hours", "text", "evidence"]  # new ones last


def _rates(row: dict[str, Any]) -> list[float]:
    return [row[k] for k in _RATE]


def view(doc: dict[str, Any], name: str) -> Table:
    columns, rows, clustered = _view(doc, name)
    if clustered and len(doc.get("clusters", [""])) > 1:  # the cluster is a dimension of every view
        return ["cluster", *columns], [[c, *row] for c, row in rows]
    return columns, [row for _, row in rows]


def _view(doc: dict[str, Any], name: str) -> tuple[list[str], list[tuple[str, list[Any]]], bool]:
    totals = doc["totals"]
    if name == "findings":
        return (
            FINDING_COLUMNS,
            [
                (
                    f["subject"].get("cluster", ""),
                    [
                        f["kind"],
                        f["label"],
                        " ".join(f"{k}={v}" for k, v in f["subject"].items() if k != "cluster"),
                        *(f[k] for k in ("jobs", "failures", "rate", "baseline_rate", "ratio", "ci_low", "ci_high")),
                        *(f[k] for k in ("p_value", "node_hours", "gpu_hours", "text")),
                        f.get("evidence", ""),
                    ],
                )
                for f in doc["findings"]
            ],
            True,
        )
    if name == "coverage":
        cov = totals["coverage"]
        rows: list[list[Any]] = [
            ["jobs ended in the window", totals["jobs"], ""],
            ["succeeded", totals["succeeded"], ""],
            ["failed", totals["failed"], ""],
            ["completed, with a crash", totals.get("crashed", 0), ""],
            ["failed or crashed, diagnosed", cov["diagnosed"], ""],
        ]
        # each run of a requeued job is a job here (sacct -D): say how many were, where any were
        rows += [
            [what, totals[key], ""]
            for what, key in (
                ("of these, runs that ended in a requeue", "requeued_runs"),
                ("of these, runs that succeeded after a requeue", "succeeded_after_requeue"),
            )
            if totals.get(key)
        ]
        rows += [
            [f"failed, no diagnosis: {u['reason']}", u["jobs"], " ".join(u["job_ids"][:10])] for u in cov["uncovered"]
        ]
        outside = totals.get("outside", {"not_ended": totals["not_ended"]})
        rows += [[f"not counted: {k.replace('_', ' ')}", v, ""] for k, v in outside.items() if v or k == "not_ended"]
        return ["what", "jobs", "job ids (first 10)"], [("", r) for r in rows], False
    if name == "records":
        rows = [[f"record: {k}", v] for k, v in doc["records"].items() if v]
        rows += [[f"input: {k}", v] for k, v in doc["input"].items() if v]
        return ["bucket", "jobs (input: rows)"], [("", r) for r in rows], False
    if name == "label":
        return (
            ["label", "jobs", "node-hours lost", "GPU-hours lost", "crashed", "job share", "GPU-hour share"],
            [
                row
                for r in doc["labels"]
                for row in [
                    (r.get("cluster", ""), [r["label"], r["jobs"], r["node_hours"], r["gpu_hours"], *_extra(r)]),
                    *(  # app_exception by kind
                        (r.get("cluster", ""), [f"{r['label']}/{kind}", n, "", "", "", "", ""])
                        for kind, n in r.get("kinds", {}).items()
                    ),
                ]
            ],
            True,
        )
    if name == "config":
        return (
            ["label", "driver", "cdmm", "ncore", "gpu", "jobs", "of", *_RATE, "rate by GPU-hours", "crashed"],
            [
                (
                    r.get("cluster", ""),
                    [
                        r["label"],
                        *(r[k] or "-" for k in ("driver", "cdmm", "ncore", "gpu")),
                        r["jobs"],
                        r["config_jobs"],
                        *_rates(r),
                        r.get("gpu_rate", 0.0),
                        r.get("crashed", 0),
                    ],
                )
                for r in doc["configs"]
                if r["label"] != "success"  # the rates of failures; success is what is left
            ],
            True,
        )
    if name in ("nodes", "racks"):
        return (
            [f"{name} spanned", "jobs", "failed", *_RATE, "crashed", "top failure"],
            [
                (
                    r.get("cluster", ""),
                    [r["bucket"], r["jobs"], r["failed"], *_rates(r), r.get("crashed", 0), _top(r["labels"])],
                )
                for r in doc["scale"][name]
            ],
            True,
        )
    if name == "root-node":
        return (
            ["root node", "rack", "failures", "labels", "days"],
            [
                (r.get("cluster", ""), [r["node"], r["rack"], r["failures"], _counts(r["labels"]), " ".join(r["days"])])
                for r in doc["root_nodes"]
            ],
            True,
        )
    if name == "day":
        return (
            ["day", "label", "failures", "crashed", "jobs that day"],
            [
                (r.get("cluster", ""), [r["day"], r["label"], r["failures"], r.get("crashed", 0), r.get("jobs", "")])
                for r in doc["per_day"]
            ],
            True,
        )
    if name in ("partition", "user", "account"):
        return (
            [name, "jobs", "failed", *_RATE, "crashed"],
            [
                (r.get("cluster", ""), [r[name], r["jobs"], r["failed"], *_rates(r), r.get("crashed", 0)])
                for r in doc["groups"][name]
            ],
            True,
        )
    if name == "details":
        return (
            ["job", "label", "state", "summary (spooled diagnosis)", "first fault"],
            [
                (d.get("cluster", ""), [d["job_id"], d["label"], d["state"], *_diagnosis(d["diagnosis"])])
                for d in doc["details"]
            ],
            True,
        )
    raise KeyError(name)


def _extra(r: dict[str, Any]) -> list[Any]:
    return [r.get("crashed", 0), r.get("job_share", 0.0), r.get("gpu_share", 0.0)]


def _diagnosis(diagnosis: dict[str, Any] | None) -> list[str]:
    if not diagnosis:
        return ["(none in this spool)", ""]
    fault = diagnosis.get("first_fault") or {}
    where = " ".join(f"{k}={fault[k]}" for k in ("kind", "node", "rank", "time") if fault.get(k) is not None)
    return [str(diagnosis.get("summary") or "")[:160], where]


def _counts(labels: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in labels.items())


def _top(labels: dict[str, int]) -> str:
    failures = [(n, k) for k, n in labels.items() if k != "success"]
    return f"{max(failures)[1]} ({max(failures)[0]})" if failures else "-"
