"""The config file's YAML text -> a validated Config; errors name the file, the key and what was expected.

Apart from the package's loader because only a changed file needs it: load_config answers from its
cache without importing this module (or PyYAML), and every job start's Prolog loads the config.
"""

from __future__ import annotations

import math
from typing import Any

from slurm_hooks.config.bounds import check_bounds
from slurm_hooks.config.records import SECTIONS, Config, ConfigError, NcoreSource, Record, Report

_CHOICES = {
    "annotation.field": ("admin_comment", "comment"),
    "annotation.mode": ("all", "failures", "shadow"),
    "slurm.backend": ("auto", "cli", "pyslurm"),
    "ncore_sources.type": ("file", "env", "command", "cmdline"),
    "annotator": ("epilog", "epilog_slurmctld"),
    "flight_recorder.mode": ("off", "on"),
}


def _shown(value: Any, limit: int = 80) -> str:
    """A value as an error quotes it: its repr, cut (a value may be 64 KiB of the file)."""
    text = repr(value[:limit] if isinstance(value, str) else value)
    return text if len(text) <= limit else f"{text[:limit]}..."


def _check_keys(doc: dict[str, Any], cls: type[Record], where: str, prefix: str) -> None:
    known = set(cls._fields) - {"source"}
    for key in doc:
        if key not in known:
            raise ConfigError(f"{where}: unknown key '{prefix}{str(key)[:60]}' (known: {', '.join(sorted(known))})")


def _scalar(value: Any, expected: type, where: str, key: str) -> Any:
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, expected) or isinstance(value, bool) != (expected is bool):
        raise ConfigError(f"{where}: key '{key}' must be {expected.__name__}, got {_shown(value)}")
    choices = _CHOICES.get(key)
    if choices and value not in choices:
        raise ConfigError(f"{where}: key '{key}' must be one of {', '.join(choices)}, got {_shown(value)}")
    if isinstance(value, float) and not math.isfinite(value):  # YAML's .nan and .inf are floats
        raise ConfigError(f"{where}: key '{key}' must be a finite number, got {_shown(value)}")
    if isinstance(value, (int, float)) and value < 0:
        raise ConfigError(f"{where}: key '{key}' must not be negative, got {_shown(value)}")
    return value


def _section(doc: Any, cls: type[Record], where: str, prefix: str) -> Any:
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: key '{prefix.rstrip('.')}' must be a mapping")
    _check_keys(doc, cls, where, prefix)
    defaults = cls._field_defaults
    return cls(**{k: _scalar(v, type(defaults[k]), where, prefix + k) for k, v in doc.items()})


def _ncore(items: Any, where: str) -> tuple[NcoreSource, ...]:
    if not isinstance(items, list):
        raise ConfigError(f"{where}: key 'ncore_sources' must be a list")
    out = []
    for i, item in enumerate(items):
        key = f"ncore_sources[{i}]"
        if not isinstance(item, dict) or "type" not in item:
            raise ConfigError(f"{where}: key '{key}' must be a mapping with a 'type'")
        _check_keys(item, NcoreSource, where, f"{key}.")
        kind = _scalar(item["type"], str, where, "ncore_sources.type")
        if kind == "cmdline":  # the image name from /proc/cmdline under host_root; nothing to set
            if extra := sorted(set(item) - {"type"}):
                raise ConfigError(
                    f"{where}: key '{key}.{extra[0]}' is not used by type cmdline (it reads /proc/cmdline)"
                )
            out.append(NcoreSource(type=kind))
            continue
        need = {"file": "path", "env": "name", "command": "argv"}[kind]
        if not item.get(need):
            raise ConfigError(f"{where}: key '{key}.{need}' is required for type {kind}")
        argv = item.get("argv", [])
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"{where}: key '{key}.argv' must be a list of strings")
        out.append(
            NcoreSource(type=kind, path=str(item.get("path", "")), name=str(item.get("name", "")), argv=tuple(argv))
        )
    return tuple(out)


def _report(doc: Any, where: str) -> Report:
    import re

    report: Report = _section(doc, Report, where, "report.")
    try:
        groups = re.compile(report.rack_pattern).groupindex
    except (re.error, RecursionError, OverflowError) as exc:  # 5,000 nested groups, a{4294967296}
        raise ConfigError(f"{where}: key 'report.rack_pattern' is not a regular expression: {exc}") from None
    if "rack" not in groups:
        raise ConfigError(f"{where}: key 'report.rack_pattern' needs a group named rack: (?P<rack>...)")
    return report


def parse_config(text: str, where: str) -> Config:
    import yaml  # deferred with the loader: ~25 ms, and a cached config never needs it

    from slurm_hooks.config.strict_yaml import describe, load_yaml

    try:
        doc = load_yaml(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML at {describe(exc)}") from None
    if doc is None:
        return check_bounds(Config(source=where), where)
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}: top level must be a mapping of keys to values")
    _check_keys(doc, Config, where, "")
    values: dict[str, Any] = {"source": where}
    for key, value in doc.items():
        if key == "flight_recorder":  # `flight_recorder: on` is short for `{mode: on}`; YAML reads on/off as booleans
            value = {"mode": value} if isinstance(value, (bool, str)) else value
            if isinstance(value, dict) and isinstance(value.get("mode"), bool):
                value = {**value, "mode": "on" if value["mode"] else "off"}
        if key in SECTIONS:
            values[key] = _section(value, SECTIONS[key], where, f"{key}.")
        elif key == "report":
            values[key] = _report(value, where)
        elif key == "ncore_sources":
            values[key] = _ncore(value, where)
        elif key == "rule_files":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{where}: key 'rule_files' must be a list of paths")
            values[key] = tuple(value)
        else:
            values[key] = _scalar(value, type(getattr(Config(), key)), where, key)
    return check_bounds(Config(**values), where)
