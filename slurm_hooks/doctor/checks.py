"""The checks of `slurm-hooks doctor`, one function each: what it found, and the fix.

`fail` is a real misconfiguration; `warn` is something a node may lack on purpose.
The `hooks` check, which compares the installed scripts with this install, is in hook_scripts.py.
"""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from slurm_hooks.config import Config, ConfigError, config_path, hook_config, load_config
from slurm_hooks.core.safeio import open_regular, read_small
from slurm_hooks.facts.gpu import GpuQuery, GpuQueryError
from slurm_hooks.facts.render import as_text
from slurm_hooks.hooks.metrics import outbox_gauges

Runner = Callable[[Sequence[str], float], "subprocess.CompletedProcess[bytes]"]
OUTBOX_STALE_S = 3600.0


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | warn | fail
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorDeps:
    gpu: GpuQuery
    run: Runner  # a bounded command, no shell (proc.run_bounded with the hooks' environment)
    slurm_backend: Callable[[Config], str]  # which Slurm client the hooks would use
    kmsg: str = "/dev/kmsg"  # the kernel's ring buffer, the Epilog's fallback where there is no journal


def check_config(path: Path | None) -> tuple[Config, Finding]:
    where = path or config_path()
    try:
        config = load_config(path)
    except ConfigError as exc:  # the checks below look at what the hooks run with meanwhile
        config, _ = hook_config(str(path) if path else None)
        return config, Finding("config", "fail", str(exc), f"correct {where}; until then the hooks use {config.source}")
    if config.source == "(defaults)":
        return config, Finding("config", "ok", f"no {where}: every key at its default")
    return config, Finding("config", "ok", f"{config.source} is valid")


def _writable(directory: Path) -> str:
    """'' when a file can be created in `directory`, else why not (tried, not guessed from modes)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".doctor-", dir=directory)
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    os.unlink(name)
    return ""


def check_dir(name: str, directory: str, owner: tuple[int | None, str] = (0, "root")) -> Finding:
    """Present, writable, the right owner's (root's, or SlurmUser's for a spool the controller's hook
    writes), and written by that owner alone (the hooks keep each job's files private)."""
    path = Path(directory)
    uid, who = owner
    make = f"install -d -o {shlex.quote(who)} -m 0755 {shlex.quote(directory)}"
    if not path.exists():
        parent = next((p for p in path.parents if p.exists()), Path("/"))
        why = _writable(parent) if parent.is_dir() else f"{parent} is not a directory"
        if why:
            return Finding(
                name,
                "fail",
                f"{directory} is missing and cannot be created ({parent}: {why})",
                f"point {name} at a writable local directory, or {make}",
            )
        return Finding(name, "warn", f"{directory} is missing (the first hook run creates it)", make)
    if not path.is_dir():
        return Finding(name, "fail", f"{directory} is not a directory", f"point {name} elsewhere, or {make}")
    if why := _writable(path):
        return Finding(
            name,
            "fail",
            f"{directory} is not writable: {why}",
            f"make it a writable local directory (not read-only, not /tmp on SUNK): {make}",
        )
    st = path.stat()
    if uid is None:
        return Finding(
            name,
            "warn",
            f"{directory} belongs to uid {st.st_uid}; with annotator: epilog_slurmctld it must be SlurmUser's, "
            "which scontrol did not say (slurmctld not answering)",
            f"chown SlurmUser {shlex.quote(directory)} if uid {st.st_uid} is not SlurmUser",
        )
    allowed = {uid} if uid != 0 else {0, os.geteuid()}
    if st.st_uid not in allowed:
        why = " (annotator: epilog_slurmctld: the controller's hook writes here as SlurmUser)" if uid != 0 else ""
        return Finding(
            name,
            "fail",
            f"{directory} belongs to uid {st.st_uid}, not {who} (uid {uid}){why}",
            f"chown {shlex.quote(who)} {shlex.quote(directory)}",
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return Finding(
            name,
            "fail",
            f"{directory} has mode {stat.S_IMODE(st.st_mode):04o}: users could plant files the root hooks read",
            f"chmod go-w {shlex.quote(directory)}",
        )
    return Finding(name, "ok", f"{directory} present, owned by uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}")


def check_nvml(config: Config, deps: DoctorDeps) -> Finding:
    has_driver = (Path(config.host_root) / "proc/driver/nvidia").is_dir()
    try:
        info = deps.gpu.query()
    except GpuQueryError as exc:
        if has_driver:
            return Finding(
                "nvml",
                "warn",
                f"a driver is loaded but NVML is not usable: {exc}",
                "make libnvidia-ml.so.1 visible to slurmd (SUNK: the NVIDIA container runtime)",
            )
        return Finding("nvml", "warn", f"no GPU here: {exc}", "nothing, on a node without GPUs")
    return Finding(
        "nvml",
        "ok",
        f"driver {as_text(info.driver_version)}, CUDA {as_text(info.cuda_driver_version)}, "
        f"{as_text(info.gpu_count)} x {as_text(info.gpu_model)}",
    )


KMSG_FOLLOW_FIX = (
    "run `slurm-hooks kmsg-follow --output FILE` on the node (SUNK: deploy/sunk/kmsg-follow.yaml) "
    "and set kernel_log_file: FILE"
)


def _follower_counts(path: str) -> str:
    """What kmsg-follow's FILE.state says it did (nothing where FILE is another tool's)."""
    import json

    try:
        state = json.loads(read_small(f"{path}.state", 4096))  # bounded, never blocking on a FIFO
        return f"; kmsg-follow wrote {state['written']}, dropped {state['dropped']} (output failed), " + (
            f"lost {state['lost']} (ring buffer overwrote them) this boot"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def check_kernel_log(config: Config, deps: DoctorDeps) -> Finding:
    configured = str(getattr(config, "kernel_log_file", "") or "")
    if configured:
        try:  # as the Epilog opens it (collect/kernel.py): a link, FIFO or device is refused there too
            open_regular(configured).close()
            return Finding("kernel_log", "ok", f"{configured} readable (kernel_log_file){_follower_counts(configured)}")
        except OSError as exc:
            why = exc.strerror or str(exc)
        return Finding(
            "kernel_log",
            "fail",
            f"kernel_log_file {configured} is not readable ({why}): "
            "every diagnosis says no kernel lines from this node",
            f"{KMSG_FOLLOW_FIX.replace('FILE', configured)} (mounted read-only in the slurmd pod), or remove the key",
        )
    try:
        if deps.run(["journalctl", "-k", "-n", "1", "-q"], config.budgets.command_s).returncode == 0:
            return Finding("kernel_log", "ok", "journalctl -k answers")
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        os.close(os.open(deps.kmsg, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as exc:
        return Finding(
            "kernel_log",
            "warn",
            f"neither journalctl -k nor {deps.kmsg} ({exc.strerror}): diagnoses miss kernel lines "
            "(segfaults, Xids, OOM kills) and say so in skipped",
            f"run the Epilog as root with {deps.kmsg} readable, or {KMSG_FOLLOW_FIX}",
        )
    return Finding("kernel_log", "ok", f"{deps.kmsg} readable")


def check_outbox(config: Config) -> Finding:
    gauges = outbox_gauges(os.path.join(config.spool_dir, "outbox"))
    depth, oldest = gauges["depth"], gauges["oldest"]
    if not depth:
        return Finding("outbox", "ok", "empty: every annotation reached accounting")
    age = time.time() - oldest
    status = "warn" if age > OUTBOX_STALE_S else "ok"
    return Finding(
        "outbox",
        status,
        f"{depth} annotation(s) waiting, the oldest for {age / 60:.0f} min",
        "slurm-hooks flush; if it keeps failing, check slurmdbd" if status == "warn" else "",
    )


def check_metrics(config: Config) -> Finding:
    if not config.metrics_file:
        return Finding("metrics", "ok", "off (metrics_file is empty)")
    folder = os.path.dirname(config.metrics_file)
    if not os.path.isdir(folder):
        return Finding(
            "metrics",
            "warn",
            f"{folder} does not exist: no metrics file is written",
            "run node_exporter with --collector.textfile.directory there, or set metrics_file",
        )
    return Finding("metrics", "ok", f"written to {config.metrics_file}")
