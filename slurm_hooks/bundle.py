"""Evidence bundles v1 (DESIGN.md): read a directory or a .tar.gz of one, never trusting its contents."""

from __future__ import annotations

import contextlib
import json
import re
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone, tzinfo
from pathlib import Path
from typing import Any

from slurm_hooks.times import parse_iso, zone_named

MAX_JSON_BYTES = 1 << 20  # job.json and node facts are small; a larger one is not ours
MAX_TAR_MEMBERS = 100_000
_NODE_NAME = re.compile(r"^[A-Za-z0-9][\w.-]{0,254}$")


class BundleError(Exception):
    """The bundle cannot be read at all (missing path, not a directory or tarball)."""


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

    @property
    def exit_status(self) -> tuple[int, int]:
        return _exit_pair(self.exit_code)

    @property
    def derived_status(self) -> tuple[int, int]:
        return _exit_pair(self.derived_exit_code)


@dataclass
class Bundle:
    root: Path
    job: JobInfo
    facts: dict[str, dict[str, Any]]
    logs: list[Path]
    kernels: dict[str, Path]
    skipped: list[str] = field(default_factory=list)


def _exit_pair(value: str) -> tuple[int, int]:
    try:
        code, _, sig = value.partition(":")
        return int(code or 0), int(sig or 0)
    except ValueError:
        return 0, 0


def _read_json(path: Path, skipped: list[str]) -> dict[str, Any] | None:
    rel = f"{path.parent.name}/{path.name}" if path.parent.name in ("nodes",) else path.name
    if path.is_symlink() or not path.is_file():
        skipped.append(f"{rel}: missing or not a regular file")
        return None
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)
    except OSError as exc:
        skipped.append(f"{rel}: unreadable ({exc.strerror})")
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
    doc = _read_json(root / "job.json", skipped) or {}
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
    )


def _regular_files(folder: Path, skipped: list[str]) -> list[Path]:
    if not folder.is_dir():
        return []
    files = []
    for path in sorted(folder.iterdir()):
        if path.is_symlink() or not path.is_file():
            skipped.append(f"{folder.name}/{path.name}: not a regular file; not read")
            continue
        files.append(path)
    return files


def load_bundle(root: Path) -> Bundle:
    """A bundle directory. Every part is optional; what cannot be used is listed in `skipped`."""
    if not root.is_dir():
        raise BundleError(f"{root}: not a bundle directory or .tar.gz")
    skipped: list[str] = []
    job = _job_info(root, skipped)
    facts: dict[str, dict[str, Any]] = {}
    for path in _regular_files(root / "nodes", skipped):
        if path.suffix == ".json" and (doc := _read_json(path, skipped)) is not None:
            facts[str(doc.get("node") or path.stem)] = doc
    kernels = {}
    for path in _regular_files(root / "kernel", skipped):
        node = path.name.removesuffix(".log")
        if _NODE_NAME.match(node):
            kernels[node] = path
        else:
            skipped.append(f"kernel/{path.name}: file name is not a node name; not read")
    logs = _regular_files(root / "logs", skipped)
    if not logs:
        skipped.append("logs/: no job log files")
    return Bundle(root=root, job=job, facts=facts, logs=logs, kernels=kernels, skipped=skipped)


def _safe_members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    for count, member in enumerate(tar):
        if count >= MAX_TAR_MEMBERS:
            raise BundleError(f"{tar.name!s}: more than {MAX_TAR_MEMBERS} members")
        name = Path(member.name)
        if (member.isfile() or member.isdir()) and not name.is_absolute() and ".." not in name.parts:
            yield member


@contextlib.contextmanager
def open_bundle(path: Path) -> Iterator[Bundle]:
    """A bundle from a directory, or from a .tar.gz extracted into a private temporary directory.

    The tarball may hold the bundle at its top or in one folder (`5512093/job.json`).
    Links, devices and paths that escape the directory are never extracted.
    """
    if path.is_dir():
        yield load_bundle(path)
        return
    if not path.is_file():
        raise BundleError(f"{path}: no such bundle")
    with tempfile.TemporaryDirectory(prefix="slurm-hooks-bundle-") as tmp:
        try:
            with tarfile.open(path, "r:*") as tar:
                for member in _safe_members(tar):
                    tar.extract(member, tmp, set_attrs=False, **_data_filter())
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise BundleError(f"{path}: not a readable bundle tarball ({exc})") from None
        root = Path(tmp)
        entries = [p for p in root.iterdir()]
        if len(entries) == 1 and entries[0].is_dir() and not (root / "job.json").exists():
            root = entries[0]
        yield load_bundle(root)


def _data_filter() -> dict[str, Any]:
    # Python >= 3.10.12 / 3.11.4 has extraction filters; 'data' refuses links and odd modes too.
    return {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
