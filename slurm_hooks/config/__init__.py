"""One YAML file -> typed NamedTuple records, validated on load; errors name the file, the key and what was expected.

Path: $SLURM_HOOKS_CONFIG, else /etc/slurm-hooks/config.yaml. A missing default file means
all defaults; a file that exists but is wrong is an error, and every way of being wrong is one:
load_config raises nothing but a ConfigError of one bounded line, whatever the file holds (a
FIFO, /dev/zero, 10 GB, an alias bomb, a tag PyYAML cannot construct). The hooks then fail safe
(`hook_config`): the last configuration that loaded (a copy kept beside the JSON cache), else the
defaults in `annotation.mode: shadow`, so a typo never makes a site annotate jobs it chose not to.

The records are `records.py`'s (re-exported here: `from slurm_hooks.config import Config`); reading
the YAML is `strict_yaml.py`'s (plain data only), checking it `parse.py`'s and `bounds.py`'s, all
imported only when the cache below misses. The cache and the last good copy are checked field by
field when read: a damaged one is a miss.
"""

from __future__ import annotations

import os
import stat
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
MAX_CONFIG_BYTES = 64 * 1024  # ten times the example with every key and its comment; PyYAML parses it in ~1 s
CACHE_DIR = DEFAULT_STATE_DIR
# Their mtimes are in the cache key: an upgrade may change defaults, fields or checks.
_CODE = tuple(
    os.path.join(os.path.dirname(__file__), f)
    for f in ("__init__.py", "records.py", "parse.py", "bounds.py", "strict_yaml.py")
)


def config_path() -> str:
    return os.environ.get("SLURM_HOOKS_CONFIG") or DEFAULT_PATH


def _to_dict(config: Config) -> dict[str, Any]:
    return {
        **config._asdict(),
        **{k: getattr(config, k)._asdict() for k in (*SECTIONS, "report")},
        "ncore_sources": [n._asdict() for n in config.ncore_sources],
    }


# The element of each tuple-valued field, as a template for its type.
_ITEMS: dict[str, Any] = {"ncore_sources": NcoreSource(type=""), "rule_files": "", "argv": ""}
_DEFAULTS = Config()


def _from_dict(doc: Any, like: Any = _DEFAULTS) -> Any:
    """`like`'s record from its JSON form, each value of its default's type, else TypeError: the cache
    and the last good copy are files, and a damaged one must be a miss, never a string budget."""
    if not isinstance(doc, dict) or doc.keys() != set(like._fields):
        raise TypeError(f"{type(like).__name__}: not the fields this version writes")
    values = {}
    for key, default in zip(like._fields, like, strict=True):
        value = doc[key]
        if isinstance(default, tuple) and hasattr(default, "_fields"):  # a section
            value = _from_dict(value, default)
        elif isinstance(default, tuple):
            if not isinstance(value, list):
                raise TypeError(f"{key}: not a list")
            item = _ITEMS[key]
            value = tuple(_from_dict(v, item) if hasattr(item, "_fields") else _checked(key, v, item) for v in value)
        else:
            value = _checked(key, value, default)
        values[key] = value
    return type(like)(**values)


def _checked(key: str, value: Any, like: Any) -> Any:
    if type(value) is not type(like):  # JSON keeps 10.0 a float and 10 an int; bool is no int here
        raise TypeError(f"{key}: not a {type(like).__name__}")
    return value


def _read_kept(path: str) -> Any:
    """The JSON this module wrote at `path` (the cache, a last good copy), or None: a file that is
    missing, damaged or hostile (not JSON, nested 100,000 deep, a FIFO) counts as no file."""
    import json

    try:
        return json.loads(read_small(path))
    except Exception:  # RecursionError and MemoryError too: a cache is never worth a failed hook
        return None


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
    wanted = os.fspath(path or config_path())
    try:
        return load_config(wanted), ""
    except ConfigError as exc:  # load_config's every failure, bounded (records.ConfigError)
        error = str(exc)
    kept = _read_kept(last_good_path(wanted))
    try:
        if kept["path"] == wanted:
            config: Config = _from_dict(kept["config"])
            return config._replace(source=f"{wanted} (last good copy, loaded {str(kept['saved_at'])[:40]})"), error
    except (KeyError, TypeError):
        pass  # none kept, or damaged, or of an older layout: shadow mode below
    return SHADOW_DEFAULTS, error


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """The configuration; a missing file at the default path means defaults; anything else that
    keeps the file from loading is a ConfigError of one bounded line, whatever the file holds.

    The validated result is cached as JSON keyed by the file's identity (inode, size, mtime):
    every job start runs the Prolog, and importing PyYAML alone costs ~25 ms.
    """
    path = os.fspath(path or config_path())
    try:
        return _load(path)
    except ConfigError:
        raise
    except Exception as exc:  # whatever a file makes the parser raise is a bad config, not a dead hook
        raise ConfigError(f"{path}: configuration not loaded ({type(exc).__name__}: {str(exc)[:200]})") from None


def _load(path: str) -> Config:
    import json

    try:
        st = os.stat(path)
    except FileNotFoundError:
        if path == DEFAULT_PATH:
            return Config()
        raise ConfigError(f"{path}: configuration file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration ({exc.strerror})") from None
    cache = _cache_path()
    cached = _read_kept(cache)
    try:
        if cached["key"] == _cache_key(path, st):
            return _from_dict(cached["config"])  # type: ignore[no-any-return]
    except (KeyError, TypeError):
        pass  # no cache, or a stale or damaged one: parse the file
    from slurm_hooks.config.parse import parse_config  # deferred: a cached config needs neither it nor PyYAML

    text, st = _read_config(path)
    config = parse_config(text, path)
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        atomic_write(cache, json.dumps({"key": _cache_key(path, st), "config": _to_dict(config)}), mode=0o600)
        import time

        saved = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        kept = {"path": path, "saved_at": saved, "config": _to_dict(config)}
        atomic_write(last_good_path(path), json.dumps(kept), mode=0o600)
    except OSError:
        pass  # a read-only /run only costs speed (and the fail-safe copy)
    return config


def _cache_key(path: str, st: os.stat_result) -> str:
    code = ":".join(str(os.stat(f).st_mtime_ns) for f in _CODE)
    return f"{path}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{code}"


def _read_config(path: str) -> tuple[str, os.stat_result]:
    """The file's text and identity through one descriptor: a regular file (a symlink to one is fine:
    operators link their configs) of at most MAX_CONFIG_BYTES, in UTF-8. O_NONBLOCK and S_ISREG:
    a FIFO or a device (/dev/zero) is refused before a byte is read, never waited on or read forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"{path}: configuration is not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= MAX_CONFIG_BYTES and (chunk := os.read(fd, MAX_CONFIG_BYTES + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read configuration ({exc.strerror})") from None
    finally:
        os.close(fd)
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: configuration is larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        return b"".join(chunks).decode("utf-8"), st
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: configuration is not UTF-8 (byte {exc.start})") from None
