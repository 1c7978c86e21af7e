"""The Prolog's part (`flight_recorder: on`): the job's dump directory and the TaskProlog's exports.

<dir>/<jobid>/ (dir: `flight_recorder.dir`, default <state_dir>/flight) is the job user's, 0700:
PyTorch writes `fr_rank_<rank>` there. It is made inside the root-owned parent by descriptor and
never through a link; whatever stood at that name before (a requeued job's old dumps, anything
planted) is removed first.

<state_dir>/jobs/<jobid>/flight is the /bin/sh fragment the TaskProlog runs (in a subshell): it
prints an `export` only for a variable the job has not set itself, because an export printed by a
TaskProlog overrides the job's own value (slurm-22.05-facts §4). A job that set its own
TORCH_FR_DUMP_TEMP_FILE gets that value noted in <dump dir>/job_prefix, where the Epilog's reader
looks for dumps under it too.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import time

from slurm_hooks.config import Config
from slurm_hooks.core.layout import job_path
from slurm_hooks.core.prune_tree import prune_entry
from slurm_hooks.core.safeio import atomic_write

TASK_FRAGMENT = "flight"  # in the job's state dir, next to `env`
STALE_S = 2.0  # of the Prolog's budget, for emptying a requeued job's old dumps (the rest: retention)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def dump_root(config: Config) -> str:
    return config.flight_recorder.dir or os.path.join(config.state_dir, "flight")


def job_dump_dir(config: Config, job_id: str) -> str:
    if not job_id.isdigit():
        raise ValueError(f"not a job id: {job_id!r}")
    return os.path.join(dump_root(config), job_id)


def prepare(config: Config, job_id: str, uid: int, gid: int) -> str:
    """The job's dump directory, owned by uid:gid 0700, and the TaskProlog fragment; returns the directory."""
    root = dump_root(config)
    os.makedirs(root, mode=0o755, exist_ok=True)
    parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the operator's path: trusted
    try:
        _remove_stale(parent, job_id)
        os.mkdir(job_id, 0o700, dir_fd=parent)
        fd = os.open(job_id, _DIR, dir_fd=parent)
        try:
            if os.geteuid() == 0:
                os.fchown(fd, uid, gid)
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)
    finally:
        os.close(parent)
    where = job_dump_dir(config, job_id)
    fragment = os.path.join(job_path(config.state_dir, job_id), TASK_FRAGMENT)
    atomic_write(fragment, task_fragment(where, config.flight_recorder.buffer_size), mode=0o640)
    if os.geteuid() == 0:
        os.chown(fragment, 0, gid)  # as `env`: the job's group reads it, no one else
    return where


def _remove_stale(parent: int, name: str) -> None:
    """A requeued job's old dump directory goes before the new one is made: emptied as its owner,
    without recursion, for at most STALE_S (core/prune_tree.py). Cut short, it is left under a
    `.pruning.` name that retention finishes, so the job id is free for mkdir either way."""
    try:
        st = os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):  # the parent is root's: nobody else can swap this name for a link
        prune_entry(parent, name, time.monotonic() + STALE_S)
        if _exists(parent, name):  # not even renamed (a mark of the same name, still full): say why mkdir fails
            raise OSError(f"stale dump directory {name} could not be moved aside")
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)


def _exists(parent: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=parent)
    except FileNotFoundError:
        return False
    return True


def task_fragment(dump_dir: str, buffer_size: int) -> str:
    """The sh lines: print each export unless the job set that variable; note a job's own dump prefix.

    An srun step's tasks inherit the batch step's exports: TORCH_FR_DUMP_TEMP_FILE equal to the
    SLURM_HOOKS_FR_DUMP exported with it is ours (another node's directory, where state dirs differ),
    and this node's own prefix replaces it.
    """
    prefix = shlex.quote(f"{dump_dir}/fr_rank_")
    note = shlex.quote(f"{dump_dir}/job_prefix")

    def export(name: str, value: str) -> str:
        line = shlex.quote(f"export {name}={value}")
        return f'[ -n "${{{name}+x}}" ] || printf "%s\\n" {line}\n'

    return (
        "# slurm-hooks flight recorder: written by the Prolog; the job's own TORCH_FR_* settings win.\n"
        + export("TORCH_FR_BUFFER_SIZE", str(int(buffer_size)))
        + export("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
        + f"ours={prefix}\n"
        + 'if [ -z "${TORCH_FR_DUMP_TEMP_FILE+x}" ] ||\n'
        + '   [ "$TORCH_FR_DUMP_TEMP_FILE" = "${SLURM_HOOKS_FR_DUMP-}" ]; then\n'
        + '  printf "%s\\n" "export TORCH_FR_DUMP_TEMP_FILE=$ours" "export SLURM_HOOKS_FR_DUMP=$ours"\n'
        + 'elif [ "$TORCH_FR_DUMP_TEMP_FILE" != "$ours" ]; then\n'
        + f'  printf "%s\\n" "$TORCH_FR_DUMP_TEMP_FILE" >>{note}\nfi\n'
    )
