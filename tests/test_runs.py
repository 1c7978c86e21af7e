"""Runs and outages (issue 27, design 6): node parts are keyed per run of the job, and when no
node can be named the annotator (slurmctld down) nobody guesses; the run waits undecided in the
outbox and a later flush decides it, exactly once. The Epilog flow with its fakes; each node is
its own process (its own Spool), the spool and outbox are shared as on a cluster."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Budgets, Config
from slurm_hooks.deliver.annotate import deliver_backlog
from slurm_hooks.deliver.outbox import InvalidEntry, Outbox, OutboxEntry, Reservation, Undecided, parse_entry
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.hooks.epilog import run_epilog
from slurm_hooks.hooks.state import write_job_state
from slurm_hooks.hooks.undecided import decide_undecided
from slurm_hooks.slurm.annotation import decode
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.slurm.job import JobContext, RunId
from tests.epilog_fakes import FakeClock, FakeKernel, FakeSlurm, LocalHostnamesSlurm, RecordingLog
from tests.fakes import GB200, RecordedGpu
from tests.reliability import Row, record

EXAMPLE = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault"
HOSTS = Path(__file__).parent / "fixtures/hosts"
JOB = "4242"
T = 1764215560  # the run's start, epoch seconds (SLURM_JOB_START_TIME on 24.11)
XID = "2026-11-27T03:50:02.100000+00:00 {node} kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=1, GPU has fallen off the bus\n"
BUDGET_S = Budgets().epilog_s


class Cluster:
    """One job's nodes sharing a spool; `epilog(node, ctx)` runs that node's Epilog as its own process would."""

    def __init__(self, tmp: Path, nodes: tuple[str, ...], slurm: type[FakeSlurm] = FakeSlurm) -> None:
        tmp.mkdir(exist_ok=True)
        (tmp / "job.out").write_text("step 1\nstep 2\n")
        self.config = Config(
            host_root=str(HOSTS / "gb200-cdmm-driver"),
            state_dir=str(tmp / "state"),
            spool_dir=str(tmp / "spool"),
            log_file=str(tmp / "hooks.log"),
            budgets=Budgets(merge_wait_s=5.0),
        )
        self.node_list = f"n[1-{len(nodes)}]"
        self.record = JobRecord(
            job_id=JOB,
            state="FAILED",
            exit_code="1:0",
            start="2026-11-27T03:12:40",
            end="2026-11-27T04:00:19",
            node_list=self.node_list,
            batch_host=nodes[0],
            std_out=str(tmp / "job.out"),
            std_err=str(tmp / "job.out"),
        )
        self.slurm = slurm({JOB: self.record}, {self.node_list: list(nodes)})
        self.clock, self.log = FakeClock(), RecordingLog()
        self.outbox = Outbox(Path(self.config.spool_dir))
        self.facts = json.loads((EXAMPLE / "nodes/gb-r07-c02.json").read_text())

    def ctx(self, **fields: str) -> JobContext:
        base = JobContext(job_id=JOB, uid=os.getuid(), gid=os.getgid(), user="alice", node_list=self.node_list)
        return replace(base, exit_code="1:0", **fields)

    def deps(self, node: str, kernel: str = "") -> EpilogDeps:
        return EpilogDeps(
            slurm=self.slurm,
            spool=Spool(self.config.spool_dir),  # each node's Epilog is a process of its own
            outbox=self.outbox,
            gpu=RecordedGpu(GB200),
            kernel=FakeKernel(kernel),
            clock=self.clock,
            log=self.log,
            node=node,
        )

    def epilog(self, node: str, ctx: JobContext, kernel: str = "") -> None:
        write_job_state(self.config.state_dir, JOB, {**self.facts, "node": node}, None)
        run_epilog(ctx, self.config, self.deps(node, kernel))

    def flush(self) -> int:
        """`slurm-hooks flush` (or a later Epilog's backlog): decide what waits, then deliver."""
        deps = self.deps("n9")
        waiting = decide_undecided(self.config, deps, None, budget_s=60.0)
        deliver_backlog(deps.outbox, deps.slurm, deps.log, deps.clock, budget_s=60.0, retention_days=30)
        return waiting

    @property
    def job_dir(self) -> Path:
        return Spool(self.config.spool_dir).job_dir(JOB)

    def annotation(self) -> dict[str, str] | None:
        return decode(self.slurm.accounting.get(JOB, ("", ""))[1])

    def job_sets(self) -> int:
        return sum(1 for job, _, _ in self.slurm.sets if job == JOB)

    def outbox_items(self) -> list[OutboxEntry | Reservation | Undecided]:
        folder = Path(self.config.spool_dir) / "outbox"
        return [parse_entry(p.name, p.read_bytes()) for p in sorted(folder.glob("*.json"))]


def row(fault: str, checked: str, seconds: float, annotated: bool) -> None:
    if os.environ.get("RELIABILITY_OUT"):
        record(
            Row(fault, checked, seconds, BUDGET_S, [0], 0, 0 if annotated else 1, 0.0, where="unit", annotated="yes")
        )


def timed(flow: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    flow()
    return time.perf_counter() - t0


# Another run of the same job id left a node's part in the shared spool; (its context, this run's).
STALE = {
    "requeue, 22.05 (restart count)": ({"restart_count": "0"}, {"restart_count": "1"}),
    "a later run's part (its node's clock ahead), 24.11": (
        {"restart_count": "2", "start_time": str(T + 900)},
        {"restart_count": "1", "start_time": str(T)},
    ),
    "job id reused after the id wrap, 24.11": (
        {"restart_count": "0", "start_time": str(T - 40 * 86400)},
        {"restart_count": "0", "start_time": str(T)},
    ),
    "requeue, 25.11 (SLUID)": (
        {"sluid": "01JD5K0R9Q", "restart_count": "0"},
        {"sluid": "01JD5M7X2A", "restart_count": "1"},
    ),
}


@pytest.mark.parametrize("case", list(STALE))
def test_another_runs_part_ends_no_wait_and_is_not_merged(tmp_path: Path, case: str) -> None:
    """Before: parts_done counted every `<node>.done`, so the previous run's marker ended the lead's
    wait at once and its kernel Xid was merged: `gpu_xid node=n2` for this run, which had none."""
    stale, this = STALE[case]
    c = Cluster(tmp_path, ("n1", "n2"))
    c.epilog("n2", c.ctx(**stale), kernel=XID.format(node="n2"))  # the other run's part, complete
    seconds = timed(lambda: c.epilog("n1", c.ctx(**this)))  # this run's lead; n2's Epilog has not started
    assert 5.0 <= sum(c.clock.sleeps) < 5.5  # the whole merge_wait_s: n2's old marker is not this run's
    assert c.log.first("diagnosed")["missing_nodes"] == ["n2"]
    fields = c.annotation()
    assert fields is not None and fields["label"] != "gpu_xid" and fields.get("node") != "n2", fields
    assert fields["run"] == RunId.of(c.ctx(**this), c.record).tag
    assert not (c.job_dir / "bundle/kernel/n2.log").exists() and (c.job_dir / "stale/kernel-n2.log").exists()
    c.epilog("n2", c.ctx(**this))  # n2's own Epilog of this run, late: its part lands for `collect`
    assert (c.job_dir / "bundle/nodes/n2.json").exists() and c.job_sets() == 1
    row(f"stale node part: {case}", "lead waits for this run's part; the other run's evidence set aside", seconds, True)


def test_a_part_left_by_a_run_on_other_nodes_is_not_merged(tmp_path: Path) -> None:
    """The previous run ran on n1 and n3; this one on n1 and n2. n3's part is no node of this run."""
    c = Cluster(tmp_path, ("n1", "n2"))
    c.epilog("n3", c.ctx(restart_count="0"), kernel=XID.format(node="n3"))
    now = c.ctx(restart_count="1")
    c.epilog("n2", now)
    seconds = timed(lambda: c.epilog("n1", now))
    assert c.clock.sleeps == [] and c.log.first("diagnosed")["missing_nodes"] == []
    fields = c.annotation()
    assert fields is not None and fields["label"] != "gpu_xid" and fields.get("node") != "n3", fields
    assert sorted(p.name for p in (c.job_dir / "bundle/kernel").iterdir()) == ["n1.log", "n2.log"]
    assert (c.job_dir / "stale/nodes-n3.json").exists()
    row("stale node part: a run on other nodes", "only this run's nodes' parts merged", seconds, True)


def test_this_runs_own_evidence_is_merged_across_nodes(tmp_path: Path) -> None:
    """The guard against setting aside too much: every finished part of this run, the lead's logs too."""
    c = Cluster(tmp_path, ("n1", "n2"))
    now = c.ctx(restart_count="0", start_time=str(T))
    c.epilog("n2", now, kernel=XID.format(node="n2"))
    c.epilog("n1", now)
    fields = c.annotation()
    assert fields is not None and fields["label"] == "gpu_xid" and fields["node"] == "n2", fields
    assert len(list((c.job_dir / "bundle/logs").iterdir())) == 1 and not (c.job_dir / "stale").exists()


@pytest.mark.parametrize("slurm", [FakeSlurm, LocalHostnamesSlurm], ids=["no-hostnames", "local-hostnames"])
def test_slurmctld_down_no_node_guesses_and_a_flush_decides_once(tmp_path: Path, slurm: type[FakeSlurm]) -> None:
    """Before: without the record each node's lead was itself (or the first name of a list it could
    not confirm as the batch host): 4 nodes, 4 annotators. Now: none, one undecided entry, decided
    exactly once by a flush once slurmctld answers, from all four parts."""
    nodes = ("n1", "n2", "n3", "n4")
    c = Cluster(tmp_path, nodes, slurm)
    c.slurm.ctld_up = False  # slurmdbd answers: any annotation made would be seen
    ctx = c.ctx(restart_count="0")
    t0 = time.perf_counter()
    for node in nodes:
        c.epilog(node, ctx, kernel=XID.format(node=node) if node == "n3" else "")
    assert c.job_sets() == 0 and "diagnosed" not in c.log.events()
    assert Spool(c.config.spool_dir).parts_done(JOB, RunId.of(ctx)) == set(nodes)
    items = c.outbox_items()
    assert len(items) == 1 and isinstance(items[0], Undecided), items
    assert c.log.first("lead_undecided")["reason"].startswith("no job record")

    assert c.flush() == 1 and c.job_sets() == 0  # its nodes' merge_wait_s has not passed
    c.clock.wall += 60
    assert c.flush() == 1 and c.job_sets() == 0  # slurmctld still down: it waits
    c.slurm.ctld_up = True
    assert c.flush() == 0
    seconds = time.perf_counter() - t0
    fields = c.annotation()
    assert fields is not None and fields["label"] == "gpu_xid" and fields["node"] == "n3", fields  # every part merged
    assert c.log.events().count("diagnosed") == 1 and c.outbox_items() == []
    assert len(list((c.job_dir / "bundle/logs").iterdir())) == 1  # the job's logs, copied by the flush as its user

    c.slurm.ctld_up = False
    c.epilog("n4", ctx)  # the Epilog again on a node (Slurm before 26.05), still without slurmctld
    c.slurm.ctld_up = True
    c.flush()
    c.flush()
    assert c.job_sets() == 1 and c.log.events().count("diagnosed") == 1 and c.outbox_items() == []
    row(
        "slurmctld down, 4-node job (" + slurm.__name__ + ")",
        "no node annotates; one undecided entry, decided once",
        seconds,
        True,
    )


@pytest.mark.parametrize("lead_first", [False, True])
def test_slurmctld_answering_some_nodes_only_still_makes_one_record(tmp_path: Path, lead_first: bool) -> None:
    """22.05, slurmctld flaky: the lead got the record (its run has slurmctld's Start), n2 did not
    (its run has the restart count only). They are one run; n2 queues nothing once the run is decided."""
    c = Cluster(tmp_path, ("n1", "n2"))
    ctx = c.ctx(restart_count="0")

    def n2() -> None:
        c.slurm.ctld_up = False
        c.epilog("n2", ctx, kernel=XID.format(node="n2"))
        c.slurm.ctld_up = True

    if not lead_first:
        n2()
    c.epilog("n1", ctx)
    if lead_first:
        n2()
    c.flush()
    fields = c.annotation()
    assert fields is not None and c.job_sets() == 1 and c.log.events().count("diagnosed") == 1
    assert (fields["label"] == "gpu_xid") is not lead_first, fields  # n2's part merged when it came in time
    assert c.outbox_items() == [] and (c.clock.sleeps == [] if not lead_first else sum(c.clock.sleeps) >= 5.0)
    if lead_first:
        assert "run_already_recorded" in c.log.events()


def test_a_late_nodes_undecided_entry_over_a_decided_record_loses_nothing(tmp_path: Path) -> None:
    """A node's Epilog, later than the flush that decided the run, queues it undecided again over
    the queued record: the next flush puts the decided record back instead of deciding twice."""
    c = Cluster(tmp_path, ("n1", "n2"))
    c.slurm.ctld_up, c.slurm.dbd_up = False, False
    ctx = c.ctx(restart_count="3")
    c.epilog("n1", ctx)
    c.clock.wall += 60
    c.slurm.ctld_up = True
    c.flush()  # decided; accounting down: the record stays queued
    assert [type(i) for i in c.outbox_items()] == [OutboxEntry]
    item = Undecided(JOB, ctx.to_env(), "late node", c.clock.time())
    c.outbox.remove(c.outbox_items()[0])  # type: ignore[arg-type]
    assert c.outbox.queue_undecided(item, RunId.of(ctx))
    c.clock.wall += 60
    c.slurm.dbd_up = True
    c.flush()
    assert c.job_sets() == 1 and c.log.events().count("diagnosed") == 1 and c.outbox_items() == []


@pytest.mark.parametrize("accounting_up", [True, False])
def test_the_epilog_twice_for_one_run_makes_one_record(tmp_path: Path, accounting_up: bool) -> None:
    """Slurm before 26.05 can run the Epilog again on TERMINATE_JOB retries. Before: a second
    diagnosis and delivery, and its reservation replaced the first run's queued record."""
    c = Cluster(tmp_path, ("n1",))
    c.slurm.dbd_up = accounting_up
    ctx = c.ctx(restart_count="0", start_time=str(T))
    c.epilog("n1", ctx)
    seconds = timed(lambda: c.epilog("n1", ctx))
    assert c.log.events().count("diagnosed") == 1 and "run_already_recorded" in c.log.events()
    assert [type(i) for i in c.outbox_items()] == ([] if accounting_up else [OutboxEntry])
    c.slurm.dbd_up = True
    c.flush()
    assert c.job_sets() == 1 and c.outbox_items() == []
    row(
        f"Epilog twice for one run (accounting {'up' if accounting_up else 'down'})",
        "one diagnosis, one record",
        seconds,
        True,
    )


def test_a_requeued_run_is_recorded_again(tmp_path: Path) -> None:
    """The decision mark is per run: the next run of the job is diagnosed and recorded anew."""
    c = Cluster(tmp_path, ("n1",))
    c.epilog("n1", c.ctx(restart_count="0"))
    c.epilog("n1", c.ctx(restart_count="1"))
    assert c.log.events().count("diagnosed") == 2 and (c.annotation() or {}).get("run") == "r1-l20261127031240"


def test_run_ids_agree_on_what_both_know() -> None:
    ctx = JobContext.from_env(
        {
            "SLURM_JOB_ID": "7",
            "SLURM_JOB_RESTART_COUNT": "2",
            "SLURM_JOB_START_TIME": str(T),
            "SLURM_JOB_SLUID": "01JD5K",
        }
    )
    assert ctx is not None
    run = RunId.of(ctx, JobRecord("7", start="2026-11-27T03:12:40"))
    assert run.tag == f"s01jd5k-r2-t{T}" and RunId.parse(run.tag) == run  # the env's start wins over slurmctld's
    lead = RunId(restart="2", started="20261127031240")  # 22.05: the lead had slurmctld's record
    assert lead.same_run(RunId(restart="2"))  # a node that could not reach slurmctld
    assert not lead.same_run(RunId(restart="3")) and not lead.same_run(RunId(restart="2", started="20261227031240"))
    for bad in ("x1", "r1-r2", "r1/..", "r" + "9" * 50, "r1-"):
        assert RunId.parse(bad) is None, bad
    hostile = JobContext.from_env({"SLURM_JOB_ID": "7", "SLURM_JOB_SLUID": "../x", "SLURM_JOB_START_TIME": "²"})
    assert hostile is not None and RunId.of(hostile).tag == ""


def test_a_context_survives_the_outbox() -> None:
    ctx = JobContext(
        job_id="7", uid=1000, gid=100, user="alice", comment="a b|c", node_list="n[1-4]", exit_code="0:11",
        derived_exit_code="0:11", stdout_pattern="/h/%j.out", work_dir="/h", batch=True, restart_count="1",
        start_time=str(T), sluid="01jd5k",
    )  # fmt: skip
    assert JobContext.from_env(ctx.to_env()) == ctx
    assert JobContext.from_env(replace(ctx, derived_exit_code="1:0").to_env()) == replace(ctx, derived_exit_code="1:0")


@pytest.mark.parametrize(
    "env",
    [
        {"SLURM_JOB_ID": "13"},  # another job's environment
        {"SLURM_JOB_ID": "12", "LD_PRELOAD": "/tmp/x.so"},  # a variable slurm-hooks never keeps
        {"SLURM_JOB_ID": "12", "SLURM_JOB_COMMENT": "x" * 5000},
        {"SLURM_JOB_ID": "12", "SLURM_JOB_UID": 0},
        ["SLURM_JOB_ID", "12"],
    ],
)
def test_an_undecided_entry_is_only_what_we_write(env: object) -> None:
    doc = {"job_id": "12", "undecided": "why", "env": env, "queued_at": 1.7e9}
    with pytest.raises(InvalidEntry):
        parse_entry("12.json", json.dumps(doc).encode())


def test_a_later_jobs_epilog_decides_the_waiting_run(tmp_path: Path) -> None:
    """No `slurm-hooks flush` needed: the next Epilog on any node sharing the spool decides it."""
    c = Cluster(tmp_path, ("n1", "n2"))
    c.slurm.ctld_up = False
    ctx = c.ctx(restart_count="0")
    for node in ("n1", "n2"):
        c.epilog(node, ctx)
    c.slurm.ctld_up = True
    c.clock.wall += 60
    c.slurm.jobs["4243"] = replace(c.record, job_id="4243", node_list="n2", batch_host="n2")
    c.slurm.hosts["n2"] = ["n2"]
    write_job_state(c.config.state_dir, "4243", {**c.facts, "node": "n2"}, None)
    run_epilog(replace(ctx, job_id="4243", node_list="n2"), c.config, c.deps("n2"))
    assert c.job_sets() == 1 and (c.annotation() or {}).get("run") == "r0-l20261127031240"
    assert c.log.first("deciding")["annotated_job"] == JOB and c.outbox_items() == []
