"""Evidence bundles v1 (DESIGN.md): read a directory or a .tar.gz of one, never trusting its contents.

Nothing in a bundle is followed: every file is opened below the bundle's top directory with no
symlink allowed on the way (`nofollow`), at open time, each time it is read. How much is read is
bounded by `limits` (config `limits:`); what a limit or a bad part leaves out is in `skipped`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any, BinaryIO

from slurm_hooks.bundle.layout import PARTS
from slurm_hooks.bundle.nodefacts import NodeFacts
from slurm_hooks.config import Limits
from slurm_hooks.core.nofollow import open_at, opened_dir
from slurm_hooks.core.times import parse_iso, zone_named

MAX_JSON_BYTES = 1 << 20  # job.json and node facts are small; a larger one is not ours
DEFAULT_LIMITS = Limits()
_NODE_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,254}$")
_NO_KERNEL = "its segfault, Xid and OOM lines are missing (no journal: slurm-hooks kmsg-follow, kernel_log_file)"


class BundleError(Exception):
    """The bundle cannot be read at all (missing path, not a directory or tarball)."""


MAX_STEPS = 1024  # steps read from job.json; a job with more keeps its first
MAX_STEP_TASKS = 1 << 24


@dataclass(frozen=True)
class StepInfo:
    """One Slurm step (job.json `steps`): where its tasks ran (log-signatures §8.33, §8.34)."""

    id: str
    nodes: tuple[str, ...] = ()
    ntasks: int = 0  # 0: not known
    start: datetime | None = None
    end: datetime | None = None
    state: str = ""
    exit_code: str = ""


@dataclass(frozen=True)
class JobInfo:
    job_id: str
    state: str = ""  # normalised: "CANCELLED by 41007" -> "CANCELLED"
    exit_code: str = ""  # "exit:signal"
    derived_exit_code: str = ""
    start: datetime | None = None
    end: datetime | None = None
    nodes: tuple[str, ...] = ()
    batch_host: str | None = None
    slurm_zone: tzinfo = timezone.utc
    log_zone: tzinfo = timezone.utc
    ntasks: int = 0  # Slurm's task count (0: not known); bounds the ranks (diagnose/bounds.py)
    shared: bool = False  # Slurm let other jobs share its nodes (not exclusive): a kernel pid may be another job's
    # A job id holds runs (log-signatures §8.29): how often Slurm restarted it (None: not known) and
    # its run's id (SLURM_JOB_SLUID, 25.11); `start` is the last run's start.
    restarts: int | None = None
    sluid: str = ""
    steps: tuple[StepInfo, ...] = ()  # Slurm's steps (§8.33), at most MAX_STEPS, in job.json's order

    @property
    def exit_status(self) -> tuple[int, int]:
        return _exit_pair(self.exit_code)

    @property
    def derived_status(self) -> tuple[int, int]:
        return _exit_pair(self.derived_exit_code)


@dataclass(frozen=True)
class BundleFile:
    """One file of a bundle, opened afresh (and checked afresh) on each use."""

    root: Path
    rel: str  # bundle-relative: logs/job.out, kernel/n1.log
    size: int

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    def open(self) -> BinaryIO:
        return open_below(self.root, self.rel)


def open_below(root: Path, rel: str) -> BinaryIO:
    *parts, name = rel.split("/")
    with opened_dir(root, parts) as dir_fd:
        return open_at(dir_fd, name)


def list_below(root: Path, rel: str) -> list[tuple[str, int | None]]:
    """(name, size) of each entry of directory root/rel, sorted; size None for anything not a regular file."""
    with opened_dir(root, [rel]) as dir_fd, os.scandir(dir_fd) as entries:
        return sorted(
            (e.name, st.st_size if stat.S_ISREG((st := e.stat(follow_symlinks=False)).st_mode) else None)
            for e in entries
        )


@dataclass
class Bundle:
    root: Path
    job: JobInfo
    facts: dict[str, NodeFacts]
    logs: list[BundleFile]
    kernels: dict[str, BundleFile]
    skipped: list[str] = field(default_factory=list)
    limits: Limits = DEFAULT_LIMITS
    flight: list[BundleFile] = field(default_factory=list)  # flight/<node>.json: flight-recorder digests


def _exit_pair(value: str) -> tuple[int, int]:
    try:
        code, _, sig = value.partition(":")
        return int(code or 0), int(sig or 0)
    except ValueError:
        return 0, 0


def _read_json(root: Path, rel: str, skipped: list[str]) -> dict[str, Any] | None:
    try:
        with open_below(root, rel) as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        skipped.append(f"{rel}: missing")
        return None
    except OSError as exc:
        skipped.append(f"{rel}: not read ({exc.strerror or exc})")
        return None
    if len(raw) > MAX_JSON_BYTES:
        skipped.append(f"{rel}: larger than {MAX_JSON_BYTES} bytes; ignored")
        return None
    try:
        doc = json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        skipped.append(f"{rel}: not valid JSON ({exc.args[0].split(':')[0]}); ignored")
        return None
    except RecursionError:  # `[[[[…` 200,000 deep fits in MAX_JSON_BYTES
        skipped.append(f"{rel}: nested too deep to be ours; ignored")
        return None
    if not isinstance(doc, dict):
        skipped.append(f"{rel}: not a JSON object; ignored")
        return None
    return doc


YEARS = range(1970, 2200)  # a job time outside these is a bad value, not a date to compute with


def _as_time(value: object, zone: tzinfo, key: str, skipped: list[str]) -> datetime | None:
    """job.json times carry an offset; a naive one is in Slurm's zone."""
    parsed = parse_iso(value, default_zone=zone)
    if parsed is None:
        return None
    try:
        utc = parsed.astimezone(timezone.utc)
    except OverflowError:  # year 1 at +05:00, 9999-12-31 at -05:00
        utc = None
    if utc is None or utc.year not in YEARS:
        skipped.append(f"job.json: {key}={value!r} is outside {YEARS.start}-{YEARS.stop}; ignored")
        return None
    return utc


def _job_info(root: Path, skipped: list[str]) -> JobInfo:
    doc = _read_json(root, "job.json", skipped) or {}
    slurm_zone = zone_named(doc.get("timezone"), "job.json: timezone", skipped)
    nodes = doc.get("nodes")
    return JobInfo(
        job_id=str(doc.get("job_id") or "unknown"),
        state=str(doc.get("state") or "").split(" ")[0].upper(),
        exit_code=str(doc.get("exit_code") or ""),
        derived_exit_code=str(doc.get("derived_exit_code") or ""),
        start=_as_time(doc.get("start_time"), slurm_zone, "start_time", skipped),
        end=_as_time(doc.get("end_time"), slurm_zone, "end_time", skipped),
        nodes=tuple(str(n) for n in nodes) if isinstance(nodes, list) else (),
        batch_host=str(doc["batch_host"]) if doc.get("batch_host") else None,
        slurm_zone=slurm_zone,
        log_zone=zone_named(doc.get("log_timezone"), "job.json: log_timezone", skipped),
        ntasks=ntasks if isinstance(ntasks := doc.get("ntasks"), int) and 0 < ntasks < 1 << 31 else 0,
        shared=doc.get("shared") is True,
        restarts=restarts if isinstance(restarts := doc.get("restarts"), int) and 0 <= restarts < 1 << 20 else None,
        sluid=str(doc.get("sluid") or "")[:64],
        steps=_steps(doc.get("steps"), slurm_zone, skipped),
    )


def _steps(raw: object, zone: tzinfo, skipped: list[str]) -> tuple[StepInfo, ...]:
    """job.json `steps`: entries that are not objects, and those past MAX_STEPS, are left out (and said)."""
    if not isinstance(raw, list):
        return ()
    if len(raw) > MAX_STEPS:
        skipped.append(f"job.json: {len(raw)} steps; the first {MAX_STEPS} read")
    steps = []
    for i, item in enumerate(raw[:MAX_STEPS]):
        if not isinstance(item, dict):
            continue
        nodes, ntasks = item.get("nodes"), item.get("ntasks")
        steps.append(
            StepInfo(
                id=str(item.get("id") if item.get("id") is not None else i)[:32],
                nodes=tuple(str(n)[:255] for n in nodes[:MAX_STEP_TASKS]) if isinstance(nodes, list) else (),
                ntasks=ntasks if isinstance(ntasks, int) and 0 < ntasks < MAX_STEP_TASKS else 0,
                start=_as_time(item.get("start"), zone, f"steps[{i}].start", skipped),
                end=_as_time(item.get("end"), zone, f"steps[{i}].end", skipped),
                state=str(item.get("state") or "").split(" ")[0].upper()[:32],
                exit_code=str(item.get("exit_code") or "")[:16],
            )
        )
    return tuple(steps)


def part_cap(part: str, limits: Limits, job_nodes: int) -> int:
    """Files one part may hold: job logs `limits.bundle_files`; a per-node part (facts, kernel) as
    many as the job has nodes, and never fewer than that limit. Each part counts on its own, so a
    thousand nodes' kernel logs never crowd out the job's own log."""
    return limits.bundle_files if part == "logs" else max(limits.bundle_files, job_nodes)


def _listed(root: Path, limits: Limits, job_nodes: int, skipped: list[str]) -> dict[str, list[BundleFile]]:
    """The regular files of each part, within its file-count cap and the bundle's size cap."""
    out: dict[str, list[BundleFile]] = {part: [] for part in PARTS}
    bytes_left = limits.bundle_mb << 20
    for part in PARTS:
        try:
            entries = list_below(root, part)
        except FileNotFoundError:
            continue
        except OSError as exc:
            skipped.append(f"{part}/: not read ({exc.strerror or exc}); a bundle's parts are never followed")
            continue
        files_left = cap = part_cap(part, limits, job_nodes)
        for name, size in entries:
            rel = f"{part}/{name}"
            if size is None:
                skipped.append(f"{rel}: not a regular file; not read")
            elif files_left <= 0:
                skipped.append(f"{rel}: not read: more than {cap} files in {part}/ (limits.bundle_files)")
            elif size > bytes_left:
                skipped.append(f"{rel}: not read: {size} bytes would pass limits.bundle_mb={limits.bundle_mb}")
            else:
                files_left, bytes_left = files_left - 1, bytes_left - size
                out[part].append(BundleFile(root, rel, size))
    return out


def load_bundle(root: Path, limits: Limits = DEFAULT_LIMITS) -> Bundle:
    """A bundle directory. Every part is optional; what cannot be used is listed in `skipped`."""
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle directory or .tar.gz")
    skipped: list[str] = []
    job = _job_info(root, skipped)
    parts = _listed(root, limits, len(job.nodes), skipped)
    facts: dict[str, NodeFacts] = {}
    no_kernel: dict[str, str] = {}
    for file in parts["nodes"]:
        if file.name.endswith(".json") and (doc := _read_json(root, file.rel, skipped)) is not None:
            node = str(doc.get("node") or file.name.removesuffix(".json"))
            facts[node] = NodeFacts.from_json(doc, node, skipped)
            if isinstance(source := doc.get("kernel_source"), str) and source.startswith("none"):
                no_kernel[node] = f"no kernel lines from {node} {source.removeprefix('none ')}"
    kernels = {}
    for file in parts["kernel"]:
        node = file.name.removesuffix(".log")
        if _NODE_NAME.fullmatch(node):  # not match's `$`: it passes a trailing newline
            kernels[node] = file
        else:
            skipped.append(f"{file.rel}: file name is not a node name; not read")
    skipped += [f"kernel/{n}.log: {why[:200]}; {_NO_KERNEL}" for n, why in no_kernel.items() if n not in kernels]
    if not parts["logs"]:
        skipped.append("logs/: no job log files")
    logs, flight = parts["logs"], parts["flight"]
    return Bundle(root, job, facts, logs, kernels, skipped=skipped, limits=limits, flight=flight)


@contextlib.contextmanager
def open_bundle(path: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Bundle]:
    """A bundle from a directory, or from a .tar.gz extracted (bounded) into a private directory
    that is removed on every way out; one a killed run left behind is removed by the next run."""
    from slurm_hooks.bundle.tarball import TarballError, extracted

    if path.is_dir():
        yield load_bundle(path, limits)
        return
    if not path.is_file():
        raise BundleError(f"{path}: no such bundle")
    try:
        with extracted(path, limits) as (root, notes):
            bundle = load_bundle(root, limits)
            bundle.skipped[:0] = notes
            yield bundle
    except TarballError as exc:
        raise BundleError(str(exc)) from None
