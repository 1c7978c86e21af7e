"""A finding as one sentence an admin can act on: what, how strong against what, what it cost,
then what to do. Labels are data: any label reads the same way, and its own advice is in
docs/operators/labels.md."""

from __future__ import annotations

from typing import Any

CONFIG_KEYS = ("driver", "cdmm", "ncore", "gpu")  # a record's configuration string, in its order
SCALE_KEYS = ("nodes", "racks")  # the width buckets a job spans


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _where(f: dict[str, Any]) -> str:
    cluster = f["subject"].get("cluster")
    return f"[{cluster}] " if cluster else ""


def _config(subject: dict[str, Any], factors: list[str] | None = None) -> str:
    """A configuration by its defining factors (report/factors.py), and what is the same all through it."""
    if factors is None or set(factors) == {k for k in CONFIG_KEYS if subject.get(k)}:
        values = [subject.get(k) for k in CONFIG_KEYS]
        if all(values):
            return "driver {} with CDMM {}, ncore {}, {}".format(*values)
    keys = factors or [k for k in CONFIG_KEYS if subject.get(k)]
    defining = ", ".join(_value(k, subject[k]) for k in keys)
    same = ", ".join(_value(k, subject[k]) for k in (*CONFIG_KEYS, *SCALE_KEYS) if subject.get(k) and k not in keys)
    return f"{defining} (all of it on {same})" if same else defining


def _value(key: str, value: str) -> str:
    names = {"driver": "driver ", "cdmm": "CDMM ", "ncore": "ncore ", "gpu": "GPU "}
    return f"{key} {value}" if key in SCALE_KEYS else f"{names[key]}{value}"


def _cells(f: dict[str, Any]) -> str:
    """An interaction: the rate where both factors meet, where each is alone, where neither is."""
    if "cells" not in f:
        return ""
    first, second = (_value(k, f["subject"][k]) for k in f["factors"])
    names = (f"{first} and {second}", f"{first} only", f"{second} only", "neither")
    rates = "; ".join(f"{name} {_pct(c['rate'])} of {c['jobs']:,}" for name, c in zip(names, f["cells"], strict=True))
    return f" The two act together (interaction p={f['interaction_p']:.2g}), rate in each cell: {rates}."


def _also(f: dict[str, Any], shown: int = 3) -> str:
    """What a finding folded: the subsets it explains, and the evidence that each adds nothing."""
    parts = []
    for other in f.get("also_seen_in", [])[:shown]:
        where = _config(other["subject"], other.get("factors")) if other["kind"] == "config" else other["kind"]
        p = other["p_adds_nothing"]
        parts.append(
            f"{where} ({f'nothing beyond this, p={p:.2g}' if p is not None else 'new that day: not separable'})"
        )
    more = len(f.get("also_seen_in", [])) - shown
    return f" Also seen in: {'; '.join(parts)}{f'; {more} more' if more > 0 else ''}." if parts else ""


def _odds(f: dict[str, Any]) -> str:
    ci = f"95% CI {f['ci_low']:g}-{f['ci_high']:g}x"
    return f"{f['evidence']} evidence: {f['ratio']:g}x, {ci}, p={f['p_value']:.2g} over {f['tests']:,} tests"


def _cost(f: dict[str, Any]) -> str:
    return f"{f['node_hours']:,.0f} node-hours ({f['gpu_hours']:,.0f} GPU-hours) lost"


def _users(f: dict[str, Any]) -> str:
    if "users" not in f:
        return ""
    # an application crash implicates a node only across users
    return f", from {f['users']} users where {f['users_expected']:g} are expected"


def sentence(f: dict[str, Any]) -> str:
    kind, label = f["kind"], f["label"]
    rate = f"{_pct(f['rate'])} of {f['jobs']:,} jobs ({_pct(f['rate_ci_low'])}-{_pct(f['rate_ci_high'])})"
    if kind == "config":
        gpu = ""
        if f["gpu_rate"] and abs(f["gpu_rate"] - f["rate"]) > 0.5 * f["rate"]:
            gpu = f" (by GPU-hours {_pct(f['gpu_rate'])} against {_pct(f['gpu_baseline_rate'])})"
        return (
            f"{_where(f)}{_config(f['subject'], f.get('factors'))}: {label} in {rate} against "
            f"{_pct(f['baseline_rate'])} of "
            f"{f['baseline_jobs']:,} elsewhere{gpu} ({_odds(f)}); {_cost(f)}. Move these jobs off this "
            f"configuration or apply the {label} advice (docs/operators/labels.md) to it first.{_cells(f)}{_also(f)}"
        )
    if kind == "node":
        node, days = f["subject"]["node"], f["days"]
        when = f", on {days[0]}" + (f" to {days[-1]} ({len(days)} days)" if len(days) > 1 else "") if days else ""
        return (
            f"{_where(f)}{node} was the root of {f['failures']} {label} failures where its {f['jobs']:,} jobs "
            f"predict {f['expected']:g}{when}{_users(f)} ({_odds(f)}); {_cost(f)}. Run its health checks and "
            f"drain it if they fail (this report drains nothing)."
        )
    if kind == "change":
        new = "; ".join(f"{k} {', '.join(v)}" for k, v in f["new"].items())
        what = f"first seen that day: {new}" if new else "no driver, CDMM, ncore or GPU value was first seen that day"
        verb = "rose" if f["subject"]["direction"] == "up" else "fell"
        return (
            f"{_where(f)}{label} {verb} from {f['subject']['day']}: {rate} since, against "
            f"{_pct(f['baseline_rate'])} of {f['baseline_jobs']:,} before ({_odds(f)}); {what}; {_cost(f)}. "
            f"Check what changed on the nodes that day.{_also(f)}"
        )
    if kind == "scale":
        spanned, bucket = f["subject"]["spanned"], f["subject"]["bucket"]
        return (
            f"{_where(f)}{label} grows with the {spanned} a job spans: {rate} on {bucket} {spanned}, "
            f"against {_pct(f['baseline_rate'])} in narrower jobs (trend test; {_odds(f)}); {_cost(f)}. "
            f"Look at what only wide jobs stress (fabric, collectives, time limits at scale).{_also(f)}"
        )
    group = next(k for k in f["subject"] if k != "cluster")
    return (
        f"{_where(f)}{group} {f['subject'][group]}: {rate} failed against {_pct(f['baseline_rate'])} of "
        f"{f['baseline_jobs']:,} other jobs ({_odds(f)}); {_cost(f)}. Look at that {group}'s failed jobs "
        f"(--{group} {f['subject'][group]} --group-by label)."
    )
