"""`slurm-hooks doctor`: is this node set up right? Each check says what it found and what to fix.

`fail` is a real misconfiguration (a config that does not load, a state dir the hooks cannot
write, hook scripts that are not this install's); the command then exits 1. `warn` is something
missing that a node may lack on purpose (no GPU, no node_exporter, slurmctld down right now).
docs/operators/troubleshooting.md explains each check.
"""

from __future__ import annotations

import sys
from pathlib import Path

from slurm_hooks.config import Config
from slurm_hooks.core.proc import TOOL_ENV, run_bounded
from slurm_hooks.doctor.checks import (
    DoctorDeps,
    Finding,
    check_config,
    check_dir,
    check_kernel_log,
    check_metrics,
    check_nvml,
    check_outbox,
)
from slurm_hooks.doctor.hook_scripts import check_hooks
from slurm_hooks.doctor.slurm_side import check_slurm, slurm_settings, spool_owner

__all__ = ["DoctorDeps", "Finding", "doctor", "main", "real_deps", "report", "run_checks"]


INSTALL_HOOKS_DEST = Path("/etc/slurm/hooks")  # `slurm-hooks install-hooks`' default --dest


def hook_dirs(settings: dict[str, str]) -> list[Path]:
    """Where the hook scripts may be, most telling first: where slurm.conf's Prolog points; where
    `make install` put them (PREFIX/hooks beside PREFIX/venv, this interpreter's); install-hooks' default."""
    found = []
    prolog = settings.get("Prolog", "")
    if prolog.endswith("/slurm-hooks-prolog"):
        found.append(Path(prolog).parent)
    return [*found, Path(sys.prefix).parent / "hooks", Path("/opt/slurm-hooks/hooks"), INSTALL_HOOKS_DEST]


def run_checks(path: Path | None, hooks_dir: Path | None, deps: DoctorDeps) -> list[Finding]:
    config, found = check_config(path)
    settings = slurm_settings(config, deps)
    if hooks_dir is None:
        candidates = hook_dirs(settings)
        hooks_dir = next((d for d in candidates if (d / "slurm-hooks-prolog").is_file()), candidates[-1])
    return [
        found,
        check_dir("state_dir", config.state_dir),
        check_dir("spool_dir", config.spool_dir, spool_owner(config, settings)),
        check_hooks(hooks_dir, config, deps),
        check_slurm(config, deps),
        check_nvml(config, deps),
        check_kernel_log(config, deps),
        check_outbox(config),
        check_metrics(config),
    ]


def report(findings: list[Finding]) -> str:
    lines = []
    for f in findings:  # whole, never cut: the path or key at the end of a line is what to act on
        lines.append(f"{f.status.upper() if f.status != 'ok' else 'ok':5} {f.check:11} {f.detail}")
        if f.fix and f.status != "ok":
            lines.append(f"{'':17} fix: {f.fix}")
    fails = sum(f.status == "fail" for f in findings)
    warns = sum(f.status == "warn" for f in findings)
    lines.append(
        f"{fails} misconfiguration(s) to fix, {warns} warning(s)"
        if fails
        else f"no misconfiguration; {warns} warning(s)"
    )
    return "\n".join(lines) + "\n"


def real_deps() -> DoctorDeps:
    from slurm_hooks.facts.gpu import NvmlQuery

    def backend(config: Config) -> str:
        from slurm_hooks.slurm.backend import select  # what slurm_client gives the hooks

        choice = select(config)
        return f"{choice.backend} ({choice.reason})"

    return DoctorDeps(gpu=NvmlQuery(2.0), run=lambda argv, t: run_bounded(argv, t, env=TOOL_ENV), slurm_backend=backend)


def doctor(path: Path | None, hooks_dir: Path | None, deps: DoctorDeps) -> tuple[str, int]:
    """The report, and the exit status: 1 only for a real misconfiguration. Changes nothing."""
    findings = run_checks(path, hooks_dir, deps)
    return report(findings), 1 if any(f.status == "fail" for f in findings) else 0


def main(path: Path | None, hooks_dir: Path | None) -> int:
    text, status = doctor(path, hooks_dir, real_deps())
    print(text, end="")
    return status
