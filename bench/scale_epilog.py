"""The lead node's Epilog at scale: wait for 1,152 node parts, merge, diagnose, annotate (issue 17).

Two measurements, each with the real Spool, Outbox, clock and diagnosis, and Slurm faked (no
Slurm runs here): a synthetic spool that already holds every part, and a spool that 1,152 real
writer processes (one per node, as many Epilogs) fill while the lead waits. Times are the lead's
`annotate_job` (hooks/post_job.py) against the shipped budgets.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Config
from slurm_hooks.core.clock import SystemClock
from slurm_hooks.deliver.outbox import Outbox
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.hooks.post_job import PostJobRun, annotate_job
from slurm_hooks.slurm.annotation import decode
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.slurm.job import JobContext, JobView
from tests.epilog_fakes import FakeKernel, FakeSlurm, RecordingLog
from tests.fakes import GB200, RecordedGpu


def _job(bundle: Path) -> tuple[str, JobView, JobContext]:
    doc = json.loads((bundle / "job.json").read_text())
    record = JobRecord(
        job_id=doc["job_id"],
        state=doc["state"],
        exit_code=doc["exit_code"],
        start=doc["start_time"][:19],  # Slurm's naive times, in the node's zone (UTC)
        end=doc["end_time"][:19],
        node_list=f"{len(doc['nodes'])} nodes",
        batch_host=doc["batch_host"],
    )
    view = JobView(record=record, nodes=tuple(doc["nodes"]), lead=doc["batch_host"])
    return doc["job_id"], view, JobContext(job_id=doc["job_id"], node_list=record.node_list, exit_code="1:0")


def _write_part(spool_dir: str, job_id: str, node: str, facts: str, kernel: str) -> None:
    """What one node's Epilog leaves in the shared spool: its facts, its kernel lines, then `.done`."""
    spool = Spool(spool_dir)
    spool.write(job_id, f"bundle/nodes/{node}.json", facts)
    spool.write(job_id, f"bundle/kernel/{node}.log", kernel)
    spool.mark_part_done(job_id, node, time.time())


def _lead(where: Path, bundle: Path) -> tuple[Config, EpilogDeps, str, JobView, JobContext]:
    job_id, view, ctx = _job(bundle)
    config = Config(spool_dir=str(where / "spool"), state_dir=str(where / "state"), log_file="")
    spool = Spool(config.spool_dir)
    spool.bundle_dir(job_id)
    spool.write(job_id, "bundle/logs/job.out", (bundle / "logs/job.out").read_bytes())  # the batch host's part
    deps = EpilogDeps(
        slurm=FakeSlurm({job_id: view.record}),
        spool=spool,
        outbox=Outbox(where / "spool"),
        gpu=RecordedGpu(GB200),
        kernel=FakeKernel(None),
        clock=SystemClock(),
        log=RecordingLog(),
        node=view.lead,
    )
    return config, deps, job_id, view, ctx


def _parts(bundle: Path, nodes: tuple[str, ...]) -> list[tuple[str, str, str]]:
    return [(n, (bundle / f"nodes/{n}.json").read_text(), (bundle / f"kernel/{n}.log").read_text()) for n in nodes]


def _answer(deps: EpilogDeps, job_id: str, config: Config, seconds: float, **extra: Any) -> dict[str, Any]:
    assert isinstance(deps.slurm, FakeSlurm) and isinstance(deps.log, RecordingLog)
    record = decode(deps.slurm.accounting.get(job_id, ("", ""))[1]) or {}
    return {
        "lead_seconds": round(seconds, 3),
        **extra,
        "budget_s": config.budgets.epilog_s,
        "merge_wait_s": config.budgets.merge_wait_s,
        "annotated": f"label={record.get('label')} node={record.get('node')} rank={record.get('rank')}",
        "missing_nodes": len(deps.log.first("diagnosed")["missing_nodes"]),
        "met": seconds <= config.budgets.epilog_s / 2,  # room to spare: at most half the budget
    }


def synthetic_spool(where: Path, bundle: Path) -> dict[str, Any]:
    """Every part already in the spool: the lead's wait is one listing, then merge, diagnose, annotate."""
    config, deps, job_id, view, ctx = _lead(where, bundle)
    for node, facts, kernel in _parts(bundle, view.nodes):
        _write_part(config.spool_dir, job_id, node, facts, kernel)
    t0 = time.perf_counter()
    annotate_job(PostJobRun(ctx, config, deps, view, started=deps.clock.monotonic()), facts=None)
    return _answer(deps, job_id, config, time.perf_counter() - t0, parts=len(view.nodes))


def concurrent_writers(where: Path, bundle: Path) -> dict[str, Any]:
    """1,152 writer processes start with the lead; it waits for their parts, then merges and annotates."""
    config, deps, job_id, view, ctx = _lead(where, bundle)
    fork = multiprocessing.get_context("fork")
    parts = _parts(bundle, view.nodes)
    t0 = time.perf_counter()
    writers = [fork.Process(target=_write_part, args=(config.spool_dir, job_id, *p)) for p in parts]
    for w in writers:
        w.start()
    started = time.perf_counter() - t0
    annotate_job(PostJobRun(ctx, config, deps, view, started=deps.clock.monotonic()), facts=None)
    total = time.perf_counter() - t0
    for w in writers:
        w.join()
    done = deps.spool.job_dir(job_id) / "parts"
    last = max(os.stat(done / f"{n}.done").st_mtime for n in view.nodes)
    after_last = time.time() - last - (time.perf_counter() - t0 - total)  # the lead's time once every part was in
    return _answer(
        deps,
        job_id,
        config,
        total,
        writers=len(writers),
        writers_started_s=round(started, 3),
        after_last_part_s=round(after_last, 3),
    )
