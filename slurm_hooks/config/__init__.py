"""One YAML file -> typed NamedTuple records, validated on load; errors name the file, the key and what was expected.

Path: $SLURM_HOOKS_CONFIG, else /etc/slurm-hooks/config.yaml. A missing default file means
all defaults; a file that exists but is wrong is an error. The hooks then fail safe (`hook_config`):
the last configuration that loaded (a copy kept beside the JSON cache), else the defaults in
`annotation.mode: shadow`, so a typo never makes a site annotate jobs it chose not to.

Parsing and validating the YAML is config/parse.py's, imported only when the cache below misses.

NamedTuples, not dataclasses: every job start imports this module, and `dataclasses` (with inspect,
ast, dis) plus the classes cost ~13 ms (bench/prolog_imports.py). Copy with `config._replace(k=v)`.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from slurm_hooks.core.layout import DEFAULT_SPOOL_DIR, DEFAULT_STATE_DIR
from slurm_hooks.core.safeio import atomic_write, read_small

DEFAULT_PATH = "/etc/slurm-hooks/config.yaml"
CACHE_DIR = DEFAULT_STATE_DIR
_PARSER_FILE = os.path.join(os.path.dirname(__file__), "parse.py")  # its mtime is in the cache key


class ConfigError(ValueError):
    pass


class NcoreSource(NamedTuple):
    """Where the ncore (CoreWeave node image) version comes from; sources are tried in order."""

    type: str  # file | env | command | cmdline (image name from host_root/proc/cmdline)
    path: str = ""  # file: first non-empty line (under host_root)
    name: str = ""  # env: variable name
    argv: tuple[str, ...] = ()  # command: argv, no shell; first line of stdout


class Budgets(NamedTuple):
    prolog_s: float = 10.0  # whole Prolog; Slurm drains the node if it hangs
    nvml_call_s: float = 2.0  # each NVML call (NVML can hang on a sick GPU)
    command_s: float = 3.0  # each subprocess (ncore command, sacctmgr, journalctl)
    epilog_s: float = 30.0  # whole Epilog
    merge_wait_s: float = 15.0  # how long the annotator waits for the other nodes' parts


class Limits(NamedTuple):
    """Work one job's evidence may cause, whatever its logs hold; what is cut is said in `skipped`."""

    hits_per_family: int = 10_000  # keyword hits a rule family examines per file; more are counted only
    line_bytes: int = 8192  # bytes of one log line the rules see (ripgrep never holds a longer one)
    bundle_files: int = 1000  # job logs read from one bundle; per-node parts: the job's node count, at least this
    bundle_mb: int = 4096  # bytes read from one bundle's files, all together
    tar_mb: int = 1024  # bytes extracted from a .tar.gz bundle (sparse members are refused)
    tar_members: int = 10_000  # tarball entries looked at; the rest of the tarball is left out


class Annotation(NamedTuple):
    field: str = "admin_comment"  # admin_comment | comment
    mode: str = "all"  # all | failures | shadow (diagnose and keep, never annotate)


class Report(NamedTuple):
    rack_pattern: str = r"gb-r(?P<rack>\d+)-c\d+"  # names a node's rack (group "rack"); no match: rack "?"
    repeat_root_min: int = 3  # a node that was the root of this many failures is listed for a person to check


class SlurmSettings(NamedTuple):
    backend: str = "auto"  # auto (pyslurm if it matches the running Slurm, else CLI) | cli | pyslurm


class FlightRecorder(NamedTuple):
    """PyTorch's flight recorder dumps, collected per job (docs/flight-recorder.md); off: nothing at all."""

    mode: str = "off"  # off | on (YAML's bare on/off booleans read as these)
    buffer_size: int = 2000  # TORCH_FR_BUFFER_SIZE: collectives each rank keeps
    dir: str = ""  # where the per-job dump dirs live; "" = <state_dir>/flight
    max_dumps: int = 512  # dump files read per node and job
    max_dump_mb: int = 64  # bytes read of one dump; a larger one is skipped
    read_s: float = 5.0  # the Epilog's dump reader, all dumps together
    retention_days: int = 3  # raw dumps (`collect --flight-dumps`) kept this long


class Config(NamedTuple):
    host_root: str = "/"  # where the host's /proc and /sys are seen (SUNK: slurmd runs in a pod)
    state_dir: str = DEFAULT_STATE_DIR  # per-job node facts for the TaskProlog
    spool_dir: str = DEFAULT_SPOOL_DIR  # bundles, diagnoses, annotation outbox
    log_file: str = "/var/log/slurm-hooks.log"  # JSON lines; "" = stderr
    ncore_sources: tuple[NcoreSource, ...] = (NcoreSource(type="env", name="NCORE_VERSION"),)
    budgets: Budgets = Budgets()
    annotation: Annotation = Annotation()
    limits: Limits = Limits()
    report: Report = Report()
    slurm: SlurmSettings = SlurmSettings()
    rule_files: tuple[str, ...] = ()
    annotator: str = "epilog"  # epilog (the batch host's Epilog) | epilog_slurmctld
    log_timezone: str = "UTC"  # zone of the jobs' own log stamps (containers usually run in UTC)
    retention_days: int = 30  # spool bundles older than this are removed
    spool_max_mb: int = 2048  # and the oldest go first past this size
    max_log_read_mb: int = 64  # tail of each job log copied into a bundle
    metrics_file: str = "/var/lib/node_exporter/textfile_collector/slurm_hooks.prom"  # if its dir exists; "" = off
    kernel_log_file: str = ""  # this node's kernel lines from this file, not the journal or /dev/kmsg
    flight_recorder: FlightRecorder = FlightRecorder()
    source: str = "(defaults)"


# what a section becomes
Record = Config | Budgets | Annotation | Limits | Report | SlurmSettings | NcoreSource | FlightRecorder
SECTIONS: dict[str, type[Record]] = {
    "budgets": Budgets,
    "annotation": Annotation,
    "limits": Limits,
    "slurm": SlurmSettings,
    "flight_recorder": FlightRecorder,
}


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
    # This module's own mtime too, and its parser's: an upgrade may change defaults, fields or checks.
    code = ":".join(str(os.stat(f).st_mtime_ns) for f in (__file__, _PARSER_FILE))
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
