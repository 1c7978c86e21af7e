"""A finding as one sentence an admin can act on: what, how strong against what, what it cost,
then what to do. Labels are data: any label reads the same way, and its own advice is in
docs/operators/labels.md."""

from __future__ import annotations

from typing import Any

CONFIG_KEYS = ("driver", "cdmm", "ncore", "gpu")  # a record's configuration string, in its order


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _where(f: dict[str, Any]) -> str:
    cluster = f["subject"].get("cluster")
    return f"[{cluster}] " if cluster else ""


def _config(subject: dict[str, Any]) -> str:
    driver, cdmm, ncore, gpu = (subject.get(k) or "?" for k in CONFIG_KEYS)
    return f"driver {driver} with CDMM {cdmm}, ncore {ncore}, {gpu}"


def _odds(f: dict[str, Any]) -> str:
    return f"{f['ratio']:g}x, 95% CI {f['ci_low']:g}-{f['ci_high']:g}x, p={f['p_value']:.2g} over {f['tests']:,} tests"


def _cost(f: dict[str, Any]) -> str:
    return f"{f['node_hours']:,.0f} node-hours ({f['gpu_hours']:,.0f} GPU-hours) lost"


def sentence(f: dict[str, Any]) -> str:
    kind, label = f["kind"], f["label"]
    rate = f"{_pct(f['rate'])} of {f['jobs']:,} jobs ({_pct(f['rate_ci_low'])}-{_pct(f['rate_ci_high'])})"
    if kind == "config":
        gpu = ""
        if f["gpu_rate"] and abs(f["gpu_rate"] - f["rate"]) > 0.5 * f["rate"]:
            gpu = f" (by GPU-hours {_pct(f['gpu_rate'])} against {_pct(f['gpu_baseline_rate'])})"
        return (
            f"{_where(f)}{_config(f['subject'])}: {label} in {rate} against {_pct(f['baseline_rate'])} of "
            f"{f['baseline_jobs']:,} elsewhere{gpu} ({_odds(f)}); {_cost(f)}. Move these jobs off this "
            f"configuration or apply the {label} advice (docs/operators/labels.md) to it first."
        )
    if kind == "node":
        node, days = f["subject"]["node"], f["days"]
        when = f", on {days[0]}" + (f" to {days[-1]} ({len(days)} days)" if len(days) > 1 else "") if days else ""
        return (
            f"{_where(f)}{node} was the root of {f['failures']} {label} failures where its {f['jobs']:,} jobs "
            f"predict {f['expected']:g}{when} ({_odds(f)}); {_cost(f)}. Run its health checks and drain it "
            f"if they fail (this report drains nothing)."
        )
    if kind == "change":
        new = "; ".join(f"{k} {', '.join(v)}" for k, v in f["new"].items())
        what = f"first seen that day: {new}" if new else "no driver, CDMM, ncore or GPU value was first seen that day"
        verb = "rose" if f["subject"]["direction"] == "up" else "fell"
        return (
            f"{_where(f)}{label} {verb} from {f['subject']['day']}: {rate} since, against "
            f"{_pct(f['baseline_rate'])} of {f['baseline_jobs']:,} before ({_odds(f)}); {what}; {_cost(f)}. "
            f"Check what changed on the nodes that day."
        )
    if kind == "scale":
        spanned, bucket = f["subject"]["spanned"], f["subject"]["bucket"]
        return (
            f"{_where(f)}{label} grows with the {spanned} a job spans: {rate} on {bucket} {spanned}, "
            f"against {_pct(f['baseline_rate'])} in narrower jobs (trend test; {_odds(f)}); {_cost(f)}. "
            f"Look at what only wide jobs stress (fabric, collectives, time limits at scale)."
        )
    group = next(k for k in f["subject"] if k != "cluster")
    return (
        f"{_where(f)}{group} {f['subject'][group]}: {rate} failed against {_pct(f['baseline_rate'])} of "
        f"{f['baseline_jobs']:,} other jobs ({_odds(f)}); {_cost(f)}. Look at that {group}'s failed jobs "
        f"(--{group} {f['subject'][group]} --group-by label)."
    )
