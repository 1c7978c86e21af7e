"""Assemble the evidence bundle in the spool: each node writes its part, one party writes job.json."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from slurm_hooks.facts.host import boot_time
from slurm_hooks.joblogs import Copied, copy_as_user, expand_pattern
from slurm_hooks.kernel import from_journal, from_kmsg
from slurm_hooks.safeio import atomic_write
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.times import parse_iso, zone_named


def job_window(record: JobRecord, facts: dict[str, Any]) -> tuple[datetime, datetime]:
    """Slurm's naive Start/End times in the node's zone; now as a fallback for either end."""
    zone = zone_named(facts.get("timezone"), "node timezone")
    now = datetime.now(timezone.utc)  # scontrol prints "Unknown" for an end not yet known: not a time
    return parse_iso(record.start, default_zone=zone) or now, parse_iso(record.end, default_zone=zone) or now


def write_node_part(bundle: Path, node: str, facts: dict[str, Any], window: tuple[datetime, datetime],
                    timeout_s: float) -> str:
    """nodes/<node>.json and kernel/<node>.log; returns where the kernel lines came from.

    The kernel lines come from the kernel this Epilog runs on, so their boot time is read from
    this /proc/stat now, whatever host_root the Prolog's facts were read under.
    """
    running_boot = boot_time("/", [])
    facts = {**facts, "boot_time": running_boot or facts.get("boot_time")}
    atomic_write(bundle / "nodes" / f"{node}.json", json.dumps(facts, indent=1) + "\n", mode=0o600)
    boot = parse_iso(facts["boot_time"])
    text = from_journal(*window, timeout_s)
    source = "journal"
    if text is None and boot is not None:
        text, source = from_kmsg(*window, boot), "/dev/kmsg"
    if text is None:
        return "none (no journal, /dev/kmsg unreadable or no boot time)"
    atomic_write(bundle / "kernel" / f"{node}.log", text, mode=0o600)
    return source


def log_paths(record: JobRecord, env: dict[str, str], node: str) -> list[str]:
    """The job's stdout/stderr: slurmctld's expanded paths, else the Epilog's pattern expanded here."""
    paths = [p for p in (record.std_out, record.std_err) if p and p not in ("/dev/null", "(null)")]
    if not paths:
        user = env.get("SLURM_JOB_USER", "")
        work = env.get("SLURM_JOB_WORK_DIR") or record.work_dir
        for key in ("SLURM_JOB_STDOUT", "SLURM_JOB_STDERR"):
            if env.get(key) and (path := expand_pattern(env[key], record.job_id, user, node)):
                paths.append(path)
        if not paths and work and env.get("SLURM_JOB_STDIN"):  # a batch job without --output
            paths.append(f"{work}/slurm-{record.job_id}.out")
    return list(dict.fromkeys(paths))


def copy_job_logs(bundle: Path, paths: list[str], uid: int, gid: int, limit: int, timeout_s: float) -> list[Copied]:
    copied = []
    for i, path in enumerate(paths):
        name = f"{i}-{Path(path).name}"[:120]
        copied.append(copy_as_user(path, bundle / "logs" / name, uid, gid, limit, timeout_s))
    return copied


def write_job_json(bundle: Path, record: JobRecord, env: dict[str, str], nodes: list[str],
                   facts: dict[str, Any], log_timezone: str) -> None:
    zone = facts.get("timezone") or "UTC"
    start, end = job_window(record, facts)
    doc = {
        "job_id": record.job_id,
        "state": record.state,
        "exit_code": env.get("SLURM_JOB_EXIT_CODE2") or record.exit_code,
        "derived_exit_code": raw_status(env.get("SLURM_JOB_DERIVED_EC")) or record.derived_exit_code,
        "start_time": start.isoformat(), "end_time": end.isoformat(),
        "nodes": nodes, "batch_host": record.batch_host or (nodes[0] if nodes else None),
        "timezone": zone, "log_timezone": log_timezone,
    }
    atomic_write(bundle / "job.json", json.dumps(doc, indent=1) + "\n", mode=0o600)


def raw_status(value: str | None) -> str:
    """SLURM_JOB_DERIVED_EC is a wait(2) status: 11 -> 0:11, 256 -> 1:0, 253 (OOM) -> 0:125."""
    if not value or not value.isdigit():
        return ""
    status = int(value)
    return f"0:{status & 0x7F}" if status & 0x7F else f"{status >> 8}:0"
