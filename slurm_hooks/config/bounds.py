"""The bounds of every config value, checked once config/parse.py has the types right.

Each value class has its rule: budgets are finite seconds in (0, 3600] and the annotator's wait fits
inside the Epilog's; counts and sizes are whole numbers from 1 up; directories and files are absolute
paths (Slurm gives hooks no working directory); rule files exist and are regular files, and so
is a `kernel_log_file` that exists (`/dev/zero` would be read without end; kmsg-follow may create
a missing one later); the time zone exists. Every error names
the file and the key, as the type errors do.
"""

from __future__ import annotations

import os
import stat

from slurm_hooks.config.records import Config, ConfigError

BUDGET_MAX_S = 3600.0  # above PrologEpilogTimeout's useful range; setitimer overflows on 1e300
# (inner, outer): the annotator's wait must leave its Epilog time to diagnose and annotate. A single
# call's bound (nvml_call_s, command_s) may exceed its hook's budget: the hook's alarm cuts it then.
_NESTED = (("merge_wait_s", "epilog_s"),)
_COUNT_MAX = 10**9
_DIRS = ("host_root", "state_dir", "spool_dir")  # must be set and absolute
_FILES_OR_OFF = ("log_file", "metrics_file")  # "" turns them off (stderr, no metrics)


def _fail(where: str, key: str, why: str) -> ConfigError:
    return ConfigError(f"{where}: key '{key}' {why}")


def _budgets(config: Config, where: str) -> None:
    budgets = config.budgets._asdict()
    for key, value in budgets.items():
        if not 0 < value <= BUDGET_MAX_S:
            raise _fail(
                where, f"budgets.{key}", f"must be more than 0 and at most {BUDGET_MAX_S:g} seconds, got {value}"
            )
    for inner, outer in _NESTED:
        if budgets[inner] >= budgets[outer]:
            raise _fail(
                where,
                f"budgets.{inner}",
                f"must be less than budgets.{outer} ({budgets[outer]:g}), got {budgets[inner]:g}",
            )


def _counts(config: Config, where: str) -> None:
    counts = {
        **{f"limits.{k}": v for k, v in config.limits._asdict().items()},
        "report.repeat_root_min": config.report.repeat_root_min,
        "retention_days": config.retention_days,
        "spool_max_mb": config.spool_max_mb,
        "max_log_read_mb": config.max_log_read_mb,
    }
    for key, value in counts.items():
        if not 1 <= value <= _COUNT_MAX:
            raise _fail(where, key, f"must be a whole number from 1 to {_COUNT_MAX}, got {value}")


def _regular_file(where: str, key: str, path: str) -> None:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise _fail(where, key, f"names {path}, which cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise _fail(where, key, f"names {path}, which is not a regular file")


def _paths(config: Config, where: str) -> None:
    for key in _DIRS:
        if not os.path.isabs(getattr(config, key)):
            raise _fail(where, key, f"must be an absolute path, got {getattr(config, key)!r}")
    for key in (*_FILES_OR_OFF, "kernel_log_file"):
        value = getattr(config, key)
        if value and not os.path.isabs(value):
            raise _fail(where, key, f"must be an absolute path or empty, got {value!r}")
    # kmsg-follow may create it after the hooks first load the config; what exists must be a file
    if config.kernel_log_file and os.path.lexists(config.kernel_log_file):
        _regular_file(where, "kernel_log_file", config.kernel_log_file)
    for i, rule_file in enumerate(config.rule_files):
        if not os.path.isabs(rule_file):
            raise _fail(where, f"rule_files[{i}]", f"must be an absolute path, got {rule_file!r}")
        _regular_file(where, f"rule_files[{i}]", rule_file)
    for i, source in enumerate(config.ncore_sources):
        if source.type == "file" and not os.path.isabs(source.path):
            raise _fail(where, f"ncore_sources[{i}].path", f"must be absolute (under host_root), got {source.path!r}")
        if source.type == "command" and not os.path.isabs(source.argv[0]):
            raise _fail(where, f"ncore_sources[{i}].argv", f"must start with an absolute path, got {source.argv[0]!r}")


def _zone(config: Config, where: str) -> None:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(config.log_timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise _fail(where, "log_timezone", f"names no known time zone, got {config.log_timezone!r}") from None


def check_bounds(config: Config, where: str) -> Config:
    """`config` when every value is inside its bounds; else ConfigError naming file and key."""
    _budgets(config, where)
    _counts(config, where)
    _paths(config, where)
    _zone(config, where)
    return config
