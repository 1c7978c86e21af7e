"""The report document as named tables: what `--group-by` selects and what text and CSV print."""

from __future__ import annotations

from typing import Any

Table = tuple[list[str], list[list[Any]]]
VIEWS = (
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


def _pct(row: dict[str, Any]) -> list[str]:
    return [f"{100 * row['rate']:.1f}%", f"{100 * row['ci_low']:.1f}-{100 * row['ci_high']:.1f}%"]


def view(doc: dict[str, Any], name: str) -> Table:
    totals = doc["totals"]
    if name == "coverage":
        cov = totals["coverage"]
        rows: list[list[Any]] = [
            ["jobs ended", totals["jobs"], ""],
            ["succeeded", totals["succeeded"], ""],
            ["failed", totals["failed"], ""],
            ["failed, diagnosed", cov["diagnosed"], ""],
        ]
        rows += [
            [f"failed, no diagnosis: {u['reason']}", u["jobs"], " ".join(u["job_ids"][:10])] for u in cov["uncovered"]
        ]
        rows.append(["not ended yet", totals["not_ended"], ""])
        return ["what", "jobs", "job ids (first 10)"], rows
    if name == "records":
        rows = [[f"record: {k}", v] for k, v in doc["records"].items() if v]
        rows += [[f"input: {k}", v] for k, v in doc["input"].items() if v]
        return ["bucket", "rows"], rows
    if name == "label":
        return (
            ["label", "jobs", "node-hours lost", "GPU-hours lost"],
            [
                row
                for r in doc["labels"]
                for row in [
                    [r["label"], r["jobs"], r["node_hours"], r["gpu_hours"]],
                    *([f"{r['label']}/{kind}", n, "", ""] for kind, n in r.get("kinds", {}).items()),  # by kind
                ]
            ],
        )
    if name == "config":
        return (
            ["label", "driver", "cdmm", "ncore", "gpu", "jobs", "of", "rate", "95% CI"],
            [
                [
                    r["label"],
                    r["driver"] or "-",
                    r["cdmm"] or "-",
                    r["ncore"] or "-",
                    r["gpu"] or "-",
                    r["jobs"],
                    r["config_jobs"],
                    *_pct(r),
                ]
                for r in doc["configs"]
            ],
        )
    if name in ("nodes", "racks"):
        return (
            [f"{name} spanned", "jobs", "failed", "rate", "95% CI", "top failure"],
            [[r["bucket"], r["jobs"], r["failed"], *_pct(r), _top(r["labels"])] for r in doc["scale"][name]],
        )
    if name == "root-node":
        return (
            ["root node", "rack", "failures", "labels", "days"],
            [
                [r["node"], r["rack"], r["failures"], _counts(r["labels"]), " ".join(r["days"])]
                for r in doc["root_nodes"]
            ],
        )
    if name == "day":
        return ["day", "label", "failures"], [[r["day"], r["label"], r["failures"]] for r in doc["per_day"]]
    if name in ("partition", "user", "account"):
        return (
            [name, "jobs", "failed", "rate", "95% CI"],
            [[r[name], r["jobs"], r["failed"], *_pct(r)] for r in doc["groups"][name]],
        )
    if name == "details":
        return (
            ["job", "label", "state", "summary (spooled diagnosis)", "first fault"],
            [[d["job_id"], d["label"], d["state"], *_diagnosis(d["diagnosis"])] for d in doc["details"]],
        )
    raise KeyError(name)


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
