"""Nothing a job's logs say can make its diagnosis grow (issue 17, log-signatures §8.25, §8.20).

Each hostile case of the issue runs the way it reaches a cluster (the Epilog flow with Slurm
faked, `slurm-hooks diagnose` on a tarball, `slurm-hooks report` on saved sacct output) and
must finish inside the shipped Epilog budget, with bounded memory (tracemalloc's peak of the
Python heap), no traceback, and the annotation delivered. Under `make reliability`
($RELIABILITY_OUT set) each case is a row of docs/reliability.md.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.peak import PROBE, peak_mib
from bench.scale_bundle import make_bundle
from slurm_hooks.bundle import load_bundle
from slurm_hooks.cli import main
from slurm_hooks.config import Budgets
from slurm_hooks.diagnose import diagnose
from slurm_hooks.timeline.hits import MAX_GROWTH
from tests.epilog_fakes import FakeKernel
from tests.reliability import Row, record
from tests.test_epilog import Rig
from tests.test_slurm_accounting import line

BUDGET_S = Budgets().epilog_s  # the shipped Epilog budget
HEAP_MB = 200  # what one case may allocate at its peak
REPORT_BUDGET_S = 120  # `report` is no hook: a person waits for it (300 x 99,999 names are 30 million)


@dataclass
class Measured:
    seconds: float = 0.0
    peak_mb: float = 0.0


@contextmanager
def measured(fault: str, checked: str, delivered: Callable[[], object] | None = None) -> Iterator[Measured]:
    """Time and heap peak of the block; asserted against the budget, and recorded for docs/reliability.md."""
    m = Measured()
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        yield m
    finally:
        m.seconds = time.perf_counter() - t0
        m.peak_mb = tracemalloc.get_traced_memory()[1] / (1 << 20)
        tracemalloc.stop()
    ok = delivered is None or bool(delivered())  # None: no hook ran, nothing to annotate
    said = "-" if delivered is None else "yes" if ok else "**NO**"
    if os.environ.get("RELIABILITY_OUT"):
        record(
            Row(fault, checked, m.seconds, BUDGET_S, [0], 0, 0 if ok else 1, m.peak_mb, where="unit", annotated=said)
        )
    assert m.seconds < BUDGET_S and m.peak_mb < HEAP_MB and ok, (m, ok)


def _epilog(tmp_path: Path, log: str, node: str = "n1") -> Rig:
    rig = Rig(tmp_path, log, nodes=(node,), node=node)
    rig.kernel = FakeKernel(None)  # the job's own log is the only evidence
    return rig


WATCHDOG = (
    "0: [rank0]:[E1127 03:50:10.0 ProcessGroupNCCL.cpp:685] [Rank 0] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600040 "
    "milliseconds before timing out.\n"
)


def test_a_billion_world_size_costs_nothing(tmp_path: Path) -> None:
    rig = _epilog(tmp_path, "0: using world size: 1000000000, data-parallel size: 1\n" + WATCHDOG)
    with measured(
        "`using world size: 1000000000` + one watchdog line", "Epilog exits in budget, annotated", rig.annotation
    ):
        rig.run()
    assert (rig.annotation() or {}).get("label") == "nccl_timeout"
    assert rig.diagnosis()["details"]["world_size"] <= 512  # type: ignore[index]  # one node's MaxTasksPerNode


def test_a_rank_prefix_past_the_job_is_no_rank(tmp_path: Path) -> None:
    rig = _epilog(tmp_path, WATCHDOG.replace("[rank0]", "[rank999999999]").replace("[Rank 0]", "[Rank 9]"))
    with measured("`[rank999999999]:` prefix on a watchdog line", "Epilog exits in budget, annotated", rig.annotation):
        rig.run()
    got = rig.diagnosis()
    assert got["label"] == "nccl_timeout" and got["root_rank"] is None
    assert any("past the job's 512 possible ranks" in s for s in got["skipped"])  # type: ignore[union-attr]


def test_a_flood_of_huge_task_ranges_is_bounded(tmp_path: Path) -> None:
    rig = _epilog(tmp_path, "srun: error: n1: tasks 0-99999: Aborted (core dumped)\n" * 3000 + WATCHDOG)
    with measured(
        "3,000 lines `srun: error: n1: tasks 0-99999: Aborted`", "Epilog exits in budget, annotated", rig.annotation
    ):
        rig.run()
    assert rig.annotation() is not None


def test_a_node_outside_the_job_is_never_its_root(tmp_path: Path) -> None:
    forged = "srun: error: gb-r01-c01: task 0: Segmentation fault (core dumped)\n"
    rig = _epilog(tmp_path, forged, node="gb-r09-c01")
    with measured(
        "`srun: error: gb-r01-c01: task 0: Segmentation fault` from a job on gb-r09-c01",
        "root node is the job's own, never gb-r01-c01",
        rig.annotation,
    ):
        rig.run()
    record_ = rig.annotation() or {}
    assert record_.get("node") == "gb-r09-c01"
    assert any("'gb-r01-c01' is not a node of this job" in s for s in rig.diagnosis()["skipped"])  # type: ignore[union-attr]


def test_a_forged_node_name_in_a_multi_node_job_names_no_root(tmp_path: Path, pack) -> None:
    job = {
        "job_id": "77",
        "state": "FAILED",
        "exit_code": "1:0",
        "start_time": "2026-11-27T03:00:00+00:00",
        "end_time": "2026-11-27T04:00:00+00:00",
        "nodes": ["gb-r09-c01", "gb-r09-c02"],
    }
    root = tmp_path / "b"
    (root / "logs").mkdir(parents=True)
    (root / "job.json").write_text(json.dumps(job))
    (root / "logs/job.out").write_text("srun: error: gb-r01-c01: task 0: Segmentation fault (core dumped)\n")
    got = diagnose(load_bundle(root), pack)
    assert got.root_node is None  # the crash is said, but not where: never a node outside the job


def _tar_with_header(path: Path, kind: bytes, declared: int, body: int) -> Path:
    """A .tar.gz whose first member is an extended header of `kind` declaring `declared` bytes."""
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = kind, declared
    head = info.tobuf(format=tarfile.GNU_FORMAT if kind == tarfile.GNUTYPE_LONGNAME else tarfile.USTAR_FORMAT)
    with gzip.open(path, "wb", compresslevel=1) as gz:
        gz.write(head[:512])
        chunk = b"\0" * (1 << 20)
        for _ in range(body >> 20):
            gz.write(chunk)
    return path


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE], ids=["gnu-longname", "pax"])
def test_a_tarball_header_declaring_gigabytes_is_refused_before_it_is_read(tmp_path: Path, kind: bytes, capsys) -> None:
    tgz = _tar_with_header(tmp_path / "b.tar.gz", kind, 3 << 30, 64 << 20)
    with measured(
        f"`.tar.gz` whose first header ({'GNU long-name' if kind == b'L' else 'PAX'}) declares 3 GiB",
        "`diagnose` refuses it: no traceback, bounded",
    ):
        rc = main(["diagnose", str(tgz)])
    err = capsys.readouterr().err
    assert rc != 0 and "Traceback" not in err and "extended header declares 3221225472 bytes" in err


def test_a_pax_sparse_map_is_never_read(tmp_path: Path, pack) -> None:
    job = tarfile.TarInfo("b/job.json")
    job_body = json.dumps({"job_id": "5", "state": "FAILED"}).encode()
    sparse = tarfile.TarInfo("b/logs/x.out")
    sparse.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.realsize": "1"}
    body = b"999999999999\n" + b"1\n" * (4 << 20)  # a map that claims a trillion entries, then 8 MiB of them
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in ((job, job_body), (sparse, body)):
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    tgz = tmp_path / "s.tar.gz"
    tgz.write_bytes(buf.getvalue())
    with measured("PAX sparse 1.0 member whose map claims 10^12 entries", "member refused unread; bundle read"):
        assert main(["diagnose", str(tgz), "--json"]) == 0


# `report` forks its workers (tracemalloc would follow them and slow them tenfold): it runs in a
# child of its own (bench/peak.py), which reports its exit status and the peak RSS of itself and its workers.


def _report(tmp_path: Path, rows: list[str]) -> tuple[dict, float, float]:
    """(the report, its seconds, its peak RSS in MiB)."""
    data = tmp_path / "sacct.txt"
    data.write_text("".join(rows))
    config = tmp_path / "config.yaml"
    config.write_text(f"spool_dir: {tmp_path}/spool\nlog_file: ''\n")
    out = tmp_path / "r.json"
    argv = ["report", "--input", str(data), "--since", "2026-11-01", "--until", "2026-12-01"]
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", PROBE, *argv, "--config", str(config), "--format", "json", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=REPORT_BUDGET_S,
    )
    seconds = time.perf_counter() - t0
    assert "Traceback" not in child.stderr, child.stderr
    assert child.returncode == 0, child.stderr[-2000:]
    doc: dict = json.loads(out.read_text())
    return doc, seconds, peak_mib(child.stderr)


OK = "slurm-hooks/v1 label=app_segfault node=n00001 driver=580.95.05 cdmm=on"


def test_report_node_lists_that_name_billions(tmp_path: Path) -> None:
    huge = "n[" + ",".join(["0-99998"] * 2000) + "]"  # 16 KB
    rows = [line("1", OK, nodes=huge, n_nodes="2")]
    rows += [line(str(10 + i), OK, nodes=f"m{i}x[00000-99998]", n_nodes="99999") for i in range(300)]
    rows.append(line("9", OK, nodes="n[²]", n_nodes="1"))
    doc, seconds, peak_mb = _report(tmp_path, rows)
    fault = "sacct rows: `n[0-99998,...]` (16 KB), 300 distinct 99,999-node lists, `n[²]`"
    if os.environ.get("RELIABILITY_OUT"):
        checked = "`report` completes (peak RSS of it and its workers); cut and bad lists counted"
        record(Row(fault, checked, seconds, REPORT_BUDGET_S, [0], 0, 0, peak_mb, where="unit", annotated="-"))
    assert doc["input"]["node_list_cut"] == 1 and doc["input"]["node_list_bad"] == 1
    assert doc["input"]["rows"] == 302
    assert peak_mb < HEAP_MB + 100  # the interpreter and the workers' own ~50 MB each, and no gigabytes


def _shared_job(tmp_path: Path, log: str, shared: bool) -> Path:
    root = tmp_path / ("shared" if shared else "exclusive")
    (root / "logs").mkdir(parents=True)
    (root / "kernel").mkdir()
    job = {
        "job_id": "88",
        "state": "FAILED",
        "exit_code": "1:0",
        "start_time": "2026-11-27T03:00:00+00:00",
        "end_time": "2026-11-27T04:00:00+00:00",
        "nodes": ["gb-r03-c01"],
        "shared": shared,
    }
    (root / "job.json").write_text(json.dumps(job))
    (root / "logs/job.out").write_text(log)
    (root / "kernel/gb-r03-c01.log").write_text(
        "2026-11-27T03:30:00.000000+00:00 gb-r03-c01 kernel: python[48213]: segfault at 0 ip 0000ffff0 sp 0 error 4\n"
    )
    return root


def test_a_neighbours_segfault_on_a_shared_node_makes_no_crash(tmp_path: Path, pack) -> None:
    log = "0: step 10 loss 2.31\n0: step 11 loss 2.30\n"  # the job's own log names no fault (exit 1)
    with measured("a neighbour's `python[48213]: segfault` in a shared node's kernel log", "not this job's crash"):
        shared = diagnose(load_bundle(_shared_job(tmp_path, log, shared=True)), pack)
    exclusive = diagnose(load_bundle(_shared_job(tmp_path, log, shared=False)), pack)
    assert shared.label != "app_segfault"
    assert exclusive.label == "app_segfault"  # on an exclusive node every process is the job's


def test_on_a_shared_node_the_kernel_line_still_supports_the_jobs_own_crash(tmp_path: Path, pack) -> None:
    log = "srun: error: gb-r03-c01: task 0: Segmentation fault (core dumped)\n"
    got = diagnose(load_bundle(_shared_job(tmp_path, log, shared=True)), pack)
    assert (got.label, got.root_node) == ("app_segfault", "gb-r03-c01")


def test_a_1152_node_job_with_shipped_limits(tmp_path: Path, pack) -> None:
    """The issue's job at full size: 4,608 ranks, 2,305 files, shipped limits (bench/scale.py times it)."""
    expected = make_bundle(tmp_path / "b", 1152)
    with measured("1,152-node GB200 job (4,608 ranks, 2,305 files), shipped limits", "right label, root node and rank"):
        got = diagnose(load_bundle(tmp_path / "b"), pack)
    assert (got.label, got.root_node, got.root_rank) == (expected.label, expected.root_node, expected.root_rank)
    assert len(got.skipped) < 20


def test_without_a_node_list_the_hosts_the_lines_name_bound_the_ranks(tmp_path: Path, pack) -> None:
    root = tmp_path / "b"
    (root / "logs").mkdir(parents=True)
    (root / "job.json").write_text(json.dumps({"job_id": "9", "state": "FAILED"}))
    lines = [f"srun: error: h{i}: tasks {i * 4}-{i * 4 + 3}: Aborted (core dumped)" for i in range(300)]
    (root / "logs/job.out").write_text("\n".join(lines) + "\n" + WATCHDOG.replace("[rank0]", "[rank1000]"))
    got = diagnose(load_bundle(root), pack)
    assert not any("possible ranks ignored" in s for s in got.skipped)  # 300 hosts: rank 1000 is possible


FLOOD_RSS_MB = 1024  # a flood of every family at the grown budget holds its lines' events: under a GiB

_JOB_2000 = {
    "job_id": "2000",
    "state": "FAILED",
    "exit_code": "1:0",
    "start_time": "2026-01-05T10:00:00+00:00",
    "end_time": "2026-01-05T11:00:00+00:00",
}


def test_every_family_flooded_on_a_2000_node_job_stays_in_the_epilogs_budget(tmp_path: Path, pack) -> None:
    """A job log's family budget grows with the job (32 a node, up to 4x limits.hits_per_family): the
    worst a log can do is flood every family to it. Run as the Epilog runs it, in a process of its own."""
    per_family = MAX_GROWTH * 10_000
    nodes = [f"n{i:05d}" for i in range(2000)]
    root = tmp_path / "b"
    (root / "logs").mkdir(parents=True)
    job = {**_JOB_2000, "nodes": nodes}
    (root / "job.json").write_text(json.dumps(job))
    keywords = list({r.family: r.keywords[0] for r in pack.rules if r.applies_to("log") and r.keywords}.values())
    with open(root / "logs" / "job.out", "w") as out:
        for i in range(per_family + 500):  # 500 past the budget: those are counted only
            out.writelines(f"{i % 8000}: [2026-01-05 10:30:00] {k} {i} x\n" for k in keywords)
    config = tmp_path / "config.yaml"
    config.write_text(f"log_file: ''\nspool_dir: {tmp_path}/spool\n")
    t0 = time.perf_counter()
    child = subprocess.run(
        [sys.executable, "-c", PROBE, "diagnose", "--json", str(root), "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=BUDGET_S * 2,
    )
    seconds = time.perf_counter() - t0
    assert "Traceback" not in child.stderr, child.stderr[-2000:]
    doc, peak_mb = json.loads(child.stdout), peak_mib(child.stderr)
    fault = f"every one of {len(keywords)} log families' keywords, {per_family + 500:,} lines each, on a 2,000-node job"
    if os.environ.get("RELIABILITY_OUT"):
        checked = (
            "`diagnose` in its own process as the Epilog runs it (RSS of it and its scan workers); the rest counted"
        )
        record(Row(fault, checked, seconds, BUDGET_S, [child.returncode], 0, 0, peak_mb, where="unit", annotated="-"))
    assert child.returncode == 0 and seconds < BUDGET_S and peak_mb < FLOOD_RSS_MB, (seconds, peak_mb)
    assert any("500 more" in s and f"up to {MAX_GROWTH}x" in s for s in doc["skipped"]), doc["skipped"]
