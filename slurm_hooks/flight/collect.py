"""The Epilog's part (`flight_recorder: on`): this node's dumps -> bundle/flight/<node>.json, then retention.

The reader (scan.py) runs as the job's user in its own process group, killed at
`flight_recorder.read_s`; it writes one JSON line per dump into a file, so the lines it finished
before a kill are kept. The bundle keeps only the digest; the raw dumps stay in the dump
directory until `flight_recorder.retention_days` (for `slurm-hooks collect --flight-dumps`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from slurm_hooks.bundle.retention import PruneReport, Running, doomed_order, remove_doomed, running_of, stamp
from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Config
from slurm_hooks.core.proc import run_bounded
from slurm_hooks.core.prune_tree import PRUNING, jobs_with_state
from slurm_hooks.flight.setup import dump_root, job_dump_dir

_CHILD = """import sys
sys.path.insert(0, sys.argv[1])
from slurm_hooks.flight.scan import main
sys.exit(main(sys.argv[2:]))
"""
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
MAX_LINE = 1 << 18  # one dump's digest line; longer is not ours
DUMP_S = 2.0  # CPU and wall seconds one dump's decoding may take (no config key yet); at most half of read_s
PRUNE_SHARE = 0.1  # of budgets.epilog_s: what retention may take per Epilog (3 s of the shipped 30 s)


def read_dumps(
    dump_dir: str,
    uid: int | None,
    gid: int | None,
    config: Config,
    python: str = sys.executable,
    package_root: str = _PACKAGE_ROOT,
) -> dict[str, Any]:
    """{dumps: [...], skipped: [...]} for the dumps in `dump_dir` (and the job's own prefix), read as uid:gid.
    `python` runs the reader, and `package_root` holds the slurm_hooks it imports, as the job user:
    that user must be able to execute the one and read the other."""
    fr = config.flight_recorder
    limit = fr.max_dump_mb << 20
    argv = [python, "-S", "-c", _CHILD, package_root, dump_dir, str(fr.max_dumps), str(limit)]
    argv.append(str((1 << 30) + 8 * limit))  # the child's address space: decoding a dump needs a few times its size
    argv.append(f"{max(0.5, min(DUMP_S, fr.read_s / 2)):g}")  # each dump's own child: one bad dump never costs all
    as_user: dict[str, Any] = {}
    if os.geteuid() == 0:
        if uid is None or gid is None:
            return {"dumps": [], "skipped": ["no job uid/gid: dumps are read with the job user's rights only"]}
        as_user = {"user": uid, "group": gid, "extra_groups": []}
    note = ""
    with tempfile.TemporaryFile() as out:
        try:
            proc = run_bounded(argv, fr.read_s, stdout=out, cwd="/", **as_user)
            if proc.returncode != 0:
                note = f"dump reader exited {proc.returncode}: {proc.stderr.decode(errors='replace').strip()[-200:]}"
        except subprocess.TimeoutExpired:
            note = f"dump reader stopped at flight_recorder.read_s={fr.read_s:g}s; the dumps after it are not read"
        except OSError as exc:
            note = f"dump reader not started ({exc.strerror or exc})"
        out.seek(0)
        records = _records(out.read((fr.max_dumps + 16) * MAX_LINE))
    dumps = [r for r in records if "digest" in r]
    skipped = [f"{r.get('file')}: {r.get('skipped')}" for r in records if "digest" not in r]
    return {"dumps": dumps, "skipped": skipped + ([note] if note else [])}


def _records(raw: bytes) -> list[dict[str, Any]]:
    out = []
    for line in raw.splitlines():
        if len(line) > MAX_LINE:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the last line of a reader killed mid-write, or one the job's user wrote for it
        # (the reader runs as that user, who may ptrace it): arrays nested deeper than the stack
        if isinstance(record, dict):
            out.append(record)
    return out


def collect_flight(
    spool: Spool, job_id: str, node: str, uid: int | None, gid: int | None, config: Config, now: float
) -> str:
    """This node's digest into the bundle (nothing when the job has no dump directory). Retention
    (prune_dumps) is the Epilog's last step, once the record is made or queued."""
    dump_dir = job_dump_dir(config, job_id)
    outcome = "no dump directory"
    if os.path.isdir(dump_dir):
        found = read_dumps(dump_dir, uid, gid, config)
        doc = {"node": node, "dump_dir": dump_dir, **found}
        spool.write(job_id, f"bundle/flight/{node}.json", json.dumps(doc, indent=1) + "\n")
        outcome = f"{len(found['dumps'])} dump(s), {len(found['skipped'])} skipped"
    return outcome


def prune_dumps(
    config: Config,
    job_id: str,
    now: float,
    deadline: float | None = None,
    ask: Callable[[], frozenset[str] | None] | None = None,
) -> str:
    """Retention of this node's dump directories, within `deadline` (time.monotonic(); default:
    PRUNE_SHARE of the Epilog's budget from now), as words for the log line ("" when nothing
    happened). `ask`: which jobs Slurm says have not ended (bundle/retention.Running; None from it:
    Slurm cannot say). Never raises: housekeeping must not cost the job its record."""
    if deadline is None:
        deadline = time.monotonic() + PRUNE_SHARE * config.budgets.epilog_s
    try:
        live = Running(jobs_with_state(config.state_dir) | {job_id}, ask)
        report = prune(dump_root(config), config.flight_recorder.retention_days, now, live, deadline)
    except Exception as exc:  # a bug or a hostile tree costs the retention pass, nothing else
        return f"; retention not run ({type(exc).__name__}: {str(exc)[:200]})"
    return _said(report)


def _said(report: PruneReport) -> str:
    failed = [f"{name}: {why}" for name, why in report.failed.items()]
    said = [f"{len(report.removed)} old dump dir(s) removed"] if report.removed else []
    return "".join(f"; {line}" for line in said + failed[:4] + report.left)


def prune(root: str, retention_days: int, now: float, live: Collection[str], deadline: float) -> PruneReport:
    """Remove job dump directories not changed for `retention_days` (bundle/retention.py's stamp:
    not a time the user sets), oldest first, never one of a job `live` keeps (bundle/retention.py's
    Running: still running here, or not ended by Slurm's word); links and strays at the top go too
    (the entry only). Each directory is deleted as its owner, without recursion
    (core/prune_tree.py), within its share of `deadline` (time.monotonic()); what is left is said
    in `left`, for the next Epilog."""
    report, running = PruneReport(), running_of(live)
    try:
        parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the operator's path: trusted
    except OSError:
        return report
    try:
        doomed: list[tuple[float, str]] = []  # marked ones (a run cut short) whatever their age
        with os.scandir(parent) as entries:  # names here are job ids: root makes them (flight/setup.py)
            for entry in entries:
                if time.monotonic() > deadline:
                    report.left.append("dump directories not listed to their end within the deadline")
                    break
                with contextlib.suppress(OSError):
                    when = stamp(entry.stat(follow_symlinks=False))
                    marked = entry.name.startswith(PRUNING)
                    old = now - when >= retention_days * 86400  # first: Slurm is asked only for an old one
                    if marked or (old and not running.keeps(entry.name, when, now)):
                        doomed.append((when, entry.name))
        remove_doomed(parent, doomed_order(doomed), deadline, report)
    finally:
        os.close(parent)
    return report
