"""This node's part of the evidence bundle (facts, kernel lines) and the job's job.json.

Each node writes `nodes/<node>.json` and `kernel/<node>.log`; the party that merges writes
job.json once it knows every node (DESIGN.md, bundle v1).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone, tzinfo
from typing import Any

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.collect.kernel import KernelLog
from slurm_hooks.core.times import parse_iso, system_zone
from slurm_hooks.facts.host import boot_time
from slurm_hooks.slurm.client import JobRecord, nodes_shared
from slurm_hooks.slurm.job import JobContext, JobView


def job_window(
    record: JobRecord, facts: dict[str, Any], now: datetime, zone: tzinfo | None = None
) -> tuple[datetime, datetime]:
    """Slurm's naive Start/End times, as UTC; `now` for either end it does not know (squeue prints
    "Unknown" for an end not yet known).

    Naive times are in the zone Slurm's commands printed them in: this system's (`system_zone`,
    or `zone`), never the host's from the node facts (under SUNK the slurmd pod's zone may differ
    from its host's) and never this process's TZ. The kernel lines they are matched against are
    UTC from the kernel's own clock (kmsg records, journal offsets), so no zone enters there.
    `facts` is no longer read (its `timezone` is the host's); hooks/epilog.py still passes it."""
    zone = zone or system_zone()[1]
    return (
        _utc(parse_iso(record.start, default_zone=zone)) or now,
        _utc(parse_iso(record.end, default_zone=zone)) or now,
    )


def _utc(when: datetime | None) -> datetime | None:
    return when.astimezone(timezone.utc) if when else None


def write_node_part(
    spool: Spool, job_id: str, node: str, facts: dict[str, Any], window: tuple[datetime, datetime], kernel: KernelLog
) -> str:
    """nodes/<node>.json and kernel/<node>.log; returns where the kernel lines came from.

    The kernel lines come from the kernel this Epilog runs on, so their boot time is read from
    this /proc/stat now, whatever host_root the Prolog's facts were read under.
    """
    facts = {**facts, "boot_time": boot_time("/", []) or facts.get("boot_time")}
    text, source = kernel.read(*window, parse_iso(facts["boot_time"]))
    # Where they came from, "none (why)" when nowhere: the diagnosis says so in `skipped`.
    facts["kernel_source"] = source
    spool.write(job_id, f"bundle/nodes/{node}.json", json.dumps(facts, indent=1) + "\n")
    if text is not None:
        spool.write(job_id, f"bundle/kernel/{node}.log", text)
    return source


def write_job_json(
    spool: Spool, ctx: JobContext, job: JobView, facts: dict[str, Any], log_timezone: str, now: datetime
) -> None:
    start, end = job_window(job.record, facts, now)
    doc: dict[str, Any] = {
        "job_id": ctx.job_id,
        "state": job.record.state,
        "exit_code": ctx.exit_code or job.record.exit_code,
        "derived_exit_code": ctx.derived_exit_code or job.record.derived_exit_code,
        "start_time": start.isoformat(),
        "end_time": end.isoformat(),
        "nodes": list(job.nodes),
        "batch_host": job.lead or None,
        "timezone": system_zone()[0],  # the zone of Slurm's naive times (slurmstepd's, here), not the host's
        "log_timezone": log_timezone,
    }
    # Slurm's counts for the diagnosis (diagnose/bounds.py, witness.py), only when Slurm gave them:
    # a job.json without them keeps the defaults (512 tasks a node; every kernel line the job's).
    if job.record.ntasks:
        doc["ntasks"] = job.record.ntasks
    if (shared := nodes_shared(job.record.oversubscribe or ctx.oversubscribe)) is not None:
        doc["shared"] = shared
    # A job id holds runs (log-signatures §8.29): Slurm's restart count and the run's id, from the Epilog's
    # environment; with restarts, `start_time` (the record's) is the last run's start.
    if ctx.restart_count:
        doc["restarts"] = int(ctx.restart_count)
    if ctx.sluid:
        doc["sluid"] = ctx.sluid
    spool.write(ctx.job_id, "bundle/job.json", json.dumps(doc, indent=1) + "\n")
