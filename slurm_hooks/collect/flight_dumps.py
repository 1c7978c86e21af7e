"""`slurm-hooks collect --flight-dumps`: the job's raw flight-recorder dumps into the support bundle.

The dump directory belongs to the job's user, so each dump is copied with that user's rights
(job_logs.copy_as_user: O_NOFOLLOW, a regular file, bounded), never read as root; at most
`flight_recorder.max_dumps` files of `flight_recorder.max_dump_mb` each.
"""

from __future__ import annotations

import os
import stat
import tarfile
import tempfile

from slurm_hooks.collect.job_logs import copy_as_user
from slurm_hooks.config import Config
from slurm_hooks.flight.scan import OUR_PREFIX
from slurm_hooks.flight.setup import job_dump_dir


def add_flight_dumps(tar: tarfile.TarFile, config: Config, job_id: str) -> list[str]:
    """Each dump as <job_id>/flight-dumps/<name>; returns what was left out, and why."""
    where = job_dump_dir(config, job_id)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return [f"{where}: no dump directory ({exc.strerror})"]
    try:
        owner = os.fstat(fd)
        with os.scandir(fd) as entries:
            names = sorted(e.name for e in entries if e.name.startswith(OUR_PREFIX))
    finally:
        os.close(fd)
    fr, left_out = config.flight_recorder, []
    if not stat.S_ISDIR(owner.st_mode):
        return [f"{where}: not a directory"]
    for name in names[fr.max_dumps :]:
        left_out.append(f"{name}: more than flight_recorder.max_dumps={fr.max_dumps}")
    for name in names[: fr.max_dumps]:
        with tempfile.TemporaryFile() as out:
            copied = copy_as_user(
                os.path.join(where, name), out, owner.st_uid, owner.st_gid, fr.max_dump_mb << 20, fr.read_s
            )
            if not copied.ok or copied.skipped_bytes:
                left_out.append(f"{name}: {copied.error or 'larger than flight_recorder.max_dump_mb'}")
                continue
            info = tarfile.TarInfo(f"{job_id}/flight-dumps/{name}")
            info.size, info.mode = out.tell(), 0o600
            out.seek(0)
            tar.addfile(info, out)
    return left_out
