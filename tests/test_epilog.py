"""The Epilog flow (hooks/epilog.py, hooks/post_job.py) with every collaborator faked and injected:
modes, opt-out, missing nodes, the accounting retry, a foreign AdminComment, Slurm down, disk full."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from slurm_hooks.bundle.spool import Spool
from slurm_hooks.config import Annotation, Budgets, Config
from slurm_hooks.deliver.outbox import Outbox
from slurm_hooks.hooks import epilog
from slurm_hooks.hooks.deps import EpilogDeps
from slurm_hooks.hooks.epilog import run_epilog
from slurm_hooks.hooks.state import write_job_state
from slurm_hooks.slurm.annotation import MARK, decode
from slurm_hooks.slurm.client import JobRecord
from slurm_hooks.slurm.job import JobContext
from tests.epilog_fakes import FakeClock, FakeKernel, FakeSlurm, FullOutbox, FullSpool, RecordingLog
from tests.fakes import GB200, RecordedGpu

EXAMPLE = Path(__file__).parent.parent / "slurm_hooks/examples/cdmm-checkpoint-segfault"
HOSTS = Path(__file__).parent / "fixtures/hosts"
JOB = "4242"
SEGV_KERNEL = "2026-11-27T03:50:02.100000+00:00 n1 kernel: python[9]: segfault at 0 ip 0 sp 0 error 4\n"


class Rig:
    """One Epilog run's world: config, job context, fakes; `run()` runs the flow on node `node`."""

    def __init__(
        self,
        tmp: Path,
        log_text: str,
        state: str = "FAILED",
        exit_code: str = "139:0",
        nodes: tuple[str, ...] = ("n1",),
        node: str = "n1",
        **config: object,
    ) -> None:
        self.tmp = tmp
        tmp.mkdir(exist_ok=True)
        job_log = tmp / "job.out"
        job_log.write_text(log_text)
        self.config = Config(
            host_root=str(HOSTS / "gb200-cdmm-driver"),
            state_dir=str(tmp / "state"),
            spool_dir=str(tmp / "spool"),
            log_file=str(tmp / "hooks.log"),
            budgets=Budgets(merge_wait_s=5.0),
            **config,
        )  # type: ignore[arg-type]
        node_list = nodes[0] if len(nodes) == 1 else f"n[1-{len(nodes)}]"
        self.record = JobRecord(
            job_id=JOB,
            state=state,
            exit_code=exit_code,
            start="2026-11-27T03:12:40",
            end="2026-11-27T04:00:19",
            node_list=node_list,
            batch_host=nodes[0],
            std_out=str(job_log),
            std_err=str(job_log),
        )
        self.slurm = FakeSlurm({JOB: self.record}, {node_list: list(nodes)})
        self.clock, self.log, self.kernel = FakeClock(), RecordingLog(), FakeKernel(SEGV_KERNEL)
        self.ctx = JobContext(
            job_id=JOB, uid=os.getuid(), gid=os.getgid(), user="alice", node_list=node_list, exit_code=exit_code
        )
        self.node = node
        self.spool: Spool = Spool(self.config.spool_dir)
        self.outbox: Outbox = Outbox(Path(self.config.spool_dir))
        facts = json.loads((EXAMPLE / "nodes/gb-r07-c02.json").read_text())
        write_job_state(self.config.state_dir, JOB, {**facts, "node": node}, None)  # as the Prolog left it

    def deps(self) -> EpilogDeps:
        return EpilogDeps(
            slurm=self.slurm,
            spool=self.spool,
            outbox=self.outbox,
            gpu=RecordedGpu(GB200),
            kernel=self.kernel,
            clock=self.clock,
            log=self.log,
            node=self.node,
        )

    def run(self, ctx: JobContext | None = None) -> None:
        run_epilog(ctx or self.ctx, self.config, self.deps())

    def annotation(self) -> dict[str, str] | None:
        return decode(self.slurm.accounting.get(JOB, ("", ""))[1])

    def outbox_files(self) -> list[str]:
        return sorted(p.name for p in (Path(self.config.spool_dir) / "outbox").glob("*.json"))

    def diagnosis(self) -> dict[str, object]:
        return json.loads((self.spool.job_dir(JOB) / "diagnosis.json").read_text())


@pytest.fixture
def crash(tmp_path: Path) -> Rig:
    return Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text())


@pytest.fixture
def fine(tmp_path: Path) -> Rig:
    return Rig(tmp_path, "step 1\nall done\n", state="COMPLETED", exit_code="0:0")


def test_lead_collects_diagnoses_and_annotates(crash: Rig) -> None:
    crash.run()
    fields = crash.annotation()
    assert fields is not None and fields["label"] == "cdmm_checkpoint_segfault" and fields["exit"] == "139:0"
    bundle = crash.spool.job_dir(JOB) / "bundle"
    assert (bundle / "kernel/n1.log").read_text() == SEGV_KERNEL
    assert json.loads((bundle / "job.json").read_text())["nodes"] == ["n1"]
    assert len(list((bundle / "logs").iterdir())) == 1  # stdout and stderr are the same file: copied once
    assert crash.outbox_files() == []  # delivered, so nothing stays queued
    assert crash.diagnosis()["label"] == "cdmm_checkpoint_segfault"
    assert crash.log.events("error") == [] and "epilog_done" in crash.log.events()


def test_success_is_annotated_in_mode_all(fine: Rig) -> None:
    fine.run()
    assert fine.annotation() == {
        "label": "success",
        "exit": "0:0",
        "state": "completed",
        **{k: v for k, v in (fine.annotation() or {}).items() if k not in ("label", "exit", "state")},
    }


def test_mode_failures_skips_successes_only(fine: Rig, tmp_path: Path) -> None:
    fine.config = fine.config._replace(annotation=Annotation(mode="failures"))
    fine.run()
    assert fine.slurm.sets == [] and fine.outbox_files() == []  # the reservation is released
    assert fine.log.first("annotation_skipped")["mode"] == "failures"
    crash = Rig(tmp_path / "crash", (EXAMPLE / "logs/job.out").read_text(), annotation=Annotation(mode="failures"))
    crash.run()
    assert (crash.annotation() or {}).get("label") == "cdmm_checkpoint_segfault"


def test_mode_shadow_diagnoses_but_never_annotates(crash: Rig) -> None:
    crash.config = crash.config._replace(annotation=Annotation(mode="shadow"))
    crash.run()
    assert crash.slurm.sets == [] and crash.outbox_files() == []
    assert crash.diagnosis()["label"] == "cdmm_checkpoint_segfault"  # kept in the spool for the rollout


def test_comment_field_keeps_the_users_text(crash: Rig) -> None:
    crash.config = crash.config._replace(annotation=Annotation(field="comment"))
    crash.slurm.accounting[JOB] = ("my own notes", "")
    crash.run()
    comment, admin = crash.slurm.accounting[JOB]
    assert comment.startswith(f"my own notes {MARK} label=cdmm_checkpoint_segfault") and admin == ""


def test_opt_out_leaves_the_job_alone(crash: Rig) -> None:
    crash.run(replace(crash.ctx, comment="ablation run slurm-hooks=off"))
    assert crash.log.events() == ["opted_out"]
    assert not Path(crash.config.spool_dir).exists() and crash.slurm.sets == []


def test_other_nodes_write_their_part_and_leave_the_rest_to_the_lead(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "x\n", nodes=("n1", "n2"), node="n2")
    rig.run()
    bundle = rig.spool.job_dir(JOB) / "bundle"
    assert (bundle / "kernel/n2.log").exists() and (bundle / "nodes/n2.json").exists()
    assert list((bundle / "logs").iterdir()) == []  # job logs are the lead's to copy
    assert rig.spool.parts_done(JOB) == {"n2"} and rig.slurm.sets == [] and rig.outbox_files() == []
    assert not (rig.spool.job_dir(JOB) / "diagnosis.json").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="handing the part to another user needs root (CI runs as root)")
def test_with_the_controller_as_annotator_each_node_hands_its_part_to_the_spool_owner(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "x\n", nodes=("n1", "n2"), node="n1", annotator="epilog_slurmctld")
    Path(rig.config.spool_dir).mkdir()
    os.chown(rig.config.spool_dir, 64030, 64030)  # SlurmUser owns the spool
    rig.run()
    part = rig.spool.job_dir(JOB) / "bundle/nodes/n1.json"
    assert part.stat().st_uid == 64030 and rig.spool.parts_done(JOB) == {"n1"}
    assert rig.slurm.sets == [] and not (rig.spool.job_dir(JOB) / "diagnosis.json").exists()  # the controller's job


def test_missing_node_is_waited_for_then_named(tmp_path: Path) -> None:
    rig = Rig(tmp_path, (EXAMPLE / "logs/job.out").read_text(), nodes=("n1", "n2"))
    rig.run()
    waited = sum(rig.clock.sleeps)
    assert 5.0 <= waited < 5.5  # budgets.merge_wait_s, then it goes on without n2
    assert rig.log.first("diagnosed")["missing_nodes"] == ["n2"]
    assert any("n2" in s for s in rig.diagnosis()["skipped"])  # type: ignore[union-attr]
    assert rig.annotation() is not None


def test_the_nodes_come_from_the_environment_when_slurmctld_has_shrunk_the_list(tmp_path: Path) -> None:
    """Slurm 24.11 drops a COMPLETING job's nodes from its record as their Epilogs end."""
    rig = Rig(tmp_path, "x\n", nodes=("n1", "n2"))
    rig.slurm.jobs[JOB] = replace(rig.record, node_list="n1")  # n2's Epilog already ended
    rig.slurm.hosts["n1"] = ["n1"]
    rig.spool.mark_part_done(JOB, "n2", 0.0)
    rig.run()
    assert json.loads((rig.spool.job_dir(JOB) / "bundle/job.json").read_text())["nodes"] == ["n1", "n2"]


def test_a_part_that_arrives_ends_the_wait(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "x\n", nodes=("n1", "n2"))
    rig.spool.mark_part_done(JOB, "n2", 0.0)
    rig.run()
    assert rig.clock.sleeps == [] and rig.log.first("diagnosed")["missing_nodes"] == []


def test_accounting_retry_waits_for_the_jobs_record(crash: Rig) -> None:
    crash.slurm.not_yet = 3
    crash.run()
    assert crash.clock.sleeps == [1.0, 1.0, 1.0] and crash.annotation() is not None
    assert crash.outbox_files() == []


def test_accounting_retry_gives_up_and_queues(crash: Rig) -> None:
    crash.slurm.not_yet = 1000
    crash.run()
    assert 6.0 <= sum(crash.clock.sleeps) <= 8.0  # ACCOUNTING_WAIT_S (epilog_s / 4 is larger)
    assert crash.outbox_files() == [f"{JOB}.json"] and crash.slurm.sets == []


def test_foreign_admin_comment_is_left_alone(crash: Rig) -> None:
    crash.slurm.accounting[JOB] = ("", "JS1:eyJqb2JzdGF0cyI6MX0=")
    crash.run()
    assert crash.slurm.accounting[JOB][1] == "JS1:eyJqb2JzdGF0cyI6MX0=" and crash.slurm.sets == []
    assert crash.log.first("annotation_left_alone")["holder"] == "JS1:eyJq"
    assert crash.outbox_files() == [] and crash.diagnosis()["label"] == "cdmm_checkpoint_segfault"


def test_slurmctld_down_keeps_evidence_and_queues(crash: Rig) -> None:
    crash.slurm.ctld_up = crash.slurm.dbd_up = False
    crash.run()
    assert "job_record_unavailable" in crash.log.events("warning")
    assert (crash.spool.job_dir(JOB) / "bundle/kernel/n1.log").exists()
    assert crash.outbox_files() == [f"{JOB}.json"]  # delivered by a later Epilog or `slurm-hooks flush`
    entry = json.loads((Path(crash.config.spool_dir) / "outbox" / f"{JOB}.json").read_text())
    assert entry["record"].startswith(MARK) and entry["job_id"] == JOB
    assert crash.log.events("error") == []


def test_slurmdbd_down_queues_and_a_later_epilog_delivers(crash: Rig) -> None:
    crash.slurm.dbd_up = False
    crash.run()
    assert crash.outbox_files() == [f"{JOB}.json"] and crash.slurm.sets == []
    crash.slurm.dbd_up = True
    crash.slurm.jobs["4243"] = replace(crash.record, job_id="4243", batch_host="n2", node_list="n2")
    crash.run(replace(crash.ctx, job_id="4243", node_list="n2"))  # a later job's Epilog, not its lead
    assert crash.outbox_files() == [] and [job for job, _, _ in crash.slurm.sets] == [JOB]


def test_disk_full_delivers_directly(crash: Rig) -> None:
    crash.spool = FullSpool(crash.config.spool_dir)
    crash.outbox = FullOutbox(Path(crash.config.spool_dir))
    crash.run()
    assert crash.annotation() is not None  # diagnosed from what could be read, delivered without the outbox
    assert "annotation_lost" not in crash.log.events()
    assert {"outbox_reserve_failed", "evidence_not_written", "outbox_write_failed"} <= set(crash.log.events("error"))


def test_disk_full_and_accounting_down_is_an_annotation_lost(crash: Rig) -> None:
    crash.outbox = FullOutbox(Path(crash.config.spool_dir))
    crash.slurm.dbd_up = False
    crash.run()
    lost = crash.log.first("annotation_lost")
    assert lost["annotated_job"] == JOB and lost["record"].startswith(MARK)


def test_no_prolog_facts_asks_the_gpu(crash: Rig) -> None:
    (Path(crash.config.state_dir) / "jobs" / JOB / "node.json").unlink()
    crash.run()
    facts = json.loads((crash.spool.job_dir(JOB) / "bundle/nodes/n1.json").read_text())
    assert facts["driver_version"] == "580.95.05" and facts["gpu_count"] == 4


def test_diagnosis_failure_still_annotates_unknown(crash: Rig) -> None:
    def broken(bundle: Path, config: Config) -> dict[str, object]:
        raise RecursionError("maximum recursion depth exceeded")  # what a hostile bundle once did

    run_epilog(crash.ctx, crash.config, replace(crash.deps(), diagnose=broken))
    assert "diagnosis_failed" in crash.log.events("error")
    assert (crash.annotation() or {}).get("label") == "unknown"


def test_main_without_a_job_id_logs_and_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"log_file: {tmp_path / 'hooks.log'}\nstate_dir: {tmp_path / 'state'}\n")
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    assert epilog.main({"SLURM_JOB_ID": "12;rm"}) == 0
    assert '"event": "no_job_id"' in (tmp_path / "hooks.log").read_text()


def test_main_opted_out_removes_the_jobs_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"log_file: {tmp_path / 'hooks.log'}\nstate_dir: {tmp_path / 'state'}\nspool_dir: {tmp_path / 'spool'}\n"
    )
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    write_job_state(str(tmp_path / "state"), JOB, {"node": "n1"}, None)
    assert epilog.main({"SLURM_JOB_ID": JOB, "SLURM_JOB_COMMENT": "slurm-hooks=off"}) == 0
    log = (tmp_path / "hooks.log").read_text()
    assert '"opted_out"' in log and '"state_removed"' in log and not (tmp_path / "state/jobs" / JOB).exists()


def test_a_link_planted_at_the_jobs_spool_dir_is_refused_and_the_job_still_annotated(crash: Rig) -> None:
    elsewhere = crash.tmp / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (Path(crash.config.spool_dir) / "jobs").mkdir(parents=True)
    (Path(crash.config.spool_dir) / "jobs" / JOB).symlink_to(elsewhere)
    crash.run()
    assert list(elsewhere.iterdir()) == [] and elsewhere.stat().st_mode & 0o777 == 0o755  # nothing written or chmod-ed
    assert "evidence_not_written" in crash.log.events("error")
    assert (crash.annotation() or {}).get("label") == "unknown"  # processed, and says it could not diagnose


@pytest.mark.parametrize("name", ["SLURM_JOB_UID", "SLURM_JOB_GID", "SLURM_JOB_DERIVED_EC", "SLURM_JOB_ID"])
def test_environment_values_that_are_not_ascii_digits_never_crash_the_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """'²'.isdigit() is True and int('²') raises: every value is parsed inside the guard, as ASCII digits."""
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        f"log_file: {tmp_path / 'hooks.log'}\nstate_dir: {tmp_path / 'state'}\nspool_dir: {tmp_path / 'spool'}\n"
    )
    monkeypatch.setenv("SLURM_HOOKS_CONFIG", str(cfg))
    env = {"SLURM_JOB_ID": JOB, "SLURM_JOB_COMMENT": "slurm-hooks=off", name: "²"}
    assert epilog.main(env) == 0
    log = (tmp_path / "hooks.log").read_text()
    assert '"hook_failed"' not in log and ('"no_job_id"' in log if name == "SLURM_JOB_ID" else '"opted_out"' in log)
    ctx = JobContext.from_env({"SLURM_JOB_ID": "5", "SLURM_JOB_UID": "²", "SLURM_JOB_DERIVED_EC": "²"})
    assert ctx is not None and (ctx.uid, ctx.derived_exit_code) == (None, "")


@pytest.mark.parametrize(
    ("oversubscribe", "env_word", "shared"),
    [("OK", "", True), ("NO", "", False), ("", "YES", True), ("", "", None)],
)
def test_job_json_has_slurms_task_count_and_sharing_and_the_diagnosis_uses_them(
    tmp_path: Path, oversubscribe: str, env_word: str, shared: bool | None
) -> None:
    """A kernel segfault whose pid the job's log never names, on a node Slurm may give other jobs
    (OverSubscribe not NO; SLURM_JOB_OVERSUBSCRIBE when slurmctld's record lacks it), makes no
    crash; on an exclusive node, or when nothing says (today's behaviour), it is the job's."""
    rig = Rig(tmp_path, "step 1\nstep 2\n", exit_code="1:0")
    rig.slurm.jobs[JOB] = replace(rig.record, ntasks=8 if oversubscribe else 0, oversubscribe=oversubscribe)
    rig.run(replace(rig.ctx, oversubscribe=env_word))
    doc = json.loads((rig.spool.job_dir(JOB) / "bundle/job.json").read_text())
    assert doc.get("ntasks") == (8 if oversubscribe else None) and doc.get("shared") is shared
    label = rig.diagnosis()["label"]
    assert (label != "app_segfault") if shared else (label == "app_segfault"), label


class SettlingSlurm(FakeSlurm):
    """slurmctld that hears of the crashed step's end only after the Epilog first asked."""

    def __init__(self, rig: Rig, derived_later: str) -> None:
        super().__init__({JOB: rig.record}, dict(rig.slurm.hosts))
        self.derived_later, self.reads = derived_later, 0

    def job(self, job_id: str) -> JobRecord:
        self.reads += 1
        record = super().job(job_id)
        return record if self.reads == 1 else replace(record, derived_exit_code=self.derived_later)


def test_a_crash_masked_only_until_slurmctld_hears_of_its_step_is_named(fine: Rig) -> None:
    fine.slurm = SettlingSlurm(fine, derived_later="0:11")  # the kernel saw a segfault; exit 0:0 so far
    fine.run(replace(fine.ctx, derived_exit_code="0:0"))
    fields = fine.annotation()
    assert fields is not None and fields["label"] == "app_segfault" and fields["node"] == "n1"
    assert fine.log.first("derived_exit_settled")["derived_exit_code"] == "0:11"
    assert json.loads((fine.spool.job_dir(JOB) / "bundle/job.json").read_text())["derived_exit_code"] == "0:11"


def test_a_masked_crash_that_stays_masked_waits_a_bounded_time(fine: Rig) -> None:
    fine.slurm = SettlingSlurm(fine, derived_later="0:0")  # a neighbour's segfault: the job really succeeded
    fine.run(replace(fine.ctx, derived_exit_code="0:0"))
    assert fine.annotation()["label"] == "success"  # type: ignore[index]
    assert 2.5 <= sum(fine.clock.sleeps) <= 3.5 and "derived_exit_settled" not in fine.log.events()


def test_a_plain_success_does_not_wait(tmp_path: Path) -> None:
    rig = Rig(tmp_path, "all done\n", state="COMPLETED", exit_code="0:0")
    rig.kernel = FakeKernel("")
    rig.run()
    assert rig.annotation()["label"] == "success" and rig.clock.sleeps == []  # type: ignore[index]
