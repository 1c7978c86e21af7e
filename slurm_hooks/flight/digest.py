"""One decoded dump -> its digest: per process group, the last collective the rank entered and completed.

Keys as PyTorch 2.13 writes them (recorded in tests/fixtures/flight/): `entries` (the ring of
recent collectives: `collective_seq_id`, `pg_id`, `process_group` = (name, desc), `profiling_name`,
`state`, `is_p2p`, `time_created_ns`), `pg_status` (per group name: `last_enqueued_collective`,
`last_started_collective`, `last_completed_collective`; strings in JSON, ints in pickle),
`pg_config`, `version`. Anything missing or of the wrong type is left out, never guessed.
"""

from __future__ import annotations

from typing import Any

MAX_GROUPS = 64  # process groups kept per dump; a job with more keeps the first in seq order
MAX_TEXT = 80


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) < 20:
        return int(value)
    return None


def _text(value: Any) -> str:
    return value[:MAX_TEXT] if isinstance(value, str) else ""


def _group_name(entry: dict[str, Any]) -> str | None:
    pg = entry.get("process_group")
    if isinstance(pg, (list, tuple)) and pg and isinstance(pg[0], str):
        return pg[0][:MAX_TEXT]
    pg_id = _int(entry.get("pg_id"))
    return str(pg_id) if pg_id is not None else None


def digest(data: Any) -> dict[str, Any]:
    """{version, groups: {name: {desc, entered, started, completed, last_op, last_state, entries}}}."""
    if not isinstance(data, dict):
        raise ValueError("not a flight-recorder dump (no mapping at the top)")
    entries = data.get("entries")
    status = data.get("pg_status")
    if not isinstance(entries, list) and not isinstance(status, dict):
        raise ValueError("not a flight-recorder dump (neither entries nor pg_status)")
    groups: dict[str, dict[str, Any]] = {}

    def group(name: str) -> dict[str, Any] | None:
        if name not in groups and len(groups) >= MAX_GROUPS:
            return None
        return groups.setdefault(name, {"desc": "", "entered": None, "started": None, "completed": None, "entries": 0})

    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("is_p2p") is True:
            continue  # p2p ops count in p2p_seq_id, not in the collective sequence peers share
        seq, name = _int(entry.get("collective_seq_id")), _group_name(entry)
        if seq is None or name is None or (g := group(name)) is None:
            continue
        g["entries"] += 1
        pg = entry.get("process_group")
        g["desc"] = g["desc"] or (_text(pg[1]) if isinstance(pg, (list, tuple)) and len(pg) > 1 else "")
        if g["entered"] is None or seq >= g["entered"]:
            g["entered"], g["last_op"] = seq, _text(entry.get("profiling_name"))
            g["last_state"] = _text(entry.get("state"))
        if entry.get("state") == "completed" and (g["completed"] is None or seq > g["completed"]):
            g["completed"] = seq
    for name, st in status.items() if isinstance(status, dict) else []:
        if not isinstance(name, str) or not isinstance(st, dict) or (g := group(name[:MAX_TEXT])) is None:
            continue
        for key, field in (("entered", "last_enqueued_collective"), ("started", "last_started_collective")):
            value = _int(st.get(field))
            if value is not None and value >= 0 and (g[key] is None or value > g[key]):
                g[key] = value
        completed = _int(st.get("last_completed_collective"))
        if completed is not None and completed >= 0:
            g["completed"] = max(completed, g["completed"] or 0)  # gloo updates its count late: the higher one
    return {"version": _text(data.get("version")), "groups": groups}
