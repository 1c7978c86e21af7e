"""The configuration as typed records: every section a NamedTuple with its defaults, `Config` the whole.

NamedTuples, not dataclasses: every job start imports this module, and `dataclasses` (with inspect,
ast, dis) plus the classes cost ~13 ms (bench/prolog_imports.py). Copy with `config._replace(k=v)`.
Loading (the cache, the last good copy) is the package's `__init__`; checking a file, `parse` and
`bounds`, which import these records and nothing that loads.
"""

from __future__ import annotations

from typing import NamedTuple

from slurm_hooks.core.layout import DEFAULT_SPOOL_DIR, DEFAULT_STATE_DIR

MESSAGE_MAX = 500  # characters of a config error: one log line or one stderr line, whatever the file holds


class ConfigError(ValueError):
    """A config that does not load, said in one bounded line: the file, the key, what was expected.

    Bounded here, by construction: a message may quote a value, and a value may be 64 KiB of the file.
    """

    def __init__(self, message: str) -> None:
        text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in message[:MESSAGE_MAX])  # one line
        if len(text) > MESSAGE_MAX or len(message) > MESSAGE_MAX:
            text = f"{text[:MESSAGE_MAX]}... ({len(message)} characters in all)"
        super().__init__(text)


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

    hits_per_family: int = 10_000  # keyword hits a family examines per file (a job log: 32 a node when more, to 4x)
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
