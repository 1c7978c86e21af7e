"""Four-node jobs through the real hooks: one rank crashes on one node, the evidence meets, one party annotates.

The dev cluster runs four slurmd on this machine (deploy/dev-cluster): <host>, <host>-2, -3, -4.
Each node has its own config, state dir, host fixture and kernel log (a file: the four share one
real ring buffer). The lead, the first node, is the R570 node here, so facts taken from the wrong
node would show in the record.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slurm_hooks.slurm.annotation import MARK
from tests import devcluster as dc

pytestmark = pytest.mark.slurm
SPOOL = Path("/var/spool/slurm-hooks")
NODES: list[str] = []  # the cluster's four nodes, known once it is up
LAYOUT = {dc.FIRST: "h100-r570"}  # the others: gb200-cdmm-driver (R580, CDMM on)
FOUR_NODES = "-p multi -N4 -n16 --overcommit"  # 16 tasks on 4 nodes of 2 CPUs each
# Every rank but one waits in a "collective" until NCCL's watchdog fires; CRASH_RANK saves a
# checkpoint and segfaults, and its node's kernel logs it (here: the node's kernel-log file).
TASK = r"""#!/bin/bash
if [ "$SLURM_PROCID" = "$CRASH_RANK" ]; then
  echo "[$(date '+%F %T')] saving checkpoint at iteration 2000 to /ckpt/llama in torch format"
  [ "${KERNEL_LINE:-1}" = 0 ] || echo "$(date +%Y-%m-%dT%H:%M:%S.%6N%:z) $SLURMD_NODENAME kernel: python3[$$]: \
segfault at 0 ip 00007f3a2c1d4e10 sp 00007ffc9a0b1f20 error 4 in libc.so.6[7f3a2c000000+195000]" >> "KERNEL_LOGS/$SLURMD_NODENAME.log"
  exec python3 -c 'import ctypes; ctypes.string_at(0)'
fi
sleep "${WATCHDOG_AFTER:-3}"
echo "[rank$SLURM_PROCID]:[E$(date '+%m%d %H:%M:%S.%N') ProcessGroupNCCL.cpp:685] [Rank $SLURM_PROCID] Watchdog caught \
collective operation timeout: WorkNCCL(SeqNum=9120, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran \
for 600040 milliseconds before timing out."
exit 1
"""


@pytest.fixture(scope="module", autouse=True)
def cluster():
    dc.require_cluster(min_nodes=4)
    NODES[:] = dc.nodes()
    task = dc.JOBS / "rank-task.sh"
    dc.JOBS.mkdir(exist_ok=True)
    task.write_text(TASK.replace("KERNEL_LOGS", str(dc.KERNEL_LOGS)))
    task.chmod(0o755)
    dc.configure(hosts=LAYOUT, kernel_files=True)
    yield
    dc.configure()


def submit_crash(rank: int, args: str = "", watchdog_after: float | str = 3, kernel_line: bool = True) -> str:
    return dc.submit(
        f"export CRASH_RANK={rank} WATCHDOG_AFTER={watchdog_after} KERNEL_LINE={int(kernel_line)}\n"
        f"srun -l --kill-on-bad-exit=0 {dc.JOBS}/rank-task.sh",
        args=f"{FOUR_NODES} {args}",
    )


def hooks_that(event: str, job: str) -> list[str]:
    """Which hook logged `event` for this job, once per time it did."""
    return [json.loads(line)["hook"] for line in dc.hook_log(job) if f'"event": "{event}"' in line]


def deliverers(job: str) -> set[str]:
    """Which kinds of hook wrote this job's record to accounting. The job's own run queues its
    record before delivering it, so another job's run flushing its backlog meanwhile may be the
    one that writes it (idempotent, deliver/annotate.py): that line carries the other job's id."""
    lines = (json.loads(line) for line in dc.HOOK_LOG.read_text().splitlines() if f'"annotated_job": "{job}"' in line)
    return {line["hook"] for line in lines if line["event"] == "annotation_delivered"}


def annotated_once_by(hook: str, job: str) -> None:
    """One party merged and diagnosed the job, and only that kind of hook wrote to accounting;
    one record in the field."""
    assert hooks_that("diagnosed", job) == [hook], dc.hook_log(job)
    assert deliverers(job) == {hook}, dc.hook_log(job)
    assert dc.sacct_fields(job)[2].count(MARK) == 1


def bundle(job: str) -> Path:
    return SPOOL / "jobs" / job / "bundle"


def kernel_nodes_with_segfault(job: str) -> list[str]:
    return sorted(p.stem for p in (bundle(job) / "kernel").glob("*.log") if "segfault at 0" in p.read_text())


def test_segfault_on_one_node_is_named_with_its_rank_its_kernel_line_and_its_facts() -> None:
    job = submit_crash(rank=9)  # block distribution: ranks 8-11 on the third node
    assert dc.wait(job) in ("FAILED", "COMPLETED")
    fields = dc.wait_annotated(job)
    assert (fields["label"], fields["node"], fields["rank"]) == ("cdmm_checkpoint_segfault", NODES[2].lower(), "9")
    assert (fields["driver"], fields["cdmm"], fields["ncore"]) == ("580.95.05", "on", "3.6.2")  # its, not the lead's
    assert kernel_nodes_with_segfault(job) == [NODES[2]]
    assert sorted(p.stem for p in (bundle(job) / "nodes").glob("*.json")) == sorted(NODES)
    lead = json.loads((bundle(job) / f"nodes/{NODES[0]}.json").read_text())
    assert lead["driver_version"].startswith("570.") and lead.get("cdmm") != "on"
    annotated_once_by("epilog", job)
    out = dc.output(job)
    assert out.count("Watchdog caught collective operation timeout") == 15  # every survivor timed out, later
    assert dc.node_state() == "idle"


def test_the_r570_node_is_never_reported_as_cdmm_on() -> None:
    job = submit_crash(rank=2)  # on the first node, the R570 node
    assert dc.wait(job) in ("FAILED", "COMPLETED")
    fields = dc.wait_annotated(job)
    assert (fields["node"], fields["rank"]) == (NODES[0].lower(), "2")
    assert fields["driver"].startswith("570.") and fields.get("cdmm") != "on"
    assert fields["label"] != "cdmm_checkpoint_segfault"
    assert kernel_nodes_with_segfault(job) == [NODES[0]]


def test_a_late_node_is_skipped_by_the_lead_and_still_reaches_the_spool() -> None:
    dc.configure(hosts=LAYOUT, kernel_files=True, extra="budgets: {merge_wait_s: 2}\n")
    late = NODES[3]
    hook = Path(f"/etc/slurm/hooks/nodes/{late}/slurm-hooks-epilog")
    real = hook.with_name(hook.name + ".real")
    hook.rename(real)
    try:  # its Epilog starts 8 s late: well past merge_wait_s, well inside PrologEpilogTimeout
        hook.write_text(f"#!/bin/sh\nsleep 8\nexec {real}\n")
        hook.chmod(0o755)
        job = submit_crash(rank=9)
        fields = dc.wait_annotated(job)  # the lead does not wait for the late node
        assert (fields["node"], fields["rank"]) == (NODES[2].lower(), "9")
        diagnosis = json.loads((SPOOL / "jobs" / job / "diagnosis.json").read_text())
        notes = [note for note in diagnosis["skipped"] if "no evidence from node(s)" in note]
        assert len(notes) == 1 and notes[0].split("node(s) ")[1].startswith(f"{late} "), diagnosis["skipped"]
        assert not (bundle(job) / f"nodes/{late}.json").exists()  # it really was late
        assert dc.wait(job, timeout=60) in ("FAILED", "COMPLETED")  # COMPLETING until its Epilog ends
    finally:
        real.rename(hook)
        dc.configure(hosts=LAYOUT, kernel_files=True)
    assert list((SPOOL / "jobs" / job / "parts").glob(f"{late}@*.done"))  # its part marker, keyed by the run
    tarball = dc.JOBS / f"collect-{job}.tar.gz"
    out = subprocess.run(
        [sys.executable, "-m", "slurm_hooks", "collect", job, "-o", str(tarball)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    import tarfile

    with tarfile.open(tarball) as tar:
        assert f"{job}/nodes/{late}.json" in tar.getnames()
    tarball.unlink()
    annotated_once_by("epilog", job)
    assert dc.node_state() == "idle"


def test_epilog_slurmctld_annotates_once_as_the_only_writer() -> None:
    dc.configure(hosts=LAYOUT, kernel_files=True, extra="annotator: epilog_slurmctld\n")
    try:
        job = submit_crash(rank=9)
        assert dc.wait(job) in ("FAILED", "COMPLETED")
        fields = dc.wait_annotated(job)
    finally:
        dc.configure(hosts=LAYOUT, kernel_files=True)
    assert (fields["label"], fields["node"], fields["rank"]) == ("cdmm_checkpoint_segfault", NODES[2].lower(), "9")
    time.sleep(2)  # a second writer would have delivered by now
    annotated_once_by("epilog_slurmctld", job)


def test_eight_four_node_jobs_ending_together() -> None:
    """The jobs share the nodes, and kernel lines are node-wide: a neighbour's crash in this job's
    window would count as this job's evidence (README, "Multi-node jobs"). So here each job's crash
    is in its own log only, and that log says where its rank ran."""
    at = int(time.time()) + 12
    jobs = [
        submit_crash(rank=n, args="--mem-per-cpu=64M", watchdog_after=f"$(( {at} - $(date +%s) ))", kernel_line=False)
        for n in range(8)
    ]
    for job in jobs:
        assert dc.wait(job, timeout=180) in ("FAILED", "COMPLETED")
    for n, job in enumerate(jobs):
        fields = dc.wait_annotated(job, timeout=60)
        ran_on = re.search(rf"srun: error: (\S+): task {n}: Segmentation fault", dc.output(job))
        assert ran_on and (fields["node"], fields["rank"]) == (ran_on.group(1).lower(), str(n)), (job, fields)
        assert ran_on.group(1) != NODES[0] or fields.get("cdmm") != "on"  # the R570 node
        annotated_once_by("epilog", job)
        for path in (SPOOL / "jobs" / job).rglob("*.json"):
            json.loads(path.read_text())  # every spool file whole
    assert dc.node_state() == "idle"  # no node drained
