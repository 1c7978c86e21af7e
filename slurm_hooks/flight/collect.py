"""The Epilog's part (`flight_recorder: on`): this node's dumps -> bundle/flight/<node>.json, then retention.

The reader (scan.py) runs as the job's user in its own process group, killed at
`flight_recorder.read_s`; it writes one JSON line per dump into a file, so the lines it finished
before a kill are kept. The bundle keeps only the digest; the raw dumps stay in the dump
directory until `flight_recorder.retention_days` (for `slurm-hooks collect --flight-dumps`).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Config
from slurm_hooks.core.proc import run_bounded
from slurm_hooks.flight.setup import dump_root, job_dump_dir

_CHILD = """import sys
sys.path.insert(0, sys.argv[1])
from slurm_hooks.flight.scan import main
sys.exit(main(sys.argv[2:]))
"""
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent.parent)
MAX_LINE = 1 << 18  # one dump's digest line; longer is not ours


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
        except ValueError:
            continue  # the last line of a reader killed mid-write
        if isinstance(record, dict):
            out.append(record)
    return out


def collect_flight(
    spool: Spool, job_id: str, node: str, uid: int | None, gid: int | None, config: Config, now: float
) -> str:
    """This node's digest into the bundle (nothing when the job has no dump directory); then retention."""
    dump_dir = job_dump_dir(config, job_id)
    outcome = "no dump directory"
    if os.path.isdir(dump_dir):
        found = read_dumps(dump_dir, uid, gid, config)
        doc = {"node": node, "dump_dir": dump_dir, **found}
        spool.write(job_id, f"bundle/flight/{node}.json", json.dumps(doc, indent=1) + "\n")
        outcome = f"{len(found['dumps'])} dump(s), {len(found['skipped'])} skipped"
    prune(dump_root(config), config.flight_recorder.retention_days, now, keep=job_id)
    return outcome


def prune(root: str, retention_days: int, now: float, keep: str = "") -> list[str]:
    """Remove job dump directories not modified for `retention_days`; links and strays at the top go too."""
    import shutil

    removed: list[str] = []
    try:
        parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return removed
    try:
        with os.scandir(parent) as entries:
            names = [(e.name, e.stat(follow_symlinks=False)) for e in entries if e.name != keep]
        for name, st in names:
            if now - st.st_mtime < retention_days * 86400:
                continue
            try:
                if stat.S_ISDIR(st.st_mode):
                    shutil.rmtree(os.path.join(root, name))  # fd-based below the top: links inside are not followed
                else:
                    os.unlink(name, dir_fd=parent)
                removed.append(name)
            except OSError:
                continue  # the next Epilog tries again
    finally:
        os.close(parent)
    return removed
