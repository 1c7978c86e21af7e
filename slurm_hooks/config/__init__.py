"""One YAML file -> typed NamedTuple records, validated on load; errors name the file, the key and what was expected.

Path: $SLURM_HOOKS_CONFIG, else /etc/slurm-hooks/config.yaml. A missing default file means
all defaults; a file that exists but is wrong is an error. The hooks then fail safe (`hook_config`):
the last configuration that loaded (a copy kept beside the JSON cache), else the defaults in
`annotation.mode: shadow`, so a typo never makes a site annotate jobs it chose not to.

The records are `records.py`'s (re-exported here: `from slurm_hooks.config import Config`); parsing
and validating the YAML is `parse.py`'s and `bounds.py`'s, imported only when the cache below misses.
"""

from __future__ import annotations

import os
from typing import Any

from slurm_hooks.config.records import (
    SECTIONS,
    Annotation,
    Budgets,
    Config,
    ConfigError,
    FlightRecorder,
    Limits,
    NcoreSource,
    Record,
    Report,
    SlurmSettings,
)
from slurm_hooks.core.layout import DEFAULT_STATE_DIR
from slurm_hooks.core.safeio import atomic_write, read_small

__all__ = [
    "DEFAULT_PATH",
    "SECTIONS",
    "SHADOW_DEFAULTS",
    "Annotation",
    "Budgets",
    "Config",
    "ConfigError",
    "FlightRecorder",
    "Limits",
    "NcoreSource",
    "Record",
    "Report",
    "SlurmSettings",
    "config_path",
    "hook_config",
    "last_good_path",
    "load_config",
]

DEFAULT_PATH = "/etc/slurm-hooks/config.yaml"
CACHE_DIR = DEFAULT_STATE_DIR
# Their mtimes are in the cache key: an upgrade may change defaults, fields or checks.
_CODE = tuple(
    os.path.join(os.path.dirname(__file__), f) for f in ("__init__.py", "records.py", "parse.py", "bounds.py")
)


def config_path() -> str:
    return os.environ.get("SLURM_HOOKS_CONFIG") or DEFAULT_PATH


def _to_dict(config: Config) -> dict[str, Any]:
    return {
        **config._asdict(),
        **{k: getattr(config, k)._asdict() for k in (*SECTIONS, "report")},
        "ncore_sources": [n._asdict() for n in config.ncore_sources],
    }


def _from_dict(doc: dict[str, Any]) -> Config:
    return Config(
        **{
            **doc,
            **{k: cls(**doc[k]) for k, cls in {**SECTIONS, "report": Report}.items()},
            "ncore_sources": tuple(NcoreSource(**{**n, "argv": tuple(n["argv"])}) for n in doc["ncore_sources"]),
            "rule_files": tuple(doc["rule_files"]),
        }
    )


def _cache_path(name: str = "config-cache.json") -> str:  # os.path, not pathlib: every job start's path
    return os.path.join(os.environ.get("SLURM_HOOKS_CACHE_DIR") or CACHE_DIR, name)


def last_good_path(path: str) -> str:
    """Beside the cache, one per config file (nodes may name different files): its last good load."""
    import zlib

    return _cache_path(f"config-last-good.{zlib.crc32(path.encode()):08x}.json")


SHADOW_DEFAULTS = Config(
    annotation=Annotation(mode="shadow"), source="(built-in defaults in shadow mode: no configuration loaded)"
)


def hook_config(path: str | None = None) -> tuple[Config, str]:
    """What a hook runs with, and '' or the load error: the file; if it does not load, the last copy
    of the same file that did; with none, SHADOW_DEFAULTS (diagnose and keep, never annotate)."""
    import json

    try:
        return load_config(path), ""
    except ConfigError as exc:
        error = str(exc)
    try:
        wanted = os.fspath(path or config_path())
        kept = json.loads(read_small(last_good_path(wanted)))
        if kept["path"] == wanted:
            config = _from_dict(kept["config"])
            return config._replace(source=f"{kept['path']} (last good copy, loaded {kept['saved_at']})"), error
    except (OSError, ValueError, KeyError, TypeError):
        pass  # none kept, or damaged, or of an older layout: shadow mode below
    return SHADOW_DEFAULTS, error


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """The configuration; a missing file at the default path means defaults.

    The validated result is cached as JSON keyed by the file's identity (inode, size, mtime):
    every job start runs the Prolog, and importing PyYAML alone costs ~25 ms.
    """
    import json

    path = os.fspath(path or config_path())
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path == DEFAULT_PATH:
            return Config()
        raise ConfigError(f"{path}: configuration file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration ({exc.strerror})") from None
    code = ":".join(str(os.stat(f).st_mtime_ns) for f in _CODE)
    key = f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{code}"
    cache = _cache_path()
    try:
        cached = json.loads(read_small(cache))
        if cached.get("key") == key:
            return _from_dict(cached["config"])
    except (OSError, ValueError, KeyError, TypeError):
        pass  # no cache, or a stale or damaged one: parse the file
    from slurm_hooks.config.parse import parse_config  # deferred: a cached config needs neither it nor PyYAML

    try:
        with open(path, encoding="utf-8") as fh:
            config = parse_config(fh.read(), path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: configuration is not UTF-8 (byte {exc.start})") from None
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        atomic_write(cache, json.dumps({"key": key, "config": _to_dict(config)}), mode=0o600)
        import time

        saved = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        kept = {"path": path, "saved_at": saved, "config": _to_dict(config)}
        atomic_write(last_good_path(path), json.dumps(kept), mode=0o600)
    except OSError:
        pass  # a read-only /run only costs speed (and the fail-safe copy)
    return config
