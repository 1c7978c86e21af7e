"""`--explain N`: the failed jobs behind finding N (ids, nodes, records), found by a second pass over
the same rows, so the first pass keeps its bounded memory and its speed: the tally holds counts,
never jobs. A finding's subject says which failed jobs it counts; `matches` says it again per job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import IO, Any, Protocol

from slurm_hooks.report.blocks import batches, in_bounds, read_unit, units
from slurm_hooks.report.factors import dimensions
from slurm_hooks.report.parallel import Counting
from slurm_hooks.report.read import Jobs
from slurm_hooks.report.stats import NODE_NAMES, RACK_NAMES
from slurm_hooks.slurm.client import AccountingRow
from slurm_hooks.slurm.columns import Columns

SHOWN = 50  # jobs listed; the rest are counted
Job = dict[str, Any]  # label, config, nodes, racks, day, root node, partition, user, account


def matches(finding: dict[str, Any]) -> Callable[[Job], bool]:
    """Whether a failed job is one that finding counts among its failures."""
    kind, label, subject = finding["kind"], finding["label"], finding["subject"]
    keys = {k: v for k, v in subject.items() if k != "cluster" and v != ""}  # "": any value
    if kind == "group":
        return lambda job: all(job[k] == v for k, v in keys.items())
    if kind == "node":
        return lambda job: job["label"] == label and job["root"] == subject["node"]
    if kind == "change":
        up = subject["direction"] == "up"
        return lambda job: job["label"] == label and bool(job["day"]) and (job["day"] >= subject["day"]) == up
    if kind == "scale":
        names = NODE_NAMES if subject["spanned"] == "nodes" else RACK_NAMES
        at = subject["spanned"]
        return lambda job: job["label"] == label and names[min(job[at], len(names) - 1)] == subject["bucket"]

    def config(job: Job) -> bool:
        cell = (
            job["config"],
            NODE_NAMES[min(job["nodes"], len(NODE_NAMES) - 1)],
            RACK_NAMES[min(job["racks"], len(RACK_NAMES) - 1)],
        )
        return job["label"] == label and job["recorded"] and all(dimensions(cell)[k] == v for k, v in keys.items())

    return config


class Explained:
    """The jobs one finding counts, the first SHOWN by job id kept whole, all of them counted."""

    def __init__(self, finding: dict[str, Any], counting: Counting) -> None:
        self.finding, self.counting = finding, counting
        self.match = matches(finding)
        self.jobs: list[dict[str, Any]] = []
        self.total = 0

    def add(self, jobs: Jobs) -> None:
        cols, first, last = jobs.cols, *self.counting.window
        for i, (verdict, record, spread) in enumerate(zip(jobs.verdicts, jobs.records, jobs.spreads, strict=True)):
            end = cols.end[i]
            if not (verdict.ended and (verdict.bad or verdict.crashed)):
                continue
            if end[:1].isdigit() and not first <= end <= last:
                continue
            width, racks = spread.reach.value
            job = {
                "label": verdict.shown,
                "config": record.config,
                "recorded": verdict.shape.value[2],
                "nodes": cols.n_nodes[i] or width,
                "racks": racks,
                "day": end[:10] if end[:1].isdigit() else "",
                "root": record.node,
                "partition": cols.partition[i],
                "user": cols.user[i],
                "account": cols.account[i],
            }
            if self.match(job):
                self.total += 1
                self.jobs.append(
                    {
                        "job_id": cols.job_id[i],
                        "label": verdict.shown,
                        "nodes": cols.node_list[i],
                        "root": record.node,
                        "user": cols.user[i],
                        "end": end,
                        "record": (cols.comment if self.counting.trust_comment else cols.admin_comment)[i],
                    }
                )
        if len(self.jobs) > SHOWN:  # the lowest job ids: the same whatever order the rows came in
            self.jobs = sorted(self.jobs, key=_by_id)[:SHOWN]

    def count(self, parts: Iterable[Columns]) -> None:
        reader, filters = self.counting.reader(), self.counting.filters
        for part in parts:
            cols, _ = in_bounds(part)
            self.add(filters.apply(reader.jobs(cols)))

    def read(self, stream: IO[bytes], sep: str) -> None:
        for unit in units(stream, sep.encode()):
            self.count(read_unit(unit, sep)[0])

    def rows(self, rows: Iterable[AccountingRow]) -> None:
        for cols, _ in batches(iter(rows)):
            self.count([cols])

    def document(self) -> dict[str, Any]:
        return {"finding": self.finding, "jobs_total": self.total, "jobs": sorted(self.jobs, key=_by_id)}


def _by_id(job: dict[str, Any]) -> tuple[int, str]:
    return len(job["job_id"]), job["job_id"]


def to_text(explained: dict[str, Any]) -> str:
    f, jobs = explained["finding"], explained["jobs"]
    out = [
        f"Finding: {f['text']}",
        "",
        f"{explained['jobs_total']:,} failed jobs behind it"
        + (f" (the first {len(jobs)} by job id):" if len(jobs) < explained["jobs_total"] else ":"),
    ]
    for job in jobs:
        out.append(
            f"  {job['job_id']}  {job['label']}  ended {job['end']}  nodes {job['nodes']}"
            + (f"  root {job['root']}" if job["root"] else "")
            + f"  user {job['user']}"
        )
        if job["record"]:
            out.append(f"      {job['record'][:300]!r}")
    return "\n".join(out) + "\n"


class Source(Protocol):
    """Where the rows are read again: sacct (slurm.cli_backend.SlurmCli) or a saved file."""

    def accounting_output(
        self, since: datetime, until: datetime, cluster: str
    ) -> AbstractContextManager[tuple[IO[bytes], str]]: ...


def explain_finding(
    doc: dict[str, Any],
    number: int,
    path: str | None,
    counting: Callable[[str], Counting],
    window: tuple[datetime, datetime],
    slurm: Source,
) -> dict[str, Any]:
    """Finding `number` (1: the first) and the jobs behind it, read again from `path` or sacct."""
    from slurm_hooks.report.saved import input_separator

    found = doc["findings"]
    if not 1 <= number <= len(found):
        raise ValueError(f"--explain {number}: the report made {len(found)} finding(s)")
    finding = found[number - 1]
    cluster = finding["subject"].get("cluster", "")
    explained = Explained(finding, counting(cluster))
    if path == "-":
        raise ValueError("--explain reads the rows a second time: give --input FILE, not stdin")
    if path:
        with open(path, "rb") as stream:
            explained.read(stream, input_separator(stream)[0])
    else:
        with slurm.accounting_output(*window, cluster) as (out, sep):
            explained.read(out, sep)
    return explained.document()
