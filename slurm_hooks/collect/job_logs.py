"""Copy a job's stdout/stderr into the bundle with the job user's rights, never following a link.

The Epilog runs as root but these files are the user's: a user can point `--output` at
/etc/shadow through a symlink. So a child process drops to the job's uid/gid (no supplementary
groups), opens with O_NOFOLLOW|O_NONBLOCK, insists on a regular file, and copies at most
`limit` bytes from the file's tail: the end of a log is where a job dies.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.core.proc import run_bounded
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.slurm.job import JobContext
from slurm_hooks.slurm.patterns import expand

_READER = r"""
import os, stat, sys
path, limit = sys.argv[1], int(sys.argv[2])
try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
except OSError as e:
    sys.stderr.write("cannot open: %s\n" % e.strerror); sys.exit(3)
st = os.fstat(fd)
if not stat.S_ISREG(st.st_mode):
    sys.stderr.write("not a regular file\n"); sys.exit(3)
skip = max(0, st.st_size - limit)
os.lseek(fd, skip, 0)
sys.stderr.write("skipped %d\n" % skip)
out, left = sys.stdout.buffer, limit
while left > 0:
    chunk = os.read(fd, min(1 << 20, left))
    if not chunk:
        break
    out.write(chunk); left -= len(chunk)
"""


@dataclass(frozen=True)
class Copied:
    source: str
    ok: bool
    skipped_bytes: int = 0
    error: str = ""


def copy_as_user(
    source: str, out: BinaryIO, uid: int, gid: int, limit: int, timeout_s: float, python: str = sys.executable
) -> Copied:
    """Copy into `out` (an open file); on failure `out` may hold a partial copy the caller drops.
    `python` runs the reader as the job user, so that user must be able to execute it."""
    as_user: dict[str, Any] = {"user": uid, "group": gid, "extra_groups": []} if os.geteuid() == 0 else {}
    try:
        proc = run_bounded([python, "-S", "-c", _READER, source, str(limit)], timeout_s, stdout=out, **as_user)
    except subprocess.TimeoutExpired:
        return Copied(source, False, error=f"no copy within {timeout_s:g}s")
    except OSError as exc:
        return Copied(source, False, error=exc.strerror or str(exc))
    message = proc.stderr.decode(errors="replace").strip()
    if proc.returncode != 0:
        return Copied(source, False, error=message.splitlines()[-1] if message else f"exit {proc.returncode}")
    skipped = int(m.group(1)) if (m := re.search(r"skipped (\d+)", message)) else 0
    return Copied(source, True, skipped_bytes=skipped)


def copy_job_logs(
    spool: Spool, job_id: str, paths: list[str], uid: int, gid: int, limit: int, timeout_s: float
) -> list[Copied]:
    """Each path into the bundle's logs/; a copy that fails leaves no file behind."""
    copied = []
    for i, path in enumerate(paths):
        name = f"bundle/logs/{i}-{Path(path).name}"[:120]
        with spool.create(job_id, name) as out:
            result = copy_as_user(path, out, uid, gid, limit, timeout_s)
        if not result.ok:
            spool.remove(job_id, name)
        copied.append(result)
    return copied


def log_paths(record: JobRecord, ctx: JobContext, node: str) -> list[str]:
    """The job's stdout/stderr: slurmctld's expanded paths, else the Epilog's pattern expanded here."""
    paths = [p for p in (record.std_out, record.std_err) if p and p not in ("/dev/null", "(null)")]
    if not paths:
        for pattern in (ctx.stdout_pattern, ctx.stderr_pattern):
            if pattern and (path := expand_pattern(pattern, ctx.job_id, ctx.user, node)):
                paths.append(path)
        work = ctx.work_dir or record.work_dir
        if not paths and work and ctx.batch:  # a batch job without --output
            paths.append(f"{work}/slurm-{ctx.job_id}.out")
    return list(dict.fromkeys(paths))


def expand_pattern(pattern: str, job_id: str, user: str, node: str) -> str | None:
    """Slurm's filename pattern (`--output=out/%x-%j.out`) as the Epilog can expand it, bounded.

    The node Epilog knows no job name (%x) and no array task (%a), so a pattern using them
    cannot be expanded here (None); slurmctld's view (the job record's StdOut) is the first choice.
    """
    return expand(pattern, {"j": job_id, "J": job_id, "u": user, "N": node, "n": "0", "t": "0", "A": job_id, "%": "%"})
