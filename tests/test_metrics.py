"""Prometheus textfile metrics: parsed with prometheus_client's own parser, counters that survive
hook runs, atomic replacement, bounded labels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_hooks.hooks import prolog
from slurm_hooks.hooks.metrics import BUCKETS, MAX_LABELS, Metrics, render
from tests.fakes import GB200, RecordedGpu

HOSTS = Path(__file__).parent / "fixtures" / "hosts"


def samples(path: Path) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(path.read_text()):
        for s in family.samples:
            assert s.timestamp is None  # the textfile collector refuses timestamps
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


@pytest.fixture
def node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "textfile").mkdir()
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"host_root: {HOSTS / 'gb200-cdmm-driver'}\nstate_dir: {tmp_path}/state\n"
        f"log_file: {tmp_path}/hooks.log\nmetrics_file: {tmp_path}/textfile/slurm_hooks.prom\n"
        f"spool_dir: {tmp_path}/spool\nncore_sources: []\n"
    )
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    monkeypatch.setenv("SLURM_HOOKS_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_counters_survive_ten_prolog_runs(node: Path) -> None:
    for job in range(1, 11):
        assert prolog.main({"SLURM_JOB_ID": str(job)}, gpu=RecordedGpu(GB200)) == 0
        got = samples(node / "textfile/slurm_hooks.prom")
        assert got[("slurm_hooks_hook_runs_total", (("hook", "prolog"),))] == job
    assert got[("slurm_hooks_hook_errors_total", (("hook", "prolog"),))] == 0
    assert got[("slurm_hooks_hook_duration_seconds_count", (("hook", "prolog"),))] == 10
    assert got[("slurm_hooks_hook_duration_seconds_bucket", (("hook", "prolog"), ("le", "+Inf")))] == 10
    assert list(node.glob("textfile/*")) == [node / "textfile/slurm_hooks.prom"]  # no temp file left behind


def test_a_failed_run_counts_as_an_error(node: Path) -> None:
    class Broken:
        def query(self) -> None:
            raise RuntimeError("NVML exploded")

    assert prolog.main({"SLURM_JOB_ID": "5"}, gpu=Broken()) == 0
    got = samples(node / "textfile/slurm_hooks.prom")
    assert got[("slurm_hooks_hook_errors_total", (("hook", "prolog"),))] == 1


def test_histogram_buckets_are_cumulative_and_labels_bounded(tmp_path: Path) -> None:
    out = tmp_path / "m.prom"
    metrics = Metrics(str(tmp_path / "state"), str(out))
    for seconds in (0.01, 0.3, 7.0, 100.0):
        metrics.hook_run("epilog", seconds, failed=False)
    for i in range(MAX_LABELS + 5):
        metrics.diagnosis(f"label_{i}")
    metrics.diagnosis("Job 123 of alice")  # not a label: never a free-form value
    got = samples(out)
    buckets = [got[("slurm_hooks_hook_duration_seconds_bucket", (("hook", "epilog"), ("le", str(b))))] for b in BUCKETS]
    assert buckets == sorted(buckets) and buckets[0] == 1 and buckets[-1] == 3
    assert got[("slurm_hooks_hook_duration_seconds_sum", (("hook", "epilog"),))] == pytest.approx(107.31)
    labels = {dict(k[1])["label"] for k in got if k[0] == "slurm_hooks_diagnoses_total"}
    assert len(labels) == MAX_LABELS + 1 and got[("slurm_hooks_diagnoses_total", (("label", "other"),))] == 6


def test_outbox_gauges_from_the_spool(tmp_path: Path) -> None:
    outbox = tmp_path / "outbox"
    outbox.mkdir()
    for job, age in (("11", 600), ("12", 60)):
        (outbox / f"{job}.json").write_text("{}")
        os.utime(outbox / f"{job}.json", (1_000_000 - age, 1_000_000 - age))
    (outbox / ".lock").write_text("")
    Metrics(str(tmp_path / "state"), "", str(outbox)).hook_run("flush", 0.2, failed=False)
    doc = json.loads((tmp_path / "state/metrics.json").read_text())
    (tmp_path / "m.prom").write_text(render(doc, now=1_000_000))
    got = samples(tmp_path / "m.prom")
    assert got[("slurm_hooks_outbox_depth", ())] == 2
    assert got[("slurm_hooks_outbox_oldest_age_seconds", ())] == 600


def test_no_textfile_directory_means_no_file_but_counters_kept(tmp_path: Path) -> None:
    metrics = Metrics(str(tmp_path / "state"), str(tmp_path / "absent/slurm_hooks.prom"))
    assert metrics.hook_run("prolog", 0.1, failed=False)
    assert not (tmp_path / "absent").exists()
    assert metrics.load()["runs"] == {"prolog": 1}


def test_damaged_state_starts_counting_again(tmp_path: Path) -> None:
    (tmp_path / "metrics.json").write_text("{not json")
    metrics = Metrics(str(tmp_path), "")
    assert metrics.hook_run("prolog", 0.1, failed=False) and metrics.load()["runs"] == {"prolog": 1}


def test_hooks_do_not_import_prometheus_client() -> None:
    code = "import sys; import slurm_hooks.hooks.prolog, slurm_hooks.hooks.epilog; print('prometheus_client' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


class Recorded:
    """A Log that keeps its lines."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str, dict]] = []

    def info(self, event: str, **kv: object) -> None:
        self.lines.append(("info", event, kv))

    def warning(self, event: str, **kv: object) -> None:
        self.lines.append(("warning", event, kv))

    def error(self, event: str, **kv: object) -> None:
        self.lines.append(("error", event, kv))


@pytest.mark.parametrize(
    ("state", "reason"),
    [
        ({"runs": [], "errors": {}, "duration": {}, "diagnoses": {}, "outbox": {"depth": 0, "oldest": None}}, "runs"),
        (
            {
                "runs": {"prolog": "3"},
                "errors": {},
                "duration": {},
                "diagnoses": {},
                "outbox": {"depth": 0, "oldest": None},
            },
            "runs",
        ),
        (  # an upgrade that adds a bucket: the old list is one short
            {
                "runs": {},
                "errors": {},
                "diagnoses": {},
                "outbox": {"depth": 0, "oldest": None},
                "duration": {"prolog": {"buckets": [0] * (len(BUCKETS) - 1), "sum": 0.0, "count": 0}},
            },
            "bucket counts",
        ),
        (
            {"runs": {}, "errors": {}, "duration": {}, "diagnoses": {}, "outbox": {"depth": "x", "oldest": None}},
            "outbox",
        ),
        ([1, 2, 3], "top level"),
    ],
)
def test_state_of_a_wrong_shape_is_reset_with_a_warning(tmp_path: Path, state: object, reason: str) -> None:
    (tmp_path / "metrics.json").write_text(json.dumps(state))
    log = Recorded()
    metrics = Metrics(str(tmp_path), str(tmp_path / "m.prom"), log=log)
    assert metrics.hook_run("prolog", 0.1, failed=False)
    assert metrics.load()["runs"] == {"prolog": 1} and samples(tmp_path / "m.prom")
    assert [(lvl, ev) for lvl, ev, _ in log.lines] == [("warning", "metrics_state_reset")]
    assert reason in log.lines[0][2]["reason"]


def test_a_prolog_with_a_wrong_shaped_state_still_exits_0_and_counts(node: Path) -> None:
    (node / "state").mkdir()
    (node / "state/metrics.json").write_text(
        json.dumps(
            {
                **json.loads('{"runs": {}, "errors": {}, "diagnoses": {}}'),
                "duration": {"prolog": {"buckets": [1], "sum": 1, "count": 1}},
                "outbox": {"depth": 0, "oldest": None},
            }
        )
    )
    assert prolog.main({"SLURM_JOB_ID": "7"}, gpu=RecordedGpu(GB200)) == 0
    assert samples(node / "textfile/slurm_hooks.prom")[("slurm_hooks_hook_runs_total", (("hook", "prolog"),))] == 1
    assert '"metrics_state_reset"' in (node / "hooks.log").read_text()


def test_a_fifo_at_the_temp_name_is_removed_not_opened(tmp_path: Path) -> None:
    out = tmp_path / "m.prom"
    os.mkfifo(f"{out}.{os.getpid()}.tmp")  # no reader: opening it for writing would block for ever
    os.mkfifo(tmp_path / f"metrics.json.{os.getpid()}.tmp")
    assert Metrics(str(tmp_path), str(out)).hook_run("prolog", 0.1, failed=False)
    assert samples(out) and list(tmp_path.glob("*.tmp")) == []


def test_a_held_lock_costs_the_metrics_not_the_budget(tmp_path: Path) -> None:
    import time

    from slurm_hooks.hooks.metrics import LOCK_WAIT_S

    fd = os.open(tmp_path / "metrics.json.lock", os.O_WRONLY | os.O_CREAT, 0o600)
    holder = subprocess.Popen(  # another process holds it, as a wedged hook of another job would
        [
            sys.executable,
            "-c",
            f"import fcntl, os, time; fcntl.flock({fd}, fcntl.LOCK_EX); print(1, flush=True); time.sleep(60)",
        ],
        pass_fds=(fd,),
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline()
        log = Recorded()
        start = time.monotonic()
        assert not Metrics(str(tmp_path), "", log=log).hook_run("prolog", 0.1, failed=False)
        assert time.monotonic() - start < LOCK_WAIT_S + 0.5
        assert [ev for _, ev, _ in log.lines] == ["metrics_lock_busy"]
    finally:
        holder.kill()
        holder.wait()
        os.close(fd)
    assert Metrics(str(tmp_path), "").hook_run("prolog", 0.1, failed=False)
