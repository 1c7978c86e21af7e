"""The doctor's look at Slurm: what slurmctld says about itself (`scontrol show config`: SlurmUser,
the Prolog's path) and whether it answers, with the backend the hooks would use."""

from __future__ import annotations

import os
import subprocess

from slurm_hooks.config import Config
from slurm_hooks.core.proc import TOOL_ENV
from slurm_hooks.doctor.checks import DoctorDeps, Finding


def slurm_settings(config: Config, deps: DoctorDeps) -> dict[str, str]:
    """`scontrol show config` as {key: value} (SlurmUser, Prolog, ...); empty when slurmctld is not answering."""
    try:
        out = deps.run(["scontrol", "show", "config"], config.budgets.command_s)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    settings = {}
    for text in out.stdout.decode(errors="replace").splitlines():
        key, sep, value = text.partition("=")
        if sep and key.strip() and " " not in key.strip():
            settings[key.strip()] = value.strip()
    return settings


def spool_owner(config: Config, settings: dict[str, str]) -> tuple[int | None, str]:
    """Who must own the spool: root, or SlurmUser when the controller's hook annotates (it runs as
    SlurmUser and writes there). None when SlurmUser is not known (slurmctld not answering)."""
    if config.annotator != "epilog_slurmctld":
        return 0, "root"
    user = settings.get("SlurmUser", "")  # "slurm(64030)"
    name, _, uid = user.partition("(")
    uid = uid.rstrip(")")
    return (int(uid) if uid.isascii() and uid.isdigit() else None), name or "SlurmUser"


def check_slurm(config: Config, deps: DoctorDeps) -> Finding:
    backend = deps.slurm_backend(config)
    missing = [
        c
        for c in ("scontrol", "sacct", "sacctmgr")
        if not any(os.access(f"{d}/{c}", os.X_OK) for d in TOOL_ENV["PATH"].split(":"))
    ]
    if missing:
        return Finding(
            "slurm",
            "warn",
            f"backend {backend}; not on the hooks' PATH: {', '.join(missing)}",
            "install Slurm's client commands (Debian: slurm-client) in /usr/bin",
        )
    try:
        out = deps.run(["scontrol", "ping"], config.budgets.command_s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding("slurm", "warn", f"backend {backend}; scontrol ping: {exc}", "check slurmctld and munge")
    # Only the status lines: with slurmctld down, 22.05 adds a "RESTORE SLURMCTLD DAEMON" banner of asterisks.
    said = [t.strip() for t in out.stdout.decode(errors="replace").splitlines() if t.strip()]
    text = "; ".join(t for t in said if not t.startswith("*"))
    if out.returncode != 0 or "UP" not in text:
        return Finding(
            "slurm",
            "warn",
            f"backend {backend}; slurmctld not answering: {text or out.returncode}",
            "annotations wait in the outbox until it is back; check slurmctld and munge",
        )
    return Finding("slurm", "ok", f"backend {backend}; {text}")
