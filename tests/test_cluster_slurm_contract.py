"""One contract, two implementations: the CLI and pyslurm give the same answers against the real
dev cluster, and either reads what the other wrote."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import asdict
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from slurm_hooks.slurm.annotation import decode
from slurm_hooks.slurm.cli_backend import SlurmCli
from slurm_hooks.slurm.client import AccountingRow, JobRecord, NotInAccountingYet, Slurm, SlurmError, nodes_shared
from tests import devcluster as dc

pytestmark = pytest.mark.slurm
HOST = os.uname().nodename.split(".")[0]
BACKENDS = ("cli", "pyslurm")
SPOOL = Path("/var/spool/slurm-hooks")


@pytest.fixture(scope="module")
def backends() -> dict[str, Slurm]:
    dc.require_cluster()
    dc.configure()
    pyslurm = dc.require_pyslurm()
    from slurm_hooks.slurm.pyslurm_backend import SlurmPyslurm

    return {"cli": SlurmCli(10.0), "pyslurm": SlurmPyslurm(pyslurm, 10.0)}


@pytest.fixture(params=BACKENDS)
def slurm(request, backends: dict[str, Slurm]) -> Slurm:
    return backends[request.param]


def fields(record: JobRecord | AccountingRow) -> dict[str, object]:
    """A record as a dict; a time Slurm has not set is '' however the tool spells it (scontrol 'Unknown',
    squeue 'NONE' for a running job without a time limit, 'N/A')."""
    out = asdict(record)
    return {k: "" if k in ("start", "end") and v in ("Unknown", "NONE", "N/A") else v for k, v in out.items()}


def in_accounting(job_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while dc.sacct_fields(job_id, "State")[0].split(" ")[0] not in dc.FINAL:
        assert time.monotonic() < deadline, f"job {job_id} not final in accounting"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def finished(backends) -> str:
    """A job that ended with exit 3 and a user comment with case and quotes."""
    job = dc.submit("exit 3", args="--comment='Alice \"Quoted\" Text'")
    assert dc.wait(job) == "FAILED"
    in_accounting(job)
    dc.wait_annotated(job)  # the Epilog is done writing to it
    return job


def test_a_running_job_reads_the_same(backends: dict[str, Slurm]) -> None:
    job = dc.submit("sleep 60", args="--comment='Keep Me'")
    try:
        dc.wait_running(job)
        cli, ps = (backends[name].job(job) for name in BACKENDS)
        assert fields(ps) == fields(cli)
        assert (ps.batch_host, ps.node_list, ps.comment) == (HOST, HOST, "Keep Me")
        assert ps.state == "RUNNING"  # slurmctld's: accounting may still say PENDING a moment
        assert ps.std_out == str(dc.JOBS / f"{job}.out") and ps.work_dir.startswith("/")
        assert ps.start[:4].isdigit() and ps.exit_code == "0:0"
    finally:
        dc.run("scancel", job)


def test_a_finished_job_reads_the_same(backends: dict[str, Slurm], finished: str) -> None:
    cli, ps = (backends[name].job(finished) for name in BACKENDS)
    assert fields(ps) == fields(cli)
    assert (ps.state, ps.exit_code) == ("FAILED", "3:0")
    comments = {name: backends[name].accounting_comments(finished) for name in BACKENDS}
    assert comments["cli"] == comments["pyslurm"]
    assert comments["cli"][0] == 'Alice "Quoted" Text' and decode(comments["cli"][1])["state"] == "failed"


@pytest.mark.parametrize("writer", BACKENDS)
@pytest.mark.parametrize("field", ["admin_comment", "comment"])
def test_what_one_writes_the_other_reads(backends: dict[str, Slurm], finished: str, writer: str, field: str) -> None:
    """Our record is lowercase by design, so both writers store it byte for byte and decode agrees."""
    record = f"slurm-hooks/v1 label=app_segfault node={HOST.lower()} rank=0 exit=139:0 by={writer}"
    backends[writer].set_job_field(finished, field, record)
    read = {name: backends[name].accounting_comments(finished) for name in BACKENDS}
    assert read["cli"] == read["pyslurm"]
    stored = read["cli"][0 if field == "comment" else 1]
    assert stored == record and decode(stored) == decode(record) and decode(stored)["label"] == "app_segfault"
    backends["pyslurm"].set_job_field(finished, "comment", 'Alice "Quoted" Text')  # as the fixture made it


def scontrol_says(job_id: str) -> dict[str, str]:
    """`scontrol show job -o`'s Key=Value words (a third reader; these test jobs' own text holds no `=`)."""
    return dict(w.split("=", 1) for w in dc.run("scontrol", "show", "job", "-o", job_id).split() if "=" in w)


def test_task_count_and_sharing_read_the_same_and_reach_job_json(backends: dict[str, Slurm], finished: str) -> None:
    """NumTasks and OverSubscribe as scontrol says them, through both backends, and what the
    Epilog (which sees the job COMPLETING) wrote into job.json for the diagnosis.

    The dev cluster's partitions are OverSubscribe=FORCE:40 (slurm.conf.in), where Slurm says YES
    even for a job that asked for --exclusive (measured on 22.05 and 24.11): its nodes may hold
    other jobs. A partition with OverSubscribe=EXCLUSIVE gives each job its nodes alone: NO.
    Slurm words it from the partition as it is when asked, so that job is read before it is undone.
    """
    flagged = dc.submit("exit 3", args="--exclusive -n 2")
    assert dc.wait(flagged) == "FAILED"
    dc.wait_annotated(flagged)
    dc.run("scontrol", "update", "PartitionName=debug", "OverSubscribe=EXCLUSIVE")
    seen = {}
    try:
        alone = dc.submit("exit 3")
        assert dc.wait(alone) == "FAILED"
        dc.wait_annotated(alone)
        for job in (finished, flagged, alone):
            said = scontrol_says(job)
            records = {name: backends[name].job(job) for name in BACKENDS}
            assert records["cli"].ntasks == records["pyslurm"].ntasks == int(said["NumTasks"]), (job, said, records)
            assert records["cli"].oversubscribe == records["pyslurm"].oversubscribe == said["OverSubscribe"], said
            doc = json.loads((SPOOL / "jobs" / job / "bundle/job.json").read_text())
            assert (doc["ntasks"], doc["shared"]) == (
                records["cli"].ntasks,
                nodes_shared(records["cli"].oversubscribe),
            ), doc
            seen[job] = (records["cli"].ntasks, records["cli"].oversubscribe, doc["shared"])
    finally:
        dc.run("scontrol", "update", "PartitionName=debug", "OverSubscribe=FORCE:40")
    assert seen == {finished: (1, "YES", True), flagged: (2, "YES", True), alone: (1, "NO", False)}


def test_pyslurm_keeps_quotes_where_sacctmgr_does_not(backends: dict[str, Slurm], finished: str) -> None:
    text = 'Mixed "Quoted" Case'
    backends["pyslurm"].set_job_field(finished, "admin_comment", text)
    assert backends["cli"].accounting_comments(finished)[1] == text
    backends["cli"].set_job_field(finished, "admin_comment", text)
    # sacctmgr turns quotes into backticks; 22.05 also lowercases the whole field, 24.11 keeps its case
    through_cli = "mixed `quoted` case" if dc.slurm_line() == "22.05" else "Mixed `Quoted` Case"
    assert backends["pyslurm"].accounting_comments(finished)[1] == through_cli


def test_an_unknown_job_is_not_in_accounting_yet(slurm: Slurm) -> None:
    with pytest.raises(NotInAccountingYet):
        slurm.accounting_comments("99999990")
    with pytest.raises(NotInAccountingYet):
        slurm.set_job_field("99999990", "admin_comment", "slurm-hooks/v1 label=x")
    with pytest.raises(SlurmError):
        slurm.job("99999990")


def test_hostnames(slurm: Slurm) -> None:
    assert slurm.hostnames(HOST) == [HOST]
    assert slurm.hostnames("gb-r03-c[07-09],cpu1") == ["gb-r03-c07", "gb-r03-c08", "gb-r03-c09", "cpu1"]


def test_accounting_between_gives_the_same_rows(backends: dict[str, Slurm], finished: str) -> None:
    since = datetime.now().astimezone() - timedelta(minutes=30)
    ok = dc.submit("echo fine")
    assert dc.wait(ok) == "COMPLETED"
    in_accounting(ok)
    # slurmdbd records a just-ended job's Eligible time a few seconds after its final state, and
    # sacct's -S/-E window selects on it: until then the job is in accounting but in no window.
    deadline = time.monotonic() + 30
    while dc.sacct_fields(ok, "Eligible")[0] in ("", "Unknown"):
        assert time.monotonic() < deadline, f"job {ok} has no Eligible time in accounting"
        time.sleep(0.3)
    until = datetime.now().astimezone() + timedelta(minutes=1)
    rows = {name: {r.job_id: r for r in backends[name].accounting_between(since, until)} for name in BACKENDS}
    assert {ok, finished} <= set(rows["cli"]) and set(rows["cli"]) == set(rows["pyslurm"])
    for job in (ok, finished):
        cli, ps = fields(rows["cli"][job]), fields(rows["pyslurm"][job])
        cli["state"] = cli["state"].split(" ")[0]  # sacct says "CANCELLED by 0"; pyslurm the state alone
        assert ps == cli
    assert (rows["pyslurm"][ok].state, rows["pyslurm"][ok].user, rows["pyslurm"][ok].n_nodes) == (
        "COMPLETED",
        "alice",
        1,
    )


def test_with_slurmdbd_down_accounting_is_unavailable_not_missing(backends: dict[str, Slurm], finished: str) -> None:
    """The outbox keeps an annotation on `unavailable` and retries soon on `not yet`: keep them apart."""
    pid = int(Path("/run/slurmdbd.pid").read_text())
    os.kill(pid, 15)
    try:
        while dc.run("sacctmgr", "-n", "show", "cluster", check=False, timeout=30):
            time.sleep(0.5)
        for name in BACKENDS:
            with pytest.raises(SlurmError) as err:
                backends[name].accounting_comments(finished)
            assert not isinstance(err.value, NotInAccountingYet), name
            assert backends[name].job(finished).exit_code == "3:0"  # slurmctld still answers
    finally:
        subprocess.run(["/usr/sbin/slurmdbd"], check=True)
    deadline = time.monotonic() + 60
    while not dc.run("sacctmgr", "-n", "show", "cluster", check=False, timeout=30):
        assert time.monotonic() < deadline
        time.sleep(0.5)
