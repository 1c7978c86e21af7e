"""Prometheus metrics for node_exporter's textfile collector (docs/operators/metrics.md).

Counters live in `<state_dir>/metrics.json` so a hook run adds to them rather than resetting them;
each run updates that file under a lock and rewrites `metrics_file` (temp file and rename in the
same directory, no timestamps, the text format written here: prometheus_client is not imported on
a hook's path). Labels are bounded: hook names and diagnosis labels, never a job id or a user.

The hooks' own state is never fatal, nor slow: a metrics.json of another shape (a damaged file, an
older layout, a bucket list of another length after an upgrade) is reset with a warning; the lock
is waited for at most LOCK_WAIT_S; the temp file is created new (O_EXCL, O_NONBLOCK, O_NOFOLLOW)
inside the directory's descriptor, its mode set with fchmod and renamed inside that descriptor,
so a FIFO or link planted at its name is removed, never opened, never chmod-ed through.

The outbox gauges are measured by the runs that read the spool anyway (Epilog, flush, doctor);
the Prolog, on every job start, only adds its own run and rewrites the file (bench/prolog_imports.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from slurm_hooks.core.safeio import read_small, write_in_dir

if TYPE_CHECKING:
    from slurm_hooks.core.hooklog import Log

HOOKS = ("prolog", "epilog", "epilog_slurmctld", "flush")
BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LOCK_WAIT_S = 1.0  # another hook holding the lock longer than this costs this run its metrics, not its budget
MAX_LABELS = 64  # distinct diagnosis labels kept; beyond that they count as "other"
MAX_STATE_BYTES = 1 << 20  # metrics.json is a few KB; past this it is damaged and reset
_LABEL = re.compile(r"[a-z][a-z0-9_]{0,47}")

_HELP = {
    "slurm_hooks_hook_runs_total": ("counter", "Hook runs on this node, by hook."),
    "slurm_hooks_hook_errors_total": ("counter", "Hook runs that failed or ran out of time (they still exit 0)."),
    "slurm_hooks_hook_duration_seconds": ("histogram", "Wall time of each hook run."),
    "slurm_hooks_diagnoses_total": ("counter", "Jobs diagnosed on this node (the annotator), by label."),
    "slurm_hooks_outbox_depth": ("gauge", "Annotations waiting in the outbox for Slurm accounting."),
    "slurm_hooks_outbox_oldest_age_seconds": ("gauge", "Age of the oldest outbox entry (0 when empty)."),
}


def _empty() -> dict[str, Any]:
    return {"runs": {}, "errors": {}, "duration": {}, "diagnoses": {}, "outbox": {"depth": 0, "oldest": None}}


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shape_problem(doc: Any) -> str:
    """'' when `doc` is a metrics.json this version can add to, else what is wrong with it."""
    if not isinstance(doc, dict) or set(doc) != set(_empty()):
        return f"top level is not {{{', '.join(sorted(_empty()))}}}"
    for part in ("runs", "errors", "diagnoses"):
        if not isinstance(doc[part], dict) or not all(_count(v) for v in doc[part].values()):
            return f"{part} is not a map of counts"
    if not isinstance(doc["duration"], dict):
        return "duration is not a map"
    for hook, hist in doc["duration"].items():
        if not isinstance(hist, dict) or set(hist) != {"buckets", "sum", "count"}:
            return f"duration of {hook} is not {{buckets, count, sum}}"
        buckets = hist["buckets"]
        if not isinstance(buckets, list) or len(buckets) != len(BUCKETS) or not all(_count(n) for n in buckets):
            return f"duration of {hook} has not {len(BUCKETS)} bucket counts"
        if not _number(hist["sum"]) or not _count(hist["count"]):
            return f"duration of {hook} has a sum or count that is not a number"
    outbox = doc["outbox"]
    if not isinstance(outbox, dict) or set(outbox) != {"depth", "oldest"} or not _count(outbox["depth"]):
        return "outbox is not {depth, oldest}"
    if outbox["oldest"] is not None and not _number(outbox["oldest"]):
        return "outbox.oldest is not a time"
    return ""


class Metrics:
    """One node's counters: `state_dir/metrics.json`, rendered to `metrics_file` ("" = not rendered).

    `outbox_dir` given: each update also measures the outbox (entries `<jobid>.json`, by mtime).
    No method raises: metrics must not cost a hook its work; they return False when not written.
    """

    def __init__(
        self, state_dir: str, metrics_file: str, outbox_dir: str | None = None, log: Log | None = None
    ) -> None:
        self.state = os.path.join(state_dir, "metrics.json")
        self.out = metrics_file
        self.outbox_dir = outbox_dir
        self.log = log  # told why a write failed, the state was reset or the lock not had in time

    def hook_run(self, hook: str, seconds: float, failed: bool) -> bool:
        name = hook if hook in HOOKS else "other"

        def add(doc: dict[str, Any]) -> None:
            doc["runs"][name] = doc["runs"].get(name, 0) + 1
            doc["errors"][name] = doc["errors"].get(name, 0) + int(failed)
            hist = doc["duration"].setdefault(name, {"buckets": [0] * len(BUCKETS), "sum": 0.0, "count": 0})
            for i, bound in enumerate(BUCKETS):
                hist["buckets"][i] += int(seconds <= bound)
            hist["sum"] += seconds
            hist["count"] += 1

        return self._update(add)

    def diagnosis(self, label: str) -> bool:
        def add(doc: dict[str, Any]) -> None:
            known = doc["diagnoses"]
            name = label if _LABEL.fullmatch(label) and (label in known or len(known) < MAX_LABELS) else "other"
            known[name] = known.get(name, 0) + 1

        return self._update(add)

    def _update(self, change: Callable[[dict[str, Any]], None]) -> bool:
        """Read-modify-write under an exclusive lock: hooks of concurrent jobs share the file."""
        import fcntl

        try:
            os.makedirs(os.path.dirname(self.state), mode=0o755, exist_ok=True)
            fd = os.open(self.state + ".lock", os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:  # e.g. an EpilogSlurmctld (SlurmUser) in a state_dir that root owns
            self._warn("metrics_write_failed", error=str(exc))
            return False
        try:
            deadline = time.monotonic() + LOCK_WAIT_S
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        self._warn("metrics_lock_busy", waited_s=LOCK_WAIT_S)
                        return False
                    time.sleep(0.01)
            doc = self.load()
            change(doc)
            if self.outbox_dir is not None:
                doc["outbox"] = outbox_gauges(self.outbox_dir)
            _replace(self.state, json.dumps(doc), 0o600)
            if self.out:
                with contextlib.suppress(FileNotFoundError, NotADirectoryError):  # no textfile directory here
                    _replace(self.out, render(doc, time.time()), 0o644)
            return True
        except OSError as exc:
            self._warn("metrics_write_failed", error=str(exc))
            return False
        finally:
            os.close(fd)

    def _warn(self, event: str, **kv: Any) -> None:
        if self.log is not None:
            self.log.warning(event, file=self.state, **kv)

    def load(self) -> dict[str, Any]:
        """The counters so far; none yet, or of a wrong shape: counting starts again (a counter reset
        to Prometheus), with a warning for the wrong shape."""
        try:  # bounded, and a FIFO or device planted here is refused, never waited on
            doc = json.loads(read_small(self.state, MAX_STATE_BYTES))
        except FileNotFoundError:
            return _empty()
        except (OSError, ValueError, RecursionError) as exc:
            self._warn("metrics_state_reset", reason=f"not readable JSON: {exc}")
            return _empty()
        if problem := shape_problem(doc):
            self._warn("metrics_state_reset", reason=problem)
            return _empty()
        return dict(doc)


def hook_recorder(
    state_dir: str, metrics_file: str, hook: str, outbox_dir: str | None = None, log: Log | None = None
) -> Callable[[float, bool], bool]:
    """What `run_guarded` calls when a hook ends: (seconds, failed) -> written."""
    return lambda seconds, failed: Metrics(state_dir, metrics_file, outbox_dir, log).hook_run(hook, seconds, failed)


def outbox_gauges(outbox_dir: str) -> dict[str, Any]:
    """Entries waiting (`<jobid>.json`) and the oldest one's mtime; no outbox yet means none."""
    depth, oldest = 0, None
    try:
        with os.scandir(outbox_dir) as it:
            for entry in it:
                if entry.name.endswith(".json") and entry.name[:-5].isascii() and entry.name[:-5].isdigit():
                    with contextlib.suppress(OSError):
                        mtime = entry.stat(follow_symlinks=False).st_mtime
                        depth += 1
                        oldest = mtime if oldest is None else min(oldest, mtime)
    except OSError:
        pass
    return {"depth": depth, "oldest": oldest}


def _replace(path: str, text: str, mode: int) -> None:
    """Temp file and rename in the same directory: a reader sees the old file or the new one. The
    temp name does not end in .prom, so the textfile collector never reads a half-written file.
    node_exporter's directory may be writable by others (its own user): the
    temp file is created new inside the directory's descriptor, its mode set on its descriptor
    and the rename made there (safeio.write_in), so a link swapped in is never followed."""
    name = os.path.basename(path)
    write_in_dir(os.path.dirname(path) or ".", name, text.encode(), mode, sync=False, tmp=f"{name}.{os.getpid()}.tmp")


def _num(value: float) -> str:
    return repr(float(value)) if isinstance(value, float) else str(value)


def render(doc: dict[str, Any], now: float) -> str:
    """The Prometheus text exposition format (0.0.4), without timestamps."""
    lines: list[str] = []

    def family(name: str, samples: list[tuple[str, str, float]]) -> None:
        kind, text = _HELP[name]
        lines.extend((f"# HELP {name} {text}", f"# TYPE {name} {kind}"))
        lines.extend(
            f"{name}{suffix}{{{labels}}} {_num(v)}" if labels else f"{name}{suffix} {_num(v)}"
            for suffix, labels, v in samples
        )

    family("slurm_hooks_hook_runs_total", [("", f'hook="{h}"', n) for h, n in sorted(doc["runs"].items())])
    family("slurm_hooks_hook_errors_total", [("", f'hook="{h}"', n) for h, n in sorted(doc["errors"].items())])
    hist: list[tuple[str, str, float]] = []
    for hook, h in sorted(doc["duration"].items()):
        hist += [("_bucket", f'hook="{hook}",le="{bound}"', n) for bound, n in zip(BUCKETS, h["buckets"], strict=True)]
        hist += [
            ("_bucket", f'hook="{hook}",le="+Inf"', h["count"]),
            ("_sum", f'hook="{hook}"', float(h["sum"])),
            ("_count", f'hook="{hook}"', h["count"]),
        ]
    family("slurm_hooks_hook_duration_seconds", hist)
    family("slurm_hooks_diagnoses_total", [("", f'label="{k}"', n) for k, n in sorted(doc["diagnoses"].items())])
    oldest = doc["outbox"]["oldest"]
    family("slurm_hooks_outbox_depth", [("", "", doc["outbox"]["depth"])])
    family("slurm_hooks_outbox_oldest_age_seconds", [("", "", max(0.0, now - oldest) if oldest else 0.0)])
    return "\n".join(lines) + "\n"
